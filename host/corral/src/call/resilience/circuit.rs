//! One tool build's circuit (the state of the breaker layer, `breaker.rs`),
//! owned by its [`ToolState`](crate::catalog::state::ToolState), so the layer looks
//! nothing up. After `failure_threshold` consecutive failures the circuit
//! opens for `cool_down_ms`; then one probe call goes through (half-open). A
//! success closes it, a failure opens it for another cool-down.
//!
//! The state is three atomics: a closed circuit costs two loads before a
//! call and one after, with no lock. The half-open probe is a
//! [`ProbeGuard`]: dropping the call's future (an MCP cancel, a client
//! disconnect, a plan deadline) releases the probe, so the next call probes
//! instead of the tool staying rejected.
//!
//! Time comes in as an argument (`now`), so the unit tests drive the
//! cool-down with their own instants.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::config::resilience::BreakerConfig;

/// One tool build's circuit.
#[derive(Debug)]
pub(crate) struct Circuit {
    pub(super) config: BreakerConfig,
    /// The instant `open_until` counts from.
    epoch: Instant,
    /// Consecutive failed calls.
    failures: AtomicU32,
    /// Open until this many nanoseconds after `epoch`; 0 when closed.
    open_until: AtomicU64,
    /// A half-open probe is running.
    probing: AtomicBool,
}

/// Whether a call may go through.
#[derive(Debug)]
pub(crate) enum Admission<'a> {
    /// The circuit is closed.
    Closed,
    /// The circuit is half-open and this call is its one probe.
    Probe(ProbeGuard<'a>),
    /// The circuit is open: fail fast.
    Rejected {
        /// Consecutive failures so far.
        failures: u32,
        /// Milliseconds until a probe may go through (0 while one runs).
        retry_in_ms: u64,
    },
}

/// The half-open probe slot, released when dropped: a probe whose call was
/// cancelled lets the next call probe.
#[derive(Debug)]
pub(crate) struct ProbeGuard<'a> {
    circuit: &'a Circuit,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        self.circuit.probing.store(false, Ordering::Release);
    }
}

impl Circuit {
    /// A closed circuit under `config`.
    pub(crate) fn new(config: BreakerConfig) -> Self {
        Self {
            config,
            epoch: Instant::now(),
            failures: AtomicU32::new(0),
            open_until: AtomicU64::new(0),
            probing: AtomicBool::new(false),
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        // At least 1, so an open circuit never reads as closed (0).
        (at.saturating_duration_since(self.epoch).as_nanos() as u64).max(1)
    }

    /// Decides whether a call starting at `now` goes through.
    pub(crate) fn admit(&self, now: Instant) -> Admission<'_> {
        let until = self.open_until.load(Ordering::Acquire);
        if until == 0 {
            return Admission::Closed;
        }
        let now = self.nanos(now);
        if now >= until
            && self
                .probing
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return Admission::Probe(ProbeGuard { circuit: self });
        }
        Admission::Rejected {
            failures: self.failures.load(Ordering::Relaxed),
            retry_in_ms: until.saturating_sub(now) / 1_000_000,
        }
    }

    /// Records the outcome of a call admitted at `now`. Returns the change
    /// it made, for the log.
    pub(crate) fn record(&self, failed: bool, now: Instant) -> Option<Change> {
        if !failed {
            if self.failures.load(Ordering::Relaxed) == 0
                && self.open_until.load(Ordering::Relaxed) == 0
            {
                return None;
            }
            self.failures.store(0, Ordering::Relaxed);
            let was_open = self.open_until.swap(0, Ordering::AcqRel) != 0;
            return was_open.then_some(Change::Closed);
        }
        let failures = self
            .failures
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        if failures < self.config.failure_threshold {
            return None;
        }
        let until = self.nanos(now + Duration::from_millis(self.config.cool_down_ms));
        let was_open = self.open_until.swap(until, Ordering::AcqRel) != 0;
        (!was_open).then_some(Change::Opened { failures })
    }
}

/// A change of a circuit's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The threshold was reached.
    Opened {
        /// Consecutive failures.
        failures: u32,
    },
    /// A probe succeeded.
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn circuit() -> (Circuit, Instant) {
        let c = Circuit::new(BreakerConfig {
            failure_threshold: 2,
            cool_down_ms: 1_000,
        });
        let t0 = c.epoch;
        (c, t0)
    }

    fn rejected(a: &Admission<'_>) -> bool {
        matches!(a, Admission::Rejected { .. })
    }

    #[test]
    fn opens_at_the_threshold_and_stays_open_for_the_cool_down() {
        let (c, t0) = circuit();
        assert!(matches!(c.admit(t0), Admission::Closed));
        assert_eq!(c.record(true, t0), None);
        assert_eq!(c.record(true, t0), Some(Change::Opened { failures: 2 }));
        let during = c.admit(t0 + Duration::from_millis(400));
        match during {
            Admission::Rejected {
                failures,
                retry_in_ms,
            } => assert_eq!((failures, retry_in_ms), (2, 600)),
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn a_success_resets_the_count_of_consecutive_failures() {
        let (c, t0) = circuit();
        c.record(true, t0);
        c.record(false, t0);
        assert_eq!(c.record(true, t0), None, "one failure after a success");
        assert!(matches!(c.admit(t0), Admission::Closed));
    }

    #[test]
    fn half_open_admits_one_probe_and_its_outcome_decides() {
        let (c, t0) = circuit();
        c.record(true, t0);
        c.record(true, t0);
        let later = t0 + Duration::from_millis(1_001);
        let probe = c.admit(later);
        assert!(matches!(probe, Admission::Probe(_)));
        assert!(rejected(&c.admit(later)), "one probe at a time");
        // The probe fails: open for another cool-down.
        assert_eq!(c.record(true, later), None);
        drop(probe);
        assert!(rejected(&c.admit(later + Duration::from_millis(999))));
        // The next probe succeeds: closed.
        let end = later + Duration::from_millis(1_001);
        let probe = c.admit(end);
        assert!(matches!(probe, Admission::Probe(_)));
        assert_eq!(c.record(false, end), Some(Change::Closed));
        drop(probe);
        assert!(matches!(c.admit(end), Admission::Closed));
    }

    #[test]
    fn a_cancelled_probe_lets_the_next_call_probe() {
        let (c, t0) = circuit();
        c.record(true, t0);
        c.record(true, t0);
        let later = t0 + Duration::from_millis(1_500);
        // The probe's call is dropped before it records anything.
        let probe = c.admit(later);
        assert!(matches!(probe, Admission::Probe(_)));
        drop(probe);
        assert!(
            matches!(c.admit(later), Admission::Probe(_)),
            "the next call probes"
        );
    }
}
