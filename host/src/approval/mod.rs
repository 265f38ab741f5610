//! Approval gates: no gated call runs without a decision.
//!
//! Two gates lead to one [`Reviewer`] (reference 000's tool-level approval
//! gates):
//! - **declared** ([`Gate::Declared`]): the tool's spec says `requires-approval`,
//!   or the host configuration marks the tool
//!   ([`HostBuilder::require_approval`](crate::HostBuilder::require_approval)).
//!   The review happens before the sandbox starts, without holding a pool slot.
//! - **requested** ([`Gate::Requested`]): the guest calls the contract's
//!   `host.request-approval(description)` mid-call. The call's wall-clock
//!   deadline is paused while the reviewer thinks.
//!
//! Decisions are reference 000's three, plus a standing "always":
//! [`ApprovalDecision::Continue`], [`ApprovalDecision::ExitEarly`] (the call
//! fails with `Rejected by reviewer: <reason>`), [`ApprovalDecision::Edit`]
//! (revised arguments, validated against the tool's schema again before use)
//! and [`ApprovalDecision::ContinueAlways`], a [`standing`] approval bound to the
//! plugin's sha256.
//!
//! Unlike reference 000, where a tool with no handler auto-approves its own
//! requests, a gated call with no reviewer configured fails with
//! [`CallError::Configuration`](crate::CallError::Configuration): never a
//! silent run, never a silent skip. Every review has a timeout
//! ([`DEFAULT_REVIEW_TIMEOUT`]); when it passes, the decision is deny. Every
//! gated call and its decision are appended to the [`audit`](crate::audit) log
//! when one is configured.
//!
//! Reviewers here: [`AutoApprove`], [`DenyAll`], [`console::ConsoleReviewer`]
//! (the terminal), [`rules::RulesReviewer`] (a file a human writes). Embedders
//! implement [`Reviewer`] for their own (a web UI, a chat message, MCP
//! elicitation).

pub mod console;
pub(crate) mod gate;
pub mod rules;
pub mod standing;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// How long a reviewer may take before the decision becomes deny: 120 000 ms.
/// Change it with
/// [`HostBuilder::review_timeout`](crate::HostBuilder::review_timeout).
pub const DEFAULT_REVIEW_TIMEOUT: Duration = Duration::from_secs(120);

/// A reviewer's decision, mirroring the WIT `approval-decision` variant plus
/// a standing approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Go ahead.
    Continue,
    /// Go ahead, and do not ask again for this tool while its plugin's sha256
    /// stays the same (see [`standing`]). The guest sees `continue`.
    ContinueAlways,
    /// Do not perform the action; the call fails with
    /// [`CallError::Rejected`](crate::CallError::Rejected) and this reason.
    ExitEarly(String),
    /// Go ahead with these revised arguments (JSON text of an object). The host
    /// validates them against the tool's schema first; invalid edits reject the
    /// call and the guest never sees them.
    Edit(String),
}

impl ApprovalDecision {
    /// A stable name for logs, metrics and the audit log: `continue`,
    /// `continue_always`, `exit_early` or `edit`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::ContinueAlways => "continue_always",
            Self::ExitEarly(_) => "exit_early",
            Self::Edit(_) => "edit",
        }
    }
}

/// Which gate asked for a review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// The tool requires approval (spec or configuration); asked before the
    /// sandbox starts.
    Declared,
    /// The guest called `host.request-approval` during the call.
    Requested,
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Declared => "declared",
            Self::Requested => "requested",
        })
    }
}

/// What a reviewer is asked to decide.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReviewRequest {
    /// Which gate asked.
    pub gate: Gate,
    /// The tool being called.
    pub tool: String,
    /// The plugin (file stem) that provides it; `pipelines` for a pipeline,
    /// `corral` for a built-in.
    pub plugin: String,
    /// Lowercase hex sha256 of the plugin's component; empty for pipelines and
    /// built-ins.
    pub plugin_sha256: String,
    /// For [`Gate::Declared`], the tool's description; for
    /// [`Gate::Requested`], what the guest says it is about to do.
    pub description: String,
    /// The call's arguments (after validation against the schema).
    pub arguments: Value,
    /// How long the reviewer has before the decision becomes deny.
    #[serde(skip)]
    pub timeout: Duration,
}

impl ReviewRequest {
    /// A rendering for a human: who asks, what for, and the arguments as
    /// indented JSON. Several lines, no trailing newline.
    pub fn render(&self) -> String {
        let args = serde_json::to_string_pretty(&self.arguments)
            .unwrap_or_else(|_| self.arguments.to_string());
        let sha = if self.plugin_sha256.is_empty() {
            String::new()
        } else {
            format!(
                " (sha256 {}…)",
                &self.plugin_sha256[..12.min(self.plugin_sha256.len())]
            )
        };
        let what = match self.gate {
            Gate::Declared => "requires approval",
            Gate::Requested => "asks for approval",
        };
        format!(
            "tool `{}` from plugin `{}`{sha} {what}\n  {}\n  arguments:\n{}",
            self.tool,
            self.plugin,
            self.description,
            indent(&args, "    ")
        )
    }
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|line| format!("{prefix}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why a reviewer could not decide (no terminal, an unreadable rules file).
/// The call fails with
/// [`CallError::Configuration`](crate::CallError::Configuration) carrying this
/// message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reviewer `{reviewer}` cannot decide: {message}")]
pub struct ReviewError {
    /// The reviewer's [`Reviewer::name`].
    pub reviewer: String,
    /// What went wrong and how to fix it.
    pub message: String,
}

/// The future a [`Reviewer`] returns.
pub type ReviewFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ApprovalDecision, ReviewError>> + Send + 'a>>;

/// Decides gated calls. Implement it to plug in your own reviewer; the host
/// applies the timeout, standing approvals, schema checks of edits and the
/// audit log around it, so an implementation only decides.
///
/// ```
/// use corral::approval::{ApprovalDecision, ReviewFuture, ReviewRequest, Reviewer};
///
/// /// Lets read-only tools through and denies everything else.
/// #[derive(Debug)]
/// struct OnlyReads;
///
/// impl Reviewer for OnlyReads {
///     fn name(&self) -> &str {
///         "only-reads"
///     }
///     fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a> {
///         Box::pin(async move {
///             Ok(if request.tool.starts_with("read_") {
///                 ApprovalDecision::Continue
///             } else {
///                 ApprovalDecision::ExitEarly(format!("{} is not a read", request.tool))
///             })
///         })
///     }
/// }
/// ```
pub trait Reviewer: fmt::Debug + Send + Sync {
    /// A short name for logs and the audit log, e.g. `console`.
    fn name(&self) -> &str;

    /// Decides `request`. Should finish within `request.timeout`; the host
    /// stops waiting then and denies.
    fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a>;
}

/// Approves every request. For trusted plugins and tests only.
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoApprove;

impl Reviewer for AutoApprove {
    fn name(&self) -> &str {
        "auto"
    }

    fn review<'a>(&'a self, _request: &'a ReviewRequest) -> ReviewFuture<'a> {
        Box::pin(async { Ok(ApprovalDecision::Continue) })
    }
}

/// Denies every request with the reason `denied by policy (deny-all reviewer)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Reviewer for DenyAll {
    fn name(&self) -> &str {
        "deny"
    }

    fn review<'a>(&'a self, _request: &'a ReviewRequest) -> ReviewFuture<'a> {
        Box::pin(async {
            Ok(ApprovalDecision::ExitEarly(
                "denied by policy (deny-all reviewer)".into(),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_names_tool_plugin_and_arguments() {
        let request = ReviewRequest {
            gate: Gate::Declared,
            tool: "notes_delete".into(),
            plugin: "notes".into(),
            plugin_sha256: "ab".repeat(32),
            description: "Delete a note.".into(),
            arguments: serde_json::json!({"name": "todo"}),
            timeout: DEFAULT_REVIEW_TIMEOUT,
        };
        let text = request.render();
        assert!(
            text.starts_with(
                "tool `notes_delete` from plugin `notes` (sha256 abababababab…) requires approval"
            ),
            "{text}"
        );
        assert!(text.contains("Delete a note."), "{text}");
        assert!(text.contains("\"name\": \"todo\""), "{text}");
    }
}
