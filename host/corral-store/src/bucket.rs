//! The token bucket behind [`SharedStore::spend`](crate::SharedStore::spend):
//! its shape ([`Bucket`]), what is spent ([`Spend`]) and what is left
//! ([`Level`]), and the one rule ([`Bucket::spend`]) that the in-memory
//! store runs in Rust and the Redis store runs as a Lua script
//! (`redis.rs`, the same arithmetic line by line).
//!
//! The bucket is kept as one number, its *full time*: the store-clock time
//! (milliseconds, a float) at which it will be full again (the generic cell
//! rate algorithm's "theoretical arrival time"). Spending `n` units moves
//! the full time `n × ms_per_unit` later; waiting moves "now" towards it.
//! What is in use is `(full time − now) / ms_per_unit`, and the bucket
//! admits while that stays within its capacity. A charge (a cost known
//! only after a call: fuel, time, bytes) always lands, so the bucket can go
//! into debt; it then refuses until time has paid the debt back.

use std::time::Duration;

/// The shape of a token bucket: it refills `units` per `window`, and holds
/// at most `burst` units (what a tenant may spend at once after being idle).
/// A missing record is a full bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// Milliseconds it takes one unit to come back (`window / units`).
    pub ms_per_unit: f64,
    /// How many units the bucket holds when full (the burst).
    pub capacity: f64,
}

/// What one [`SharedStore::spend`](crate::SharedStore::spend) does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spend {
    /// Takes nothing: is anything left (admitted), or is the bucket empty or
    /// in debt? The check before a call for a quota charged after it.
    Check,
    /// Takes these units if they all fit (admitted), else nothing. The
    /// check of a quota of calls.
    Take(f64),
    /// Takes these units whatever is left, going into debt if need be;
    /// always admitted. What a call is charged once its cost is known.
    Charge(f64),
}

/// What a bucket holds after a [`Spend`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    /// Whether the spend was admitted (see [`Spend`]).
    pub admitted: bool,
    /// Units left after the spend (negative: the debt).
    pub left: f64,
    /// When not admitted: how long until the same spend would be (at least
    /// 1 ms); zero when admitted.
    pub wait: Duration,
}

/// A float of milliseconds as a duration (negative and NaN as zero).
fn millis(ms: f64) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::from_secs_f64(ms / 1_000.0)
    } else {
        Duration::ZERO
    }
}

impl Bucket {
    /// A bucket that refills `units` per `window` and holds `burst`. Units
    /// and burst below a millionth count as a millionth; a zero window as
    /// one millisecond.
    pub fn per(units: f64, window: Duration, burst: f64) -> Self {
        let window_ms = (window.as_secs_f64() * 1_000.0).max(1.0);
        Self {
            ms_per_unit: window_ms / units.max(1e-6),
            capacity: burst.max(1e-6),
        }
    }

    /// The rule: from the full time `full` (`None`: no record, a full
    /// bucket) at store time `now` (both in milliseconds), the new full time
    /// to store and the level. The caller stores the new full time for
    /// `new − now` milliseconds (it is full, and forgotten, after that).
    pub fn spend(&self, full: Option<f64>, now: f64, spend: Spend) -> (f64, Level) {
        // Both bounds are inclusive with a tolerance of a billionth of a
        // unit, so floating-point dust never refuses an exact fit.
        const DUST: f64 = 1e-9;
        let base = full.map_or(now, |f| f.max(now));
        let used = (base - now) / self.ms_per_unit;
        let (admitted, cost, over) = match spend {
            Spend::Check => (used < self.capacity - DUST, 0.0, used - self.capacity),
            Spend::Take(n) => {
                let fits = used + n <= self.capacity + DUST;
                (fits, if fits { n } else { 0.0 }, used + n - self.capacity)
            }
            Spend::Charge(n) => (true, n, 0.0),
        };
        let new = base + cost * self.ms_per_unit;
        let wait = if admitted {
            Duration::ZERO
        } else {
            millis(over * self.ms_per_unit).max(Duration::from_millis(1))
        };
        let left = self.capacity - (new - now) / self.ms_per_unit;
        (
            new,
            Level {
                admitted,
                left,
                wait,
            },
        )
    }

    /// How long a record with full time `full` must live at `now`: until
    /// it is full (at least 1 ms).
    pub(crate) fn ttl(full: f64, now: f64) -> Duration {
        millis(full - now).max(Duration::from_millis(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_takes_checks_and_charges() {
        let b = Bucket::per(2.0, Duration::from_secs(2), 2.0); // 1 000 ms a unit
        let (f, l) = b.spend(None, 10_000.0, Spend::Take(1.0));
        assert!(l.admitted && (l.left - 1.0).abs() < 1e-9 && f == 11_000.0);
        let (f, l) = b.spend(Some(f), 10_000.0, Spend::Take(1.0));
        assert!(l.admitted && l.left.abs() < 1e-9 && f == 12_000.0);
        let (g, l) = b.spend(Some(f), 10_000.0, Spend::Take(1.0));
        assert!(!l.admitted && g == f && l.wait == Duration::from_secs(1));
        let (_, l) = b.spend(Some(f), 10_000.0, Spend::Check);
        assert!(!l.admitted && l.wait == Duration::from_millis(1));
        // Half a second later half a unit is back: a check admits, a take
        // of one does not.
        let (_, l) = b.spend(Some(f), 10_500.0, Spend::Check);
        assert!(l.admitted);
        let (_, l) = b.spend(Some(f), 10_500.0, Spend::Take(1.0));
        assert_eq!(l.wait, Duration::from_millis(500));
        // A charge lands in debt.
        let (g, l) = b.spend(Some(f), 10_000.0, Spend::Charge(3.0));
        assert!(l.admitted && (l.left + 3.0).abs() < 1e-9 && g == 15_000.0);
        let (_, l) = b.spend(Some(g), 10_000.0, Spend::Check);
        assert_eq!(l.wait, Duration::from_secs(3));
        // A full time in the past is a full bucket.
        let (_, l) = b.spend(Some(1.0), 10_000.0, Spend::Take(2.0));
        assert!(l.admitted);
        assert_eq!(Bucket::ttl(g, 10_000.0), Duration::from_secs(5));
        assert_eq!(Bucket::ttl(1.0, 10_000.0), Duration::from_millis(1));
    }
}
