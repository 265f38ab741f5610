//! The clock the result cache reads for its TTL ([`Clock`]): the system's
//! by default; a manual one, which only moves when told, for tests and
//! simulations (`HostBuilder::clock`). `tokio::time::pause` cannot stand in:
//! a paused runtime jumps to its next timer whenever it waits, and a call
//! waits on its sandbox.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where the result cache's time comes from. Cheap to clone (the clones of
/// a manual clock share its time).
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<Manual>>,
}

#[derive(Debug)]
struct Manual {
    start: Instant,
    /// Nanoseconds advanced since `start`.
    advanced: AtomicU64,
}

impl Clock {
    /// The system's monotonic clock (`Instant::now`): the default.
    pub fn system() -> Self {
        Self::default()
    }

    /// A clock that stands still until [`advance`](Self::advance) moves it.
    pub fn manual() -> Self {
        Self {
            manual: Some(Arc::new(Manual {
                start: Instant::now(),
                advanced: AtomicU64::new(0),
            })),
        }
    }

    /// The time now.
    pub fn now(&self) -> Instant {
        match &self.manual {
            None => Instant::now(),
            Some(m) => m.start + Duration::from_nanos(m.advanced.load(Ordering::Acquire)),
        }
    }

    /// Moves a manual clock (and every clone of it) forward by `by`.
    ///
    /// # Panics
    /// On the system clock, which no one moves: a test that means to
    /// drive time must build its host with [`Clock::manual`].
    pub fn advance(&self, by: Duration) {
        let manual = self
            .manual
            .as_ref()
            .expect("Clock::advance on the system clock; use Clock::manual()");
        let nanos = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        manual.advanced.fetch_add(nanos, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_its_clones_with_it() {
        let clock = Clock::manual();
        let clone = clock.clone();
        let t0 = clock.now();
        assert_eq!(clone.now(), t0);
        clone.advance(Duration::from_millis(2_500));
        assert_eq!(clock.now() - t0, Duration::from_millis(2_500));
        assert!(Clock::system().now() >= t0);
    }
}
