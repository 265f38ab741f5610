//! `[record]` of a policy: which of the plugin's calls are recorded into
//! the host's recordings directory (`corral::replay`), and whether a new
//! build must replay them before it replaces the old one.
//!
//! ```toml
//! [record]
//! rate = 0.05          # the share of calls recorded, 0 to 1; default 1
//! on = "failure"       # "always" (the default) or "failure": keep failed calls only
//! gate_updates = true  # a new build replays the recordings before it swaps in
//! tools = { fetch_url = 1.0, sha256 = 0.0 }  # a tool's own rate (the plugin's names)
//! ```
//!
//! Without the section no call is recorded unless its caller asks
//! (`CallOptions::record`, `corral call --record`). With `on = "failure"`
//! every call runs with a tape and only failed ones (a guest error or a
//! sandbox failure), sampled at `rate`, are written.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::PolicyError;

/// Makes the error at a span of the file (the caller's, with the line).
type At<'a> = &'a dyn Fn(std::ops::Range<usize>, String) -> PolicyError;

/// `[record]` as the policy sets it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RecordPolicy {
    /// The share of calls recorded, 0.0 to 1.0 (`rate`; default 1.0).
    pub rate: f64,
    /// A tool's own share, by the name the plugin gives it (`tools`); the
    /// others get [`rate`](Self::rate).
    pub tools: BTreeMap<String, f64>,
    /// Keep only failed calls (`on = "failure"`); default `false`
    /// (`on = "always"`).
    pub only_failures: bool,
    /// Replay the recordings against a new build before it replaces the
    /// old one (`gate_updates`; default `false`).
    pub gate_updates: bool,
}

impl RecordPolicy {
    /// The share of `tool`'s calls recorded (the plugin's name for it).
    pub fn rate_of(&self, tool: &str) -> f64 {
        self.tools.get(tool).copied().unwrap_or(self.rate)
    }

    /// Whether a call of `tool` runs with a tape: every call with a rate
    /// above 0 for `on = "failure"` (its failure is known only at its
    /// end), else a sample at the tool's rate.
    pub(crate) fn tapes(&self, tool: &str) -> bool {
        let rate = self.rate_of(tool);
        if self.only_failures {
            rate > 0.0
        } else {
            sample(rate)
        }
    }

    /// Whether a taped call of `tool` is written: for `on = "failure"`, a
    /// failed one sampled at the tool's rate; else every one (sampled
    /// before it ran).
    pub(crate) fn keeps(&self, tool: &str, failed: bool) -> bool {
        !self.only_failures || (failed && sample(self.rate_of(tool)))
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
    #[serde(default)]
    tools: BTreeMap<String, Spanned<f64>>,
}

/// A rate from the file: a share from 0 to 1, or the error at its span.
fn share(key: &str, rate: &Spanned<f64>, at: At<'_>) -> Result<f64, PolicyError> {
    if (0.0..=1.0).contains(rate.get_ref()) {
        Ok(*rate.get_ref())
    } else {
        Err(at(
            rate.span(),
            format!(
                "[record] {key} = {} is not a share of calls; give a number from 0 to 1 \
                 (0.05 records one call in twenty)",
                rate.get_ref()
            ),
        ))
    }
}

/// The checked `[record]`.
pub(super) fn check(
    raw: Option<RawRecord>,
    at: At<'_>,
) -> Result<Option<RecordPolicy>, PolicyError> {
    let Some(raw) = raw else { return Ok(None) };
    let rate = match &raw.rate {
        None => 1.0,
        Some(rate) => share("rate", rate, at)?,
    };
    let mut tools = BTreeMap::new();
    for (tool, rate) in &raw.tools {
        tools.insert(tool.clone(), share(&format!("tools.{tool}"), rate, at)?);
    }
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
        tools,
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
