//! The pool's slots, with instances made ahead of their calls and stores
//! dropped after them: the two halves of a fresh instance's cost that need
//! not be paid while a caller waits.
//!
//! - **Made ahead.** For each plugin build called recently, a few stores
//!   are made and instantiated in the background (the guest's start-up
//!   run), under the plugin's limits with no call's hooks bound
//!   (`store::Bound::idle`). A call takes one ([`Instances::slot`]) and
//!   binds its own limits and hooks to it (`store::bind`); when the call
//!   ends, the helper makes a replacement, if the plugin's callers leave
//!   time for one (`pace.rs`: at least [`MIN_GAP`] between calls, and more
//!   than a start-up takes). A store serves exactly one call, as a fresh
//!   one does.
//! - **Dropped after.** When a run that holds a [`Slot`] ends, a store
//!   whose plugin's drops take [`OFF_PATH_DROP`] or more goes with the
//!   slot's permit to the helper thread, which drops the store, then frees
//!   the slot: the caller has its answer first. A cheaper store is dropped
//!   in line, which costs the caller less than waking the helper.
//!
//! What a store made ahead cannot hold, so such calls start fresh: a
//! recorded call (its start-up is recorded), a learning run (other
//! grants), a component of another world and code mode's runner (they
//! instantiate inside their calls), and a call whose limits are below what
//! the start-up already used (fuel, memory, wall time).
//!
//! Bounds ([`PoolConfig`]): at most
//! [`prepared_per_plugin`](PoolConfig::prepared_per_plugin) stores per
//! plugin and [`prepared_total`](PoolConfig::prepared_total) in all, never
//! more than half the pool's slots; each holds a slot. Made-ahead stores
//! unused for [`prepared_idle_ms`](PoolConfig::prepared_idle_ms) are
//! dropped. A call that finds no free slot drops one made for another call
//! and takes its slot. [`Instances::retain`] drops those of plugins a
//! reload replaced.

mod helper;
mod pace;
mod slot;

use pace::{DropPlan, Pace};
pub use pace::{MIN_GAP, OFF_PATH_DROP};

pub(crate) use slot::Made;
use slot::PoolPermit;
pub use slot::Slot;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use wasmtime::Store;

use super::http::Resolver;
use super::{Instantiated, PluginPre, SandboxState};
use crate::engine::Engine;
use crate::grants::Grants;
use crate::limits::{Limits, PoolConfig};

/// Stores waiting for the helper thread to drop them, beyond which a run
/// drops its own store before it returns: 8. The helper also makes stores
/// ahead; a run never waits for it.
const MAX_QUEUED_DROPS: usize = 8;

/// What the sandbox needs to make a plugin's store ahead of its calls, in
/// the background: implemented by the plugin type that owns the linked
/// component and its grants (`corral::Plugin`).
pub trait Blueprint: Send + Sync + 'static {
    /// The linked component.
    fn pre(&self) -> &PluginPre;
    /// The grants every call of the plugin runs with.
    fn grants(&self) -> &Grants;
    /// The plugin's name, for logs.
    fn plugin(&self) -> &Arc<str>;
}

/// A call's wish for a store made ahead: of which plugin, and the limits a
/// store made for its next calls starts under (the plugin's, before any
/// per-call override).
pub struct Want {
    /// The plugin, by identity: two `Arc`s of the same plugin share their
    /// stores, a reloaded plugin (a new `Arc`) does not.
    pub blueprint: Arc<dyn Blueprint>,
    /// The plugin's limits.
    pub limits: Limits,
}

/// Counts since the pool was made ([`Instances::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreparedStats {
    /// Stores made ahead, instantiated and ready for a call.
    pub prepared: u64,
    /// Calls that took one.
    pub taken: u64,
    /// Calls through a slot that instantiated when they arrived instead.
    pub fresh: u64,
    /// Made-ahead stores dropped unused: idle, evicted for a call, their
    /// plugin reloaded, or below a call's limits.
    pub discarded: u64,
    /// Start-ups that failed in the background (that plugin's calls then
    /// start fresh).
    pub failed: u64,
    /// Made-ahead stores ready now.
    pub ready: usize,
    /// Fuel the background start-ups consumed, charged to no call.
    pub fuel: u64,
    /// Their wall time, in µs.
    pub micros: u64,
}

/// The pool's slots (one permit per instance it holds at once) and the
/// stores made ahead of calls. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Instances {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Instances {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instances")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

struct Shared {
    engine: Engine,
    resolver: Arc<dyn Resolver>,
    permits: Arc<Semaphore>,
    per_plugin: usize,
    total: usize,
    idle: Duration,
    ready: Mutex<Ready>,
    helper: OnceLock<Option<helper::Helper>>,
    /// Stores sent to the helper and not dropped yet.
    queued_drops: Arc<AtomicUsize>,
    /// Slots held by stores made ahead ([`PoolPermit`]).
    held_permits: Arc<AtomicUsize>,
    counts: Counts,
}

#[derive(Default)]
struct Counts {
    prepared: AtomicU64,
    taken: AtomicU64,
    fresh: AtomicU64,
    discarded: AtomicU64,
    failed: AtomicU64,
    fuel: AtomicU64,
    micros: AtomicU64,
}

#[derive(Default)]
struct Ready {
    /// By the address of the plugin's `Arc`, which the entry keeps alive.
    entries: HashMap<usize, Entry>,
    /// Stores ready or being made, over every entry.
    held: usize,
}

struct Entry {
    blueprint: Arc<dyn Blueprint>,
    limits: Limits,
    ready: VecDeque<Made>,
    preparing: usize,
    /// A background start-up failed: its calls start fresh from now on.
    failed: bool,
    /// When a call last wanted one.
    wanted: Instant,
    /// How long its stores take to drop and make, and its callers' gaps.
    pace: Arc<Pace>,
}

fn key(blueprint: &Arc<dyn Blueprint>) -> usize {
    Arc::as_ptr(blueprint).cast::<()>() as usize
}

impl Instances {
    /// The slots of `engine`'s pool
    /// ([`PoolConfig::max_concurrent_instances`]), with stores made ahead
    /// as its [`PoolConfig`] says; `resolver` answers the host names of a
    /// start-up's HTTP requests.
    pub fn new(engine: &Engine, resolver: Arc<dyn Resolver>) -> Self {
        let pool: &PoolConfig = engine.pool();
        let slots = pool.max_concurrent_instances as usize;
        Self {
            shared: Arc::new(Shared {
                engine: engine.clone(),
                resolver,
                permits: Arc::new(Semaphore::new(slots)),
                per_plugin: pool.prepared_per_plugin as usize,
                total: (pool.prepared_total as usize).min(slots / 2),
                idle: Duration::from_millis(pool.prepared_idle_ms),
                ready: Mutex::new(Ready::default()),
                helper: OnceLock::new(),
                queued_drops: Arc::default(),
                held_permits: Arc::default(),
                counts: Counts::default(),
            }),
        }
    }

    /// The pool's permits, for a run outside the call path (`describe` at
    /// load, a replay), which holds one around [`run`](super::run).
    pub fn permits(&self) -> &Arc<Semaphore> {
        &self.shared.permits
    }

    /// A slot for one run, with a store made ahead for `want` when one is
    /// ready. Without one, a free slot; with none free, the slot of a store
    /// made ahead for another call (dropped first); else the call waits in
    /// line. With `want`, the slot asks the helper for a replacement (or a
    /// first store) when the run ends, if the plugin's pace allows.
    ///
    /// # Errors
    /// When the pool's semaphore is closed (never, while the host lives).
    pub async fn slot(&self, want: Option<Want>) -> Result<Slot, AcquireError> {
        let shared = &self.shared;
        if let Some(want) = want.filter(|w| shared.per_plugin > 0 && w.blueprint.pre().preparable())
        {
            let key = key(&want.blueprint);
            let (made, asked, pace) = {
                let mut ready = shared.lock();
                let Ready { entries, held } = &mut *ready;
                let entry = entries.entry(key).or_insert_with(|| Entry {
                    blueprint: want.blueprint,
                    limits: want.limits,
                    ready: VecDeque::new(),
                    preparing: 0,
                    failed: false,
                    wanted: Instant::now(),
                    pace: Arc::default(),
                });
                entry.wanted = Instant::now();
                entry.pace.call_starts();
                let made = entry.ready.pop_front();
                if made.is_some() {
                    *held -= 1;
                }
                let room =
                    shared.per_plugin > entry.ready.len() + entry.preparing && *held < shared.total;
                let asked = !entry.failed && room && entry.pace.keeps_up();
                if asked {
                    entry.preparing += 1;
                    *held += 1;
                }
                (made, asked, entry.pace.clone())
            };
            let refill = asked.then_some(key);
            if let Some(made) = made {
                return Ok(Slot {
                    permit: None,
                    ready: Some(made),
                    shared: shared.clone(),
                    refill,
                    pace: Some(pace),
                });
            }
            return shared.free_slot(refill, Some(pace)).await;
        }
        shared.free_slot(None, None).await
    }

    /// Drops the stores made ahead for plugins `keep` refuses (a reload
    /// calls it with the plugins of its new catalog): no later call takes
    /// one. A start-up in flight for such a plugin is dropped when it ends.
    pub fn retain(&self, keep: impl Fn(&dyn Blueprint) -> bool) {
        let gone: Vec<Entry> = {
            let mut ready = self.shared.lock();
            let Ready { entries, held } = &mut *ready;
            let keys: Vec<usize> = entries
                .iter()
                .filter(|(_, e)| !keep(&*e.blueprint))
                .map(|(k, _)| *k)
                .collect();
            keys.iter()
                .filter_map(|k| entries.remove(k))
                .inspect(|e| *held -= e.ready.len() + e.preparing)
                .collect()
        };
        let dropped: usize = gone.iter().map(|e| e.ready.len()).sum();
        self.shared
            .counts
            .discarded
            .fetch_add(dropped as u64, Ordering::Relaxed);
        drop(gone);
    }

    /// Slots the pool holds for itself: stores made ahead (or being made)
    /// and finished runs' stores waiting to be dropped. A slot in use by a
    /// run is one of the others taken from [`permits`](Self::permits).
    pub fn held(&self) -> usize {
        self.shared.held_permits.load(Ordering::Relaxed)
            + self.shared.queued_drops.load(Ordering::Relaxed)
    }

    /// Counts since the pool was made.
    pub fn stats(&self) -> PreparedStats {
        let c = &self.shared.counts;
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        PreparedStats {
            prepared: get(&c.prepared),
            taken: get(&c.taken),
            fresh: get(&c.fresh),
            discarded: get(&c.discarded),
            failed: get(&c.failed),
            ready: self
                .shared
                .lock()
                .entries
                .values()
                .map(|e| e.ready.len())
                .sum(),
            fuel: get(&c.fuel),
            micros: get(&c.micros),
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Ready> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The helper thread, started at first use; `None` when the thread
    /// could not start (everything then happens on the caller's path).
    fn helper(self: &Arc<Self>) -> Option<&helper::Helper> {
        self.helper
            .get_or_init(|| {
                helper::Helper::start(Arc::downgrade(self), self.idle, self.queued_drops.clone())
            })
            .as_ref()
    }

    /// Asks the helper to make a store for the plugin at `key`.
    fn ask(self: &Arc<Self>, key: usize) {
        let sent = self.helper().is_some_and(|h| h.prepare(key));
        if !sent {
            self.prepared(key, None, false);
        }
    }

    /// A slot with no store made ahead: a free one; with none free, the
    /// slot of a store made ahead for another call (dropped first); else
    /// the next one freed, in line.
    async fn free_slot(
        self: &Arc<Self>,
        refill: Option<usize>,
        pace: Option<Arc<Pace>>,
    ) -> Result<Slot, AcquireError> {
        let slot = |permit| Slot {
            permit: Some(permit),
            ready: None,
            shared: self.clone(),
            refill,
            pace,
        };
        match self.permits.clone().try_acquire_owned() {
            Ok(permit) => return Ok(slot(permit)),
            // Closed: the wait below says so.
            Err(TryAcquireError::Closed) => {}
            Err(TryAcquireError::NoPermits) => {
                if let Some(made) = self.evict() {
                    let Made {
                        store,
                        instance,
                        permit,
                        ..
                    } = made;
                    drop((instance, store));
                    if let Some(permit) = permit.into_inner() {
                        return Ok(slot(permit));
                    }
                }
            }
        }
        Ok(slot(self.permits.clone().acquire_owned().await?))
    }

    /// A made-ahead store for another call, the oldest, removed.
    fn evict(&self) -> Option<Made> {
        let mut ready = self.lock();
        let (_, entry) = ready
            .entries
            .iter_mut()
            .filter(|(_, e)| !e.ready.is_empty())
            .min_by_key(|(_, e)| e.ready.front().map(|m| m.at))?;
        let made = entry.ready.pop_front();
        ready.held -= 1;
        self.counts.discarded.fetch_add(1, Ordering::Relaxed);
        made
    }

    /// Files the outcome of a start-up asked for `key`: `made`, or `None`
    /// when none was made (no free slot, no helper, or `failed`: the
    /// start-up failed, and that plugin's calls start fresh from now on).
    fn prepared(&self, key: usize, made: Option<Made>, failed: bool) {
        let mut ready = self.lock();
        let Ready { entries, held } = &mut *ready;
        // No entry, or one with nothing asked: its plugin was reloaded
        // meanwhile (`retain` counted this start-up out), and a call still
        // on the old catalog may have wanted the same plugin again since.
        let Some(entry) = entries.get_mut(&key).filter(|e| e.preparing > 0) else {
            drop(ready);
            drop(made);
            return;
        };
        entry.preparing -= 1;
        entry.failed |= failed;
        match made {
            Some(made) => entry.ready.push_back(made),
            None => *held -= 1,
        }
    }

    /// Drops what stayed unused for the idle time.
    fn expire(&self) {
        let now = Instant::now();
        let mut old = Vec::new();
        {
            let mut ready = self.lock();
            let Ready { entries, held } = &mut *ready;
            for entry in entries.values_mut() {
                while entry
                    .ready
                    .front()
                    .is_some_and(|m| now.duration_since(m.at) >= self.idle)
                {
                    old.extend(entry.ready.pop_front());
                    *held -= 1;
                }
            }
            entries.retain(|_, e| {
                !(e.ready.is_empty()
                    && e.preparing == 0
                    && now.duration_since(e.wanted) >= self.idle)
            });
        }
        self.counts
            .discarded
            .fetch_add(old.len() as u64, Ordering::Relaxed);
    }

    /// Drops `store`, then frees `permit`: on the helper thread when the
    /// plugin's measured drop time (`pace`) is at least [`OFF_PATH_DROP`]
    /// and fewer than [`MAX_QUEUED_DROPS`] wait there; else here, timed
    /// when `pace` samples this drop ([`Pace::drop_plan`]).
    fn drop_later(
        self: &Arc<Self>,
        store: Store<SandboxState>,
        permit: Option<OwnedSemaphorePermit>,
        pace: Option<&Arc<Pace>>,
    ) {
        let plan = pace.map(|pace| pace.drop_plan());
        if plan == Some(DropPlan::OffPath)
            && self.queued_drops.load(Ordering::Relaxed) < MAX_QUEUED_DROPS
            && let Some(helper) = self.helper()
        {
            self.queued_drops.fetch_add(1, Ordering::Relaxed);
            match helper.send_drop(store, permit) {
                Ok(()) => return,
                Err((store, permit)) => {
                    self.queued_drops.fetch_sub(1, Ordering::Relaxed);
                    drop(store);
                    drop(permit);
                    return;
                }
            }
        }
        let start = (plan == Some(DropPlan::InLineTimed)).then(Instant::now);
        drop(store);
        drop(permit);
        if let (Some(start), Some(pace)) = (start, pace) {
            pace.drop.add(start.elapsed());
        }
    }
}
