//! `[tasks]` of a policy: when an MCP client that supports the Tasks
//! extension (SEP-2663) gets a task instead of a waiting `tools/call`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Whether a call of a tool becomes an MCP task, for a client that declared
/// the Tasks extension (clients that did not always get the result in the
/// `tools/call` response).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskMode {
    /// Every call is a task; a client without the extension (every
    /// session-based client among them) is refused with MCP's
    /// `MissingRequiredClientCapability` (-32021, HTTP 400).
    Required,
    /// Every call is a task for a client that takes them; others wait.
    Always,
    /// The client's input first, then a task (SEP-2663's composition of
    /// input-required rounds and a task): a 2026-07-28 client's first call
    /// runs in line, so that a declared approval and what the guest asks
    /// the client (WIT 0.3.0 `corral:tool/client`) go back as
    /// input-required results; the retry that brings the answers becomes
    /// the task, and whatever the guest asks after them waits in the task
    /// (`tasks/update`). A call that asks nothing finishes in line. Other
    /// clients that take tasks: as `always`.
    AfterInput,
    /// Calls that may take long: a tool whose latency is `slow`, the
    /// built-ins `execute_tool_plan` and `execute_code`, a pipeline, and a
    /// tool whose deadline exceeds [`SLOW_DEADLINE`]. The default.
    #[default]
    WhenSlow,
    /// Never a task: the client waits for the result.
    Never,
}

/// A deadline past which `when_slow` makes a call a task: 10 s, a third of
/// the shortest idle timeout (30 s) common among HTTP proxies.
pub const SLOW_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// `[tasks]`: the plugin's mode and per-tool modes (by the plugin's own
/// tool names).
///
/// ```toml
/// [tasks]
/// mode = "when_slow"             # required, always, after_input, when_slow (the default) or never
/// tools = { render_report = "always", ping = "never" }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TaskPolicy {
    /// The mode of the plugin's tools that `tools` does not name.
    #[serde(default)]
    pub mode: TaskMode,
    /// Modes by the plugin's tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, TaskMode>,
}

impl TaskPolicy {
    /// The mode of the plugin's tool `guest_name`.
    pub fn mode_of(&self, guest_name: &str) -> TaskMode {
        self.tools.get(guest_name).copied().unwrap_or(self.mode)
    }
}
