//! Stage 7, record: the per-call log line (AgentEnsemble's logging table) and
//! metrics, for every call whatever stage it ended in.

use std::fmt::Display;
use std::time::{Duration, Instant};

use crate::call::CallOutput;
use crate::call::metrics::CallMetrics;
use corral_sandbox::CallError;

/// Longest rendering of input or output in the per-call INFO log line, in
/// characters (AgentEnsemble's "truncated input/output").
const LOG_PREVIEW_CHARS: usize = 200;

/// The `tracing` target of the per-call log lines (AgentEnsemble's logging
/// table): INFO `tool(input) -> output` with `ms` (milliseconds) and `fuel`
/// (fuel units) on success, WARN on a tool error, ERROR on a configuration
/// error, DEBUG the full input and output. Filter it by name, e.g.
/// `RUST_LOG=corral::call=info`; the CLI turns it off at its default verbosity
/// for commands that print each call's outcome themselves.
pub const CALL_LOG_TARGET: &str = "corral::call";

/// The `tool` label of the metrics of a call naming no tool: one fixed
/// value, so that callers cannot grow the metrics without bound by making up
/// names.
pub(crate) const UNKNOWN_TOOL_LABEL: &str = "(unknown)";

/// Logs and counts one call of `name` that started at `started`, with the
/// tool's metric keys (`None` for a name no tool has: counted under
/// [`UNKNOWN_TOOL_LABEL`]).
/// `input` is rendered only when a log line is written. Returns the call's
/// duration, as recorded.
pub(crate) fn record(
    name: &str,
    keys: Option<&CallMetrics>,
    input: &dyn Display,
    result: &Result<CallOutput, CallError>,
    started: Instant,
) -> Duration {
    let took = started.elapsed();
    // Milliseconds to one decimal place: log lines stay readable.
    let ms = (took.as_secs_f64() * 1e4).round() / 10.0;
    match keys {
        Some(keys) => metrics(name, keys, result, took),
        None => metrics(
            UNKNOWN_TOOL_LABEL,
            &CallMetrics::new(UNKNOWN_TOOL_LABEL.into()),
            result,
            took,
        ),
    }
    match result {
        Ok(out) => {
            tracing::info!(
                target: CALL_LOG_TARGET,
                tool = name,
                ms,
                fuel = out.fuel_consumed,
                "{name}({}) -> {}",
                Preview(input),
                Preview(&out.text)
            );
            tracing::debug!(
                target: CALL_LOG_TARGET,
                tool = name,
                "full input: {input}\nfull output: {}",
                out.text
            );
        }
        Err(err @ CallError::Configuration { .. }) => {
            tracing::error!(
                target: CALL_LOG_TARGET,
                tool = name,
                ms,
                kind = err.kind(),
                "{name}({}) -> {}",
                Preview(input),
                err.llm_text()
            );
        }
        Err(err) => {
            tracing::warn!(
                target: CALL_LOG_TARGET,
                tool = name,
                ms,
                kind = err.kind(),
                "{name}({}) -> {}",
                Preview(input),
                err.llm_text()
            );
            tracing::debug!(target: CALL_LOG_TARGET, tool = name, "full input: {input}");
        }
    }
    took
}

/// Records one call in the `metrics` facade (a no-op unless the process
/// installed a recorder, as `corral serve` does for `/metrics`):
/// `corral_calls_total{tool}`, `corral_call_errors_total{tool, kind}`,
/// `corral_call_duration_seconds{tool}` (histogram) and
/// `corral_fuel_consumed_total{tool}` (fuel units). `tool` is the label.
fn metrics(tool: &str, keys: &CallMetrics, result: &Result<CallOutput, CallError>, took: Duration) {
    keys.record(took, result.as_ref().ok().map(|out| out.fuel_consumed));
    if let Err(err) = result {
        metrics::counter!(
            "corral_call_errors_total",
            "tool" => tool.to_string(),
            "kind" => err.kind()
        )
        .increment(1);
    }
}

/// The first [`LOG_PREVIEW_CHARS`] characters of a rendering, on one line.
struct Preview<'a, T: Display + ?Sized>(&'a T);

impl<T: Display + ?Sized> Display for Preview<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.0.to_string();
        let mut chars = text.chars();
        for c in chars.by_ref().take(LOG_PREVIEW_CHARS) {
            std::fmt::Write::write_char(f, if c == '\n' { ' ' } else { c })?;
        }
        if chars.next().is_some() {
            f.write_str("…")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_short_and_on_one_line() {
        assert_eq!(Preview("a\nb").to_string(), "a b");
        let long = "x".repeat(LOG_PREVIEW_CHARS + 1);
        let shown = Preview(long.as_str()).to_string();
        assert_eq!(shown.chars().count(), LOG_PREVIEW_CHARS + 1);
        assert!(shown.ends_with('…'));
    }
}
