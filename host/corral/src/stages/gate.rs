//! Stage 4, the approval gates of a call: the declared gate before the
//! sandbox starts ([`declared`]), and the guest's `request-approval` during
//! the call ([`GuestReview`], the sandbox's
//! [`ApprovalHook`](crate::sandbox::ApprovalHook)). Both go through the host's
//! [`Gatekeeper`] (standing approvals, reviewer, timeout, audit log); whether
//! a call is gated is [`Tool::requires_approval`](crate::Tool::requires_approval),
//! decided once per catalog by [`approval::requires_approval`], the one rule.

use std::sync::Arc;

use crate::approval::gate::{Gatekeeper, Verdict};
use crate::approval::{Gate, ReviewRequest, Reviewer};
use crate::call::CallOptions;
use crate::error::CallError;
use crate::registry::Tool;
use crate::resilience::config::AuditLevel;
use crate::sandbox::{ApprovalHook, HookDecision, HookFuture};

use super::CallEnv;
use super::validate::Arguments;

/// The declared gate: when `tool` requires approval, asks for a decision
/// before any pool slot is taken or guest code runs. Returns the arguments
/// to run with: the reviewer's edit (validated against the schema) or the
/// original ones.
///
/// # Errors
/// [`CallError::Rejected`] on a denial (or a review timeout, or an invalid
/// edit); [`CallError::Configuration`] when nobody can decide.
pub(super) async fn declared(
    env: &CallEnv,
    tool: &Tool,
    arguments: Arguments,
    options: &CallOptions,
) -> Result<Arguments, CallError> {
    if !tool.requires_approval() {
        return Ok(arguments);
    }
    let (plugin, plugin_sha256) = tool.provider_identity();
    let request = ReviewRequest {
        gate: Gate::Declared,
        tool: tool.spec().name.clone(),
        plugin: plugin.to_string(),
        plugin_sha256: plugin_sha256.to_string(),
        description: tool.spec().description.clone(),
        arguments: arguments.value.as_ref().clone(),
        timeout: env.gate.timeout,
    };
    match env
        .gate
        .review(
            request,
            Some(tool.validator()),
            options.reviewer.as_ref(),
            tool.resilience().audit.level != AuditLevel::None,
        )
        .await?
    {
        Verdict::Reject(reason) => Err(CallError::Rejected {
            tool: tool.spec().name.clone(),
            reason,
        }),
        Verdict::Proceed { edited: None } => Ok(arguments),
        Verdict::Proceed {
            edited: Some((value, text)),
        } => Ok(Arguments::edited(value, text)),
    }
}

/// Answers a guest's `request-approval` during one call of `tool`.
pub(super) struct GuestReview {
    pub gate: Arc<Gatekeeper>,
    pub tool: Arc<Tool>,
    pub arguments: Arc<serde_json::Value>,
    pub reviewer: Option<Arc<dyn Reviewer>>,
}

impl ApprovalHook for GuestReview {
    fn review(&self, description: String) -> HookFuture<'_> {
        Box::pin(async move {
            let (plugin, plugin_sha256) = self.tool.provider_identity();
            let request = ReviewRequest {
                gate: Gate::Requested,
                tool: self.tool.spec().name.clone(),
                plugin: plugin.to_string(),
                plugin_sha256: plugin_sha256.to_string(),
                description,
                arguments: self.arguments.as_ref().clone(),
                timeout: self.gate.timeout,
            };
            match self
                .gate
                .review(
                    request,
                    Some(self.tool.validator()),
                    self.reviewer.as_ref(),
                    self.tool.resilience().audit.level != AuditLevel::None,
                )
                .await
            {
                Ok(Verdict::Proceed { edited: None }) => HookDecision::Continue,
                Ok(Verdict::Proceed {
                    edited: Some((_, text)),
                }) => HookDecision::Edit(text),
                Ok(Verdict::Reject(reason)) => HookDecision::Reject(reason),
                Err(err) => HookDecision::Failed(err),
            }
        })
    }
}
