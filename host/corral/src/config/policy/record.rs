//! `[record]` of a policy: which of the plugin's calls are recorded into
//! the host's recordings directory (`corral::replay`), and whether a new
//! build must replay them before it replaces the old one.
//!
//! ```toml
//! [record]
//! rate = 0.05          # the share of calls recorded, 0 to 1; default 1
//! on = "failure"       # "always" (the default) or "failure": keep failed calls only
//! gate_updates = true  # a new build replays the recordings before it swaps in
//! ```
//!
//! Without the section no call is recorded unless its caller asks
//! (`CallOptions::record`, `corral call --record`). With `on = "failure"`
//! every call runs with a tape and only failed ones (a guest error or a
//! sandbox failure), sampled at `rate`, are written.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::PolicyError;

/// Makes the error at a span of the file (the caller's, with the line).
type At<'a> = &'a dyn Fn(std::ops::Range<usize>, String) -> PolicyError;

/// `[record]` as the policy sets it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RecordPolicy {
    /// The share of calls recorded, 0.0 to 1.0 (`rate`; default 1.0).
    pub rate: f64,
    /// Keep only failed calls (`on = "failure"`); default `false`
    /// (`on = "always"`).
    pub only_failures: bool,
    /// Replay the recordings against a new build before it replaces the
    /// old one (`gate_updates`; default `false`).
    pub gate_updates: bool,
}

impl RecordPolicy {
    /// Whether a call runs with a tape: every call for `on = "failure"`
    /// (its failure is known only at its end), else a `rate` sample.
    pub(crate) fn tapes(&self) -> bool {
        self.only_failures || sample(self.rate)
    }

    /// Whether a taped call is written: for `on = "failure"`, a failed one
    /// sampled at `rate`; else every one (sampled before it ran).
    pub(crate) fn keeps(&self, failed: bool) -> bool {
        !self.only_failures || (failed && sample(self.rate))
    }
}

/// True with probability `rate`.
fn sample(rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return false;
    }
    // 53 random bits, as a float in [0, 1).
    ((u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64) < rate
}

/// `[record]` as TOML gives it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRecord {
    rate: Option<Spanned<f64>>,
    on: Option<Spanned<String>>,
    #[serde(default)]
    gate_updates: bool,
}

/// The checked `[record]`.
pub(super) fn check(
    raw: Option<RawRecord>,
    at: At<'_>,
) -> Result<Option<RecordPolicy>, PolicyError> {
    let Some(raw) = raw else { return Ok(None) };
    let rate = match raw.rate {
        None => 1.0,
        Some(rate) if (0.0..=1.0).contains(rate.get_ref()) => *rate.get_ref(),
        Some(rate) => {
            return Err(at(
                rate.span(),
                format!(
                    "[record] rate = {} is not a share of calls; give a number from 0 to 1 \
                     (0.05 records one call in twenty)",
                    rate.get_ref()
                ),
            ));
        }
    };
    let only_failures = match raw.on.as_ref().map(|on| (on.get_ref().as_str(), on.span())) {
        None | Some(("always", _)) => false,
        Some(("failure", _)) => true,
        Some((other, span)) => {
            return Err(at(
                span,
                format!(
                    "[record] on = {:?} is not a choice; write \"always\" or \"failure\"",
                    corral_names::text::escape(other)
                ),
            ));
        }
    };
    Ok(Some(RecordPolicy {
        rate,
        only_failures,
        gate_updates: raw.gate_updates,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_of_one_always_samples_and_zero_never() {
        assert!((0..100).all(|_| sample(1.0)));
        assert!((0..100).all(|_| !sample(0.0)));
    }
}
