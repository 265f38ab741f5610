//! Answers to a guest's `host.request-approval` (reference 000's
//! `requestApproval`, decisions continue / exit early / edit).
//!
//! This is the contract's seam for approval gates. Until reviewers exist, the
//! host answers every request with [`ApprovalDecision::Continue`] unless
//! [`GuestApprovals`] configures a fixed decision for the tool.

use std::collections::HashMap;

/// A reviewer's decision, mirroring the WIT `approval-decision` variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Go ahead.
    Continue,
    /// Do not perform the action; the call is reported as
    /// [`CallError::Rejected`](crate::CallError::Rejected) with this reason.
    ExitEarly(String),
    /// Go ahead with these revised arguments (JSON text of an object). The host
    /// validates them against the tool's schema before the guest sees them; if
    /// they are invalid the guest receives `ExitEarly` instead.
    Edit(String),
}

/// Fixed answers to guest approval requests, per tool.
///
/// Default: every tool gets [`ApprovalDecision::Continue`].
#[derive(Debug, Clone, Default)]
pub struct GuestApprovals {
    per_tool: HashMap<String, ApprovalDecision>,
}

impl GuestApprovals {
    /// Every request answered with `Continue`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers requests from `tool` with `decision`.
    #[must_use]
    pub fn with(mut self, tool: impl Into<String>, decision: ApprovalDecision) -> Self {
        self.per_tool.insert(tool.into(), decision);
        self
    }

    /// The decision for a request from `tool`.
    pub fn decide(&self, tool: &str) -> ApprovalDecision {
        self.per_tool
            .get(tool)
            .cloned()
            .unwrap_or(ApprovalDecision::Continue)
    }
}
