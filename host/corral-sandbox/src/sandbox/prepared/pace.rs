//! A plugin's pace, measured as its calls run: how long its stores take to
//! drop and to make, and how long its callers leave between calls. It
//! decides where a store is dropped ([`OFF_PATH_DROP`]) and whether a
//! store made ahead can be ready in time ([`Pace::keeps_up`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A store whose drop costs at least this is dropped after the answer, on
/// the helper thread: 200 µs (a Python guest's store, about 0.3 ms).
/// Below it the caller drops it in line: waking another thread and the
/// cross-core traffic of a drop there cost the caller more than a cheaper
/// drop (BENCHMARKS.md, "Instances made ahead": at 20 µs, an MCP call of
/// `sha256` took 14 µs more and two callers made a quarter fewer calls).
pub const OFF_PATH_DROP: Duration = Duration::from_micros(200);

/// The least gap between a plugin's calls for which stores are made ahead:
/// 1 ms. Closer calls find their caches warm and instantiate quickly, and
/// the wake-up of the helper thread and its work beside the call cost them
/// more than they save (BENCHMARKS.md, "Instances made ahead": MCP stdio
/// calls back to back, about 50 µs apart, were 11 µs slower made ahead).
pub const MIN_GAP: Duration = Duration::from_millis(1);

/// One drop in this many is made in line and timed, wherever the others
/// go: the measure that decides stays the in-line one.
const SAMPLE_EVERY: u64 = 16;

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
    /// Drops so far, to sample one in [`SAMPLE_EVERY`].
    drops: AtomicU64,
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

    /// Whether a store made after a call ends is ready, and worth having,
    /// before the next one starts: the callers' gap is at least the time
    /// to make one and at least [`MIN_GAP`] (or not measured yet). When
    /// calls come faster, making stores ahead only runs beside the calls
    /// (two threads faulting pages of one address space, waking each other)
    /// and makes them slower: the calls start fresh until their callers
    /// slow down.
    pub(crate) fn keeps_up(&self) -> bool {
        let (gap, make) = (self.gap.nanos(), self.make.nanos());
        gap == 0 || gap >= make.max(MIN_GAP.as_nanos() as u64)
    }

    /// Where this drop goes, and whether it is timed: one drop in
    /// [`SAMPLE_EVERY`] (the first included) is made in line and timed;
    /// the others go off the caller's path when its stores take
    /// [`OFF_PATH_DROP`] or more to drop, measured that way, and else stay
    /// in line, untimed (two clock reads a call saved).
    pub(crate) fn drop_plan(&self) -> DropPlan {
        let sampled = self
            .drops
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SAMPLE_EVERY);
        if sampled {
            DropPlan::InLineTimed
        } else if self.drop.nanos() >= OFF_PATH_DROP.as_nanos() as u64 {
            DropPlan::OffPath
        } else {
            DropPlan::InLine
        }
    }
}

/// Where a store is dropped ([`Pace::drop_plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DropPlan {
    /// On the helper thread, after the answer.
    OffPath,
    /// In line, timed: the measure that decides.
    InLineTimed,
    /// In line, untimed.
    InLine,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_are_made_ahead_only_for_callers_slower_than_making_one() {
        let pace = Pace::default();
        assert!(pace.keeps_up(), "unmeasured: try");
        pace.make.add(Duration::from_millis(2));
        pace.gap.add(Duration::from_micros(100));
        assert!(!pace.keeps_up(), "calls 100 µs apart");
        let pace = Pace::default();
        pace.gap.add(Duration::from_millis(5));
        pace.make.add(Duration::from_millis(1));
        assert!(pace.keeps_up(), "5 ms apart, 1 ms to make");
        pace.make.add(Duration::from_millis(40));
        assert!(!pace.keeps_up(), "5 ms apart, about 10 ms to make");
    }

    #[test]
    fn only_slow_drops_leave_the_callers_path_and_one_in_sixteen_is_timed_in_line() {
        let plans = |pace: &Pace, n: u64| {
            let mut counts = [0u64; 3];
            for _ in 0..n {
                counts[match pace.drop_plan() {
                    DropPlan::OffPath => 0,
                    DropPlan::InLineTimed => 1,
                    DropPlan::InLine => 2,
                }] += 1;
            }
            counts
        };
        let pace = Pace::default();
        assert_eq!(
            pace.drop_plan(),
            DropPlan::InLineTimed,
            "the first is timed"
        );
        pace.drop.add(OFF_PATH_DROP * 2);
        assert_eq!(
            plans(&pace, SAMPLE_EVERY * 4 - 1),
            [SAMPLE_EVERY * 4 - 4, 3, 0],
            "slow: off the path but for one in {SAMPLE_EVERY}, timed in line"
        );
        let pace = Pace::default();
        pace.drop.add(OFF_PATH_DROP / 2);
        assert_eq!(
            plans(&pace, SAMPLE_EVERY * 2),
            [0, 2, SAMPLE_EVERY * 2 - 2],
            "fast: in line, one in {SAMPLE_EVERY} timed"
        );
    }
}
