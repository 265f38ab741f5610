//! The health registry (reference 003's health monitoring): each tool's
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

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use crate::resilience::config::HealthThresholds;

/// A tool's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
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

/// Recent calls of one tool.
#[derive(Debug, Default)]
struct Window {
    /// (succeeded, milliseconds), oldest first.
    calls: VecDeque<(bool, f64)>,
    /// Whether the last computed status was DOWN.
    down: bool,
}

impl Window {
    fn health(&self, tool: &str, t: &HealthThresholds) -> ToolHealth {
        let calls = self.calls.len();
        if calls == 0 {
            return ToolHealth {
                tool: tool.to_string(),
                status: HealthStatus::Unknown,
                calls,
                success_rate: None,
                p95_ms: None,
                reason: Some("no calls yet".into()),
            };
        }
        let ok = self.calls.iter().filter(|(ok, _)| *ok).count();
        let rate = ok as f64 / calls as f64;
        let mut latencies: Vec<f64> = self.calls.iter().map(|(_, ms)| *ms).collect();
        latencies.sort_by(f64::total_cmp);
        let rank = ((calls as f64) * 0.95).ceil() as usize;
        let p95 = latencies[rank.clamp(1, calls) - 1];
        let percent = |r: f64| format!("{:.0} %", r * 100.0);
        let (status, reason) = if rate < t.degraded_success_rate {
            (
                HealthStatus::Down,
                Some(format!(
                    "{} of the last {calls} calls succeeded, below {}",
                    percent(rate),
                    percent(t.degraded_success_rate)
                )),
            )
        } else if rate < t.up_success_rate {
            (
                HealthStatus::Degraded,
                Some(format!(
                    "{} of the last {calls} calls succeeded, below {}",
                    percent(rate),
                    percent(t.up_success_rate)
                )),
            )
        } else if p95 > t.p95_ms as f64 {
            (
                HealthStatus::Degraded,
                Some(format!("p95 latency {p95:.0} ms is over {} ms", t.p95_ms)),
            )
        } else {
            (HealthStatus::Up, None)
        };
        ToolHealth {
            tool: tool.to_string(),
            status,
            calls,
            success_rate: Some(rate),
            p95_ms: Some(p95),
            reason,
        }
    }
}

/// The sliding windows of every tool.
#[derive(Debug)]
pub(crate) struct HealthRegistry {
    windows: Mutex<HashMap<String, Window>>,
    /// Bumped when a tool goes DOWN or recovers.
    changes: watch::Sender<u64>,
}

impl Default for HealthRegistry {
    fn default() -> Self {
        Self {
            windows: Mutex::default(),
            changes: watch::channel(0).0,
        }
    }
}

impl HealthRegistry {
    /// Records one call of `tool` that succeeded or failed, taking `took`.
    pub(crate) fn record(&self, tool: &str, t: &HealthThresholds, ok: bool, took: Duration) {
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let window = windows.entry(tool.to_string()).or_default();
        window.calls.push_back((ok, took.as_secs_f64() * 1e3));
        while window.calls.len() > t.window.max(1) {
            window.calls.pop_front();
        }
        let health = window.health(tool, t);
        let gauge = match health.status {
            HealthStatus::Unknown => 0.0,
            HealthStatus::Up => 1.0,
            HealthStatus::Degraded => 2.0,
            HealthStatus::Down => 3.0,
        };
        metrics::gauge!("corral_tool_health_status", "tool" => tool.to_string()).set(gauge);
        let down = health.status == HealthStatus::Down;
        if down != window.down {
            window.down = down;
            if down {
                tracing::warn!(tool, reason = health.reason.as_deref(), "tool is DOWN");
            } else {
                tracing::info!(tool, status = %health.status, "tool recovered");
            }
            self.changes.send_modify(|n| *n += 1);
        }
    }

    /// The health of `tools` (name and thresholds), sorted by name.
    pub(crate) fn report<'a>(
        &self,
        tools: impl Iterator<Item = (&'a str, &'a HealthThresholds)>,
    ) -> HealthReport {
        let windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let empty = Window::default();
        let mut tools: Vec<ToolHealth> = tools
            .map(|(name, t)| windows.get(name).unwrap_or(&empty).health(name, t))
            .collect();
        tools.sort_by(|a, b| a.tool.cmp(&b.tool));
        let status = tools
            .iter()
            .map(|t| t.status)
            .filter(|s| *s != HealthStatus::Unknown)
            .max()
            .unwrap_or(HealthStatus::Unknown);
        HealthReport { status, tools }
    }

    /// The health of one tool under `thresholds`.
    pub(crate) fn of(&self, tool: &str, thresholds: &HealthThresholds) -> ToolHealth {
        let windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        windows
            .get(tool)
            .unwrap_or(&Window::default())
            .health(tool, thresholds)
    }

    /// A receiver bumped whenever a tool goes DOWN or recovers.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(registry: &HealthRegistry, outcomes: &[(bool, u64)]) -> ToolHealth {
        let t = HealthThresholds {
            window: 20,
            ..HealthThresholds::default()
        };
        for (ok, ms) in outcomes {
            registry.record("t", &t, *ok, Duration::from_millis(*ms));
        }
        registry.report(std::iter::once(("t", &t))).tools.remove(0)
    }

    #[test]
    fn every_transition_and_recovery() {
        let registry = HealthRegistry::default();
        let mut changes = registry.subscribe();
        let t = HealthThresholds::default();
        let unknown = registry.report(std::iter::once(("t", &t)));
        assert_eq!(unknown.status, HealthStatus::Unknown);
        assert_eq!(unknown.tools[0].status, HealthStatus::Unknown);

        assert_eq!(run(&registry, &[(true, 5); 20]).status, HealthStatus::Up);
        // 2 failures in 20: 90 % < 95 %.
        let degraded = run(&registry, &[(false, 5), (false, 5)]);
        assert_eq!(degraded.status, HealthStatus::Degraded, "{degraded:?}");
        assert!(degraded.reason.unwrap().contains("90 %"));
        assert!(!changes.has_changed().unwrap());
        // 6 failures in 20: 70 % < 80 %.
        let down = run(&registry, &[(false, 5); 4]);
        assert_eq!(down.status, HealthStatus::Down, "{down:?}");
        assert!(changes.has_changed().unwrap(), "going DOWN is announced");
        changes.borrow_and_update();
        // Twenty successes push the failures out of the window.
        assert_eq!(run(&registry, &[(true, 5); 20]).status, HealthStatus::Up);
        assert!(changes.has_changed().unwrap(), "recovering is announced");
        // Slow but successful: DEGRADED by latency.
        let slow = run(&registry, &[(true, 9_000); 20]);
        assert_eq!(slow.status, HealthStatus::Degraded);
        assert!(slow.reason.unwrap().contains("p95 latency 9000 ms"));
    }
}
