//! A run's hold on the pool: a [`Slot`] (a permit, with a store made ahead
//! when one was ready), what a store made ahead is ([`Made`]) and the
//! permit the pool holds for it ([`PoolPermit`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::Store;

use super::{Instantiated, SandboxState, Shared};
use crate::limits::Limits;

/// A store made ahead, instantiated, never called. Fields drop in order:
/// the store frees its pool slot before the permit lets another run in.
pub(crate) struct Made {
    pub(super) store: Store<SandboxState>,
    pub(super) instance: Instantiated,
    pub(super) permit: PoolPermit,
    pub(super) at: Instant,
    /// Fuel and wall time its start-up used.
    pub(super) fuel: u64,
    pub(super) wall: Duration,
}

/// A slot the pool holds for a store made ahead, counted in
/// `held_permits` until a call takes it ([`PoolPermit::into_inner`]) or it
/// is dropped.
pub(crate) struct PoolPermit {
    permit: Option<OwnedSemaphorePermit>,
    count: Arc<AtomicUsize>,
}

impl PoolPermit {
    pub(super) fn new(permit: OwnedSemaphorePermit, count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self {
            permit: Some(permit),
            count: count.clone(),
        }
    }

    /// The slot, now a call's.
    pub(super) fn into_inner(mut self) -> Option<OwnedSemaphorePermit> {
        self.permit.take()
    }
}

impl Drop for PoolPermit {
    fn drop(&mut self) {
        // The slot first: a reader of `held` may count one slot too few for
        // a moment, never one too many.
        drop(self.permit.take());
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One slot of the pool, held for one run ([`RunSetup::slot`](crate::RunSetup::slot)),
/// with a store made ahead when one was ready.
pub struct Slot {
    pub(super) permit: Option<OwnedSemaphorePermit>,
    pub(super) ready: Option<Made>,
    pub(super) shared: Arc<Shared>,
    /// The plugin (its key) to make a store for once the run ends: the
    /// helper makes it after the answer, not beside the call, where both
    /// would fault pages of the same address space at once.
    pub(super) refill: Option<usize>,
    /// The plugin's measured drop time, which decides where the store is
    /// dropped ([`Shared::drop_later`]); `None` outside the call path.
    pub(super) pace: Option<Arc<super::Pace>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        // A run that ended (or was cancelled) without `finish` still frees
        // a store made ahead before its slot, and asks for its refill.
        drop(self.ready.take());
        drop(self.permit.take());
        if let Some(pace) = &self.pace {
            pace.call_ends();
        }
        if let Some(key) = self.refill.take() {
            self.shared.ask(key);
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("prepared", &self.ready.is_some())
            .finish_non_exhaustive()
    }
}

impl Slot {
    /// The store made ahead, when this run may take it: `eligible` (a
    /// plain call) and within `limits`, i.e. its start-up used no more
    /// fuel, memory or wall time than the call may. A made-ahead store the
    /// run cannot take is dropped here, before the run makes its own, so
    /// the pool never holds more instances than slots.
    pub(crate) fn take(
        &mut self,
        limits: &Limits,
        eligible: bool,
    ) -> Option<(Store<SandboxState>, Instantiated)> {
        let counts = &self.shared.counts;
        let Some(made) = self.ready.take() else {
            if eligible {
                counts.fresh.fetch_add(1, Ordering::Relaxed);
            }
            return None;
        };
        let within = made.fuel <= limits.fuel
            && made.store.data().limiter.memory_peak <= limits.memory_bytes as u64
            && made.wall <= limits.timeout();
        let Made {
            store,
            instance,
            permit,
            ..
        } = made;
        self.permit = permit.into_inner();
        if eligible && within {
            counts.taken.fetch_add(1, Ordering::Relaxed);
            return Some((store, instance));
        }
        drop((instance, store));
        counts.discarded.fetch_add(1, Ordering::Relaxed);
        if eligible {
            counts.fresh.fetch_add(1, Ordering::Relaxed);
        }
        None
    }

    /// Ends the run: `store` is dropped after the answer (on the helper
    /// thread), then the slot is freed.
    pub(crate) fn finish(mut self, store: Store<SandboxState>) {
        drop(self.ready.take());
        self.shared
            .drop_later(store, self.permit.take(), self.pace.as_ref());
        // `Drop` asks for the refill, after the store went to the helper.
    }
}
