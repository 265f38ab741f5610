//! A plugin's pace, measured as its calls run: how long its stores take to
//! drop and to make, and how long its callers leave between calls. It
//! decides where a store is dropped ([`OFF_PATH_DROP`]) and whether a
//! store made ahead can be ready in time ([`Pace::keeps_up`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A store whose drop costs at least this is dropped after the answer, on
/// the helper thread: 20 µs. Below it the caller drops it in line: waking
/// another thread and the cross-core traffic of a drop there cost the
/// caller more than the drop (BENCHMARKS.md, "Instances made ahead").
pub const OFF_PATH_DROP: Duration = Duration::from_micros(20);

/// A moving average of durations, in ns (each new figure weighs a
/// quarter); 0 until the first.
#[derive(Default)]
pub(crate) struct Average(AtomicU64);

impl Average {
    pub(crate) fn nanos(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, took: Duration) {
        let took = took.as_nanos().min(u128::from(u64::MAX / 4)) as u64;
        let old = self.nanos();
        let new = if old == 0 { took } else { (old * 3 + took) / 4 };
        self.0.store(new.max(1), Ordering::Relaxed);
    }
}

/// One plugin's pace.
#[derive(Default)]
pub(crate) struct Pace {
    /// Dropping one of its stores.
    pub(crate) drop: Average,
    /// Making one ahead (on the helper thread, start-up included).
    pub(crate) make: Average,
    /// From the end of one of its calls to the start of the next.
    pub(crate) gap: Average,
    /// When its last call ended, in ns since [`epoch`]; 0: none yet.
    last_end: AtomicU64,
}

/// The instant the `last_end` figures count from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl Pace {
    /// A call starts: the gap since the last one ended is measured.
    pub(crate) fn call_starts(&self) {
        let end = self.last_end.load(Ordering::Relaxed);
        if end > 0 {
            let now = epoch().elapsed().as_nanos() as u64;
            self.gap.add(Duration::from_nanos(now.saturating_sub(end)));
        }
    }

    /// A call ended.
    pub(crate) fn call_ends(&self) {
        let now = epoch().elapsed().as_nanos() as u64;
        self.last_end.store(now.max(1), Ordering::Relaxed);
    }

    /// Whether a store made after a call ends is ready before the next one
    /// starts: the callers' gap is at least the time to make one (or not
    /// measured yet). When calls come faster, making stores ahead only
    /// runs beside the calls (two threads faulting pages of one address
    /// space, waking each other) and makes them slower: the calls start
    /// fresh until their callers slow down.
    pub(crate) fn keeps_up(&self) -> bool {
        let (gap, make) = (self.gap.nanos(), self.make.nanos());
        gap == 0 || make == 0 || gap >= make
    }

    /// Whether its stores are dropped off the caller's path.
    pub(crate) fn drop_off_path(&self) -> bool {
        self.drop.nanos() >= OFF_PATH_DROP.as_nanos() as u64
    }
}
