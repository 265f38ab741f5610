//! The helper thread of [`Instances`](super::Instances): it drops the
//! stores of finished runs (first, since each holds a pool slot), makes
//! stores ahead of calls one at a time, and drops what stayed unused. It
//! runs its own single-threaded tokio runtime, so a guest's start-up that
//! waits (a WASI sleep, an HTTP request) is driven like a call's, whoever
//! the callers' runtime is. It stops when its [`Instances`](super::Instances)
//! is dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use wasmtime::Store;

use super::super::store::{self, Blank, Bound};
use super::{Blueprint, Instantiated, Made, SandboxState, Shared};
use crate::limits::Limits;

type Finished = (Store<SandboxState>, Option<OwnedSemaphorePermit>);

/// The sending half: what a caller hands the helper.
pub(super) struct Helper {
    prepare: UnboundedSender<usize>,
    drops: UnboundedSender<Finished>,
}

impl Helper {
    /// Starts the thread; `None` when it cannot be started.
    pub(super) fn start(
        shared: Weak<Shared>,
        idle: Duration,
        queued_drops: Arc<AtomicUsize>,
    ) -> Option<Self> {
        let (prepare, prepare_rx) = unbounded_channel();
        let (drops, drops_rx) = unbounded_channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| tracing::warn!("cannot start the instance helper's runtime: {err}"))
            .ok()?;
        std::thread::Builder::new()
            .name("corral-instances".into())
            .spawn(move || {
                runtime.block_on(serve(shared, prepare_rx, drops_rx, idle, queued_drops));
            })
            .map_err(|err| tracing::warn!("cannot start the instance helper thread: {err}"))
            .ok()?;
        Some(Self { prepare, drops })
    }

    /// Asks for a store for the plugin at `key`; `false` when the thread
    /// is gone.
    pub(super) fn prepare(&self, key: usize) -> bool {
        self.prepare.send(key).is_ok()
    }

    /// Hands over a finished run's store and slot; gives them back when
    /// the thread is gone.
    pub(super) fn send_drop(
        &self,
        store: Store<SandboxState>,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Result<(), Finished> {
        self.drops.send((store, permit)).map_err(|err| err.0)
    }
}

async fn serve(
    shared: Weak<Shared>,
    mut prepare: UnboundedReceiver<usize>,
    mut drops: UnboundedReceiver<Finished>,
    idle: Duration,
    queued_drops: Arc<AtomicUsize>,
) {
    let mut tick = tokio::time::interval((idle / 4).max(Duration::from_millis(250)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            finished = drops.recv() => {
                let Some((store, permit)) = finished else { break };
                // The store frees its pool slot, then the permit lets the
                // next run in.
                // Not timed: a drop here costs more than in line (another
                // core's caches), and the in-line samples decide.
                drop(store);
                drop(permit);
                queued_drops.fetch_sub(1, Ordering::Relaxed);
            }
            key = prepare.recv() => {
                let (Some(key), Some(shared)) = (key, shared.upgrade()) else { break };
                prepare_one(&shared, key).await;
                publish(&shared);
            }
            _ = tick.tick() => {
                let Some(shared) = shared.upgrade() else { break };
                shared.expire();
                publish(&shared);
            }
        }
    }
}

/// Makes one store for the plugin at `key`, if it still wants one and a
/// slot is free (never waiting for one: calls come first).
async fn prepare_one(shared: &Shared, key: usize) {
    let wanted = shared
        .lock()
        .entries
        .get(&key)
        .map(|e| (e.blueprint.clone(), e.limits, e.pace.clone()));
    let Some((blueprint, limits, pace)) = wanted else {
        return;
    };
    let Ok(permit) = shared.permits.clone().try_acquire_owned() else {
        shared.prepared(key, None, false);
        return;
    };
    // Counted as the pool's from now on, while the start-up runs.
    let permit = super::PoolPermit::new(permit, &shared.held_permits);
    let started = Instant::now();
    let made = make(shared, &blueprint, &limits).await;
    let wall = started.elapsed();
    pace.make.add(wall);
    let counts = &shared.counts;
    counts
        .micros
        .fetch_add(wall.as_micros() as u64, Ordering::Relaxed);
    match made {
        Some((store, instance)) => {
            let fuel = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
            counts.fuel.fetch_add(fuel, Ordering::Relaxed);
            counts.prepared.fetch_add(1, Ordering::Relaxed);
            let made = Made {
                store,
                instance,
                permit,
                at: Instant::now(),
                fuel,
                wall,
            };
            shared.prepared(key, Some(made), false);
        }
        None => {
            drop(permit);
            shared.prepared(key, None, true);
        }
    }
}

/// The counts as metrics: `corral_instances_ready` (gauge), and
/// `corral_instances_{prepared,taken,fresh,discarded,failed}_total`,
/// `corral_prepare_fuel_total`, `corral_prepare_microseconds_total`
/// (counters).
fn publish(shared: &Arc<Shared>) {
    let stats = super::Instances {
        shared: shared.clone(),
    }
    .stats();
    metrics::gauge!("corral_instances_ready").set(stats.ready as f64);
    metrics::counter!("corral_instances_prepared_total").absolute(stats.prepared);
    metrics::counter!("corral_instances_taken_total").absolute(stats.taken);
    metrics::counter!("corral_instances_fresh_total").absolute(stats.fresh);
    metrics::counter!("corral_instances_discarded_total").absolute(stats.discarded);
    metrics::counter!("corral_instances_failed_total").absolute(stats.failed);
    metrics::counter!("corral_prepare_fuel_total").absolute(stats.fuel);
    metrics::counter!("corral_prepare_microseconds_total").absolute(stats.micros);
}

/// Makes a store for `entry`'s plugin and runs the guest's start-up, under
/// the plugin's limits; `None` (and a WARN line) when it fails.
async fn make(
    shared: &Shared,
    blueprint: &Arc<dyn Blueprint>,
    limits: &Limits,
) -> Option<(Store<SandboxState>, Instantiated)> {
    let plugin = blueprint.plugin();
    let failed = |why: String| {
        tracing::warn!(
            plugin = &**plugin,
            "an instance made ahead of calls failed its start-up ({why}); its calls start fresh"
        );
        shared.counts.failed.fetch_add(1, Ordering::Relaxed);
        None
    };
    let blank = Blank {
        engine: &shared.engine,
        pre: blueprint.pre(),
        plugin: plugin.clone(),
        grants: blueprint.grants(),
        resolver: shared.resolver.clone(),
        tape: None,
    };
    let mut store = match store::new_store(blank, limits, Bound::idle(plugin, blueprint.grants())) {
        Ok(store) => store,
        Err(failure) => return failed(failure.to_string()),
    };
    let budget = store.data().budget.clone();
    let instantiated = {
        let work = std::pin::pin!(blueprint.pre().instantiate(&mut store));
        super::super::budget::within(&budget, work).await
    };
    match instantiated {
        None => failed(format!("it ran past its {} ms limit", limits.timeout_ms)),
        Some(Err(err)) => failed(format!("{err:#}")),
        Some(Ok(None)) => failed("not a plugin of corral's world".into()),
        Some(Ok(Some(instance))) => Some((store, instance)),
    }
}
