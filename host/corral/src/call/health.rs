//! The health registry (TnsAI's health monitoring): each tool's
//! status computed from a sliding window of its recent calls.
//!
//! | status | when (defaults; per tool in the policy's `[resilience] health`) |
//! |---|---|
//! | `UNKNOWN` | no call in the window yet |
//! | `DOWN` | success rate below 80 % |
//! | `DEGRADED` | success rate below 95 %, or p95 latency over 5 000 ms |
//! | `UP` | otherwise |
//!
//! A call counts as a failure only when the tool (or its upstream) failed:
//! a crash, a limit, a tool error, a broken output contract. Invalid
//! arguments, denials and configuration errors are the caller's, and cached
//! results never ran the tool: neither is counted. Every status other than
//! `UP` carries a reason. The overall status is the worst of the tools that
//! have calls (`DOWN` over `DEGRADED` over `UP`), `UNKNOWN` when none has.
//!
//! Each recorded call updates the gauge `corral_tool_health_status{tool}`
//! (0 unknown, 1 up, 2 degraded, 3 down); latencies are in the histogram
//! `corral_call_duration_seconds{tool}`. A tool going `DOWN` or recovering
//! from it bumps [`Host::subscribe_health`](crate::Host::subscribe_health),
//! which the MCP server turns into `notifications/tools/list_changed`.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use crate::config::resilience::HealthThresholds;

/// A tool's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
#[non_exhaustive]
pub enum HealthStatus {
    /// No calls yet.
    Unknown,
    /// Working.
    Up,
    /// Working, but failing sometimes or slow.
    Degraded,
    /// Failing.
    Down,
}

impl std::fmt::Display for HealthStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Unknown => "UNKNOWN",
            Self::Up => "UP",
            Self::Degraded => "DEGRADED",
            Self::Down => "DOWN",
        })
    }
}

/// One tool's health, as `corral health --json` and MCP's `corral://health`
/// show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolHealth {
    /// The tool.
    pub tool: String,
    /// Its status.
    pub status: HealthStatus,
    /// Calls in the window.
    pub calls: usize,
    /// Share of them that succeeded, 0 to 1 (none without calls).
    pub success_rate: Option<f64>,
    /// 95th percentile latency in the window, in milliseconds.
    pub p95_ms: Option<f64>,
    /// Why the status is not `UP`.
    pub reason: Option<String>,
}

/// Every tool's health and the overall status.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct HealthReport {
    /// The worst status of the tools that have calls.
    pub status: HealthStatus,
    /// Each tool, sorted by name.
    pub tools: Vec<ToolHealth>,
}

/// Recent calls of one tool build, in its
/// [`ToolState`](crate::catalog::state::ToolState): a ring of outcomes, a
/// running success count, and the latencies kept sorted (an order-statistics
/// array), so recording a call is a binary search and a short move, and p95
/// is an index, never a sort. The thresholds are fixed with the state.
#[derive(Debug)]
pub(crate) struct HealthWindow {
    thresholds: HealthThresholds,
    window: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    /// (succeeded, microseconds), oldest first.
    calls: VecDeque<(bool, u32)>,
    /// How many of `calls` succeeded.
    ok: usize,
    /// The latencies of `calls`, ascending.
    sorted: Vec<u32>,
    /// The status after the last recorded call.
    status: HealthStatus,
}

impl HealthWindow {
    /// An empty window under `thresholds`.
    pub(crate) fn new(thresholds: HealthThresholds) -> Self {
        let size = thresholds.window.clamp(1, 4_096);
        Self {
            thresholds,
            window: Mutex::new(Window {
                calls: VecDeque::with_capacity(size),
                ok: 0,
                sorted: Vec::with_capacity(size),
                status: HealthStatus::Unknown,
            }),
        }
    }

    /// Records one call of `tool` that succeeded or failed, taking `took`.
    /// A change of status sets the gauge; going DOWN or leaving it bumps
    /// `changes`.
    pub(crate) fn record(
        &self,
        tool: &str,
        label: metrics::SharedString,
        ok: bool,
        took: Duration,
        changes: &watch::Sender<u64>,
    ) {
        let micros = u32::try_from(took.as_micros()).unwrap_or(u32::MAX);
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        w.calls.push_back((ok, micros));
        w.ok += usize::from(ok);
        let at = w.sorted.partition_point(|&m| m < micros);
        w.sorted.insert(at, micros);
        while w.calls.len() > self.thresholds.window.max(1) {
            let Some((old_ok, old)) = w.calls.pop_front() else {
                break;
            };
            w.ok -= usize::from(old_ok);
            let at = w.sorted.partition_point(|&m| m < old);
            w.sorted.remove(at);
        }
        let status = w.level(&self.thresholds);
        if status == w.status {
            return;
        }
        let was_down = w.status == HealthStatus::Down;
        w.status = status;
        drop(w);
        let gauge = match status {
            HealthStatus::Unknown => 0.0,
            HealthStatus::Up => 1.0,
            HealthStatus::Degraded => 2.0,
            HealthStatus::Down => 3.0,
        };
        metrics::gauge!("corral_tool_health_status", "tool" => label).set(gauge);
        if (status == HealthStatus::Down) != was_down {
            if status == HealthStatus::Down {
                let reason = self.of(tool).reason;
                tracing::warn!(tool, reason = reason.as_deref(), "tool is DOWN");
            } else {
                tracing::info!(tool, status = %status, "tool recovered");
            }
            changes.send_modify(|n| *n += 1);
        }
    }

    /// The health of `tool` now.
    pub(crate) fn of(&self, tool: &str) -> ToolHealth {
        let w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        let (status, reason) = w.status(&self.thresholds);
        let calls = w.calls.len();
        ToolHealth {
            tool: tool.to_string(),
            status,
            calls,
            success_rate: (calls > 0).then(|| w.ok as f64 / calls as f64),
            p95_ms: w.p95_micros().map(|m| f64::from(m) / 1e3),
            reason,
        }
    }
}

impl Window {
    /// The latency at the 95th percentile (nearest rank), in microseconds.
    fn p95_micros(&self) -> Option<u32> {
        let n = self.sorted.len();
        let rank = ((n as f64) * 0.95).ceil() as usize;
        (n > 0).then(|| self.sorted[rank.clamp(1, n) - 1])
    }

    /// The status alone: what every call computes, without the text of a
    /// reason.
    fn level(&self, t: &HealthThresholds) -> HealthStatus {
        let Some(p95) = self.p95_micros() else {
            return HealthStatus::Unknown;
        };
        let rate = self.ok as f64 / self.calls.len() as f64;
        if rate < t.degraded_success_rate {
            HealthStatus::Down
        } else if rate < t.up_success_rate || f64::from(p95) / 1e3 > t.p95_ms as f64 {
            HealthStatus::Degraded
        } else {
            HealthStatus::Up
        }
    }

    /// The status and, unless `UP`, why (the decision is
    /// [`level`](Self::level)'s).
    fn status(&self, t: &HealthThresholds) -> (HealthStatus, Option<String>) {
        let level = self.level(t);
        let calls = self.calls.len();
        let rate = self.ok as f64 / calls.max(1) as f64;
        let percent = |r: f64| format!("{:.0} %", r * 100.0);
        let below = |threshold: f64| {
            format!(
                "{} of the last {calls} calls succeeded, below {}",
                percent(rate),
                percent(threshold)
            )
        };
        let reason = match level {
            HealthStatus::Unknown => Some("no calls yet".to_string()),
            HealthStatus::Up => None,
            HealthStatus::Down => Some(below(t.degraded_success_rate)),
            HealthStatus::Degraded if rate < t.up_success_rate => Some(below(t.up_success_rate)),
            HealthStatus::Degraded => {
                let p95_ms = f64::from(self.p95_micros().unwrap_or(0)) / 1e3;
                Some(format!(
                    "p95 latency {p95_ms:.0} ms is over {} ms",
                    t.p95_ms
                ))
            }
        };
        (level, reason)
    }
}

/// What the host keeps of health beyond each tool's window: who to tell
/// when a tool goes DOWN or recovers.
#[derive(Debug)]
pub(crate) struct HealthRegistry {
    /// Bumped when a tool goes DOWN or recovers.
    changes: watch::Sender<u64>,
}

impl Default for HealthRegistry {
    fn default() -> Self {
        Self {
            changes: watch::channel(0).0,
        }
    }
}

impl HealthRegistry {
    /// Where windows announce DOWN and recovery.
    pub(crate) fn changes(&self) -> &watch::Sender<u64> {
        &self.changes
    }

    /// The health of `tools` (name and window), sorted by name.
    pub(crate) fn report<'a>(
        &self,
        tools: impl Iterator<Item = (&'a str, &'a HealthWindow)>,
    ) -> HealthReport {
        let mut tools: Vec<ToolHealth> = tools.map(|(name, window)| window.of(name)).collect();
        tools.sort_by(|a, b| a.tool.cmp(&b.tool));
        let status = tools
            .iter()
            .map(|t| t.status)
            .filter(|s| *s != HealthStatus::Unknown)
            .max()
            .unwrap_or(HealthStatus::Unknown);
        HealthReport { status, tools }
    }

    /// A receiver bumped whenever a tool goes DOWN or recovers.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        window: &HealthWindow,
        changes: &watch::Sender<u64>,
        outcomes: &[(bool, u64)],
    ) -> ToolHealth {
        for (ok, ms) in outcomes {
            window.record("t", "t".into(), *ok, Duration::from_millis(*ms), changes);
        }
        window.of("t")
    }

    #[test]
    fn every_transition_and_recovery() {
        let registry = HealthRegistry::default();
        let mut changes = registry.subscribe();
        let window = HealthWindow::new(HealthThresholds {
            window: 20,
            ..HealthThresholds::default()
        });
        let unknown = registry.report(std::iter::once(("t", &window)));
        assert_eq!(unknown.status, HealthStatus::Unknown);
        assert_eq!(unknown.tools[0].status, HealthStatus::Unknown);
        let tx = registry.changes();

        assert_eq!(run(&window, tx, &[(true, 5); 20]).status, HealthStatus::Up);
        // 2 failures in 20: 90 % < 95 %.
        let degraded = run(&window, tx, &[(false, 5), (false, 5)]);
        assert_eq!(degraded.status, HealthStatus::Degraded, "{degraded:?}");
        assert!(degraded.reason.unwrap().contains("90 %"));
        assert!(!changes.has_changed().unwrap());
        // 6 failures in 20: 70 % < 80 %.
        let down = run(&window, tx, &[(false, 5); 4]);
        assert_eq!(down.status, HealthStatus::Down, "{down:?}");
        assert!(changes.has_changed().unwrap(), "going DOWN is announced");
        changes.borrow_and_update();
        // Twenty successes push the failures out of the window.
        assert_eq!(run(&window, tx, &[(true, 5); 20]).status, HealthStatus::Up);
        assert!(changes.has_changed().unwrap(), "recovering is announced");
        // Slow but successful: DEGRADED by latency.
        let slow = run(&window, tx, &[(true, 9_000); 20]);
        assert_eq!(slow.status, HealthStatus::Degraded);
        assert!(slow.reason.unwrap().contains("p95 latency 9000 ms"));
    }

    #[test]
    fn p95_is_the_nearest_rank_of_the_window_as_it_slides() {
        let tx = watch::channel(0).0;
        let window = HealthWindow::new(HealthThresholds {
            window: 20,
            ..HealthThresholds::default()
        });
        // 1..=40 ms: the window keeps 21..=40, whose p95 (rank 19) is 39.
        for ms in 1..=40 {
            window.record("t", "t".into(), true, Duration::from_millis(ms), &tx);
        }
        let h = window.of("t");
        assert_eq!((h.calls, h.p95_ms), (20, Some(39.0)));
        // Same values out of order, with repeats: the same sorted answer.
        let window = HealthWindow::new(HealthThresholds::default());
        for ms in [7, 3, 7, 1, 9, 3] {
            window.record("t", "t".into(), true, Duration::from_millis(ms), &tx);
        }
        assert_eq!(window.of("t").p95_ms, Some(9.0));
        assert_eq!(window.of("t").success_rate, Some(1.0));
    }
}
