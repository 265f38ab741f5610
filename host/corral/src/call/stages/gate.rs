//! Stage 4, the approval gates of a call: the declared gate before the
//! sandbox starts ([`declared`]), and the guest's `request-approval` during
//! the call ([`GuestReview`], the sandbox's
//! [`ApprovalHook`](corral_sandbox::ApprovalHook)). Both go through the host's
//! [`Gatekeeper`] (standing approvals, reviewer, timeout, audit log); whether
//! a call is gated is [`Tool::requires_approval`](crate::Tool::requires_approval),
//! decided once per catalog by [`approval::requires_approval`], the one rule.

use std::sync::Arc;

use crate::call::CallOptions;
use crate::call::approval::gate::{Gatekeeper, Verdict};
use crate::call::approval::{Gate, ReviewRequest, Reviewer};
use crate::catalog::registry::Tool;
use crate::config::resilience::AuditLevel;
use corral_sandbox::CallError;
use corral_sandbox::{ApprovalHook, HookDecision, HookFuture};

use super::CallEnv;
use super::validate::Arguments;

/// The declared gate: when `tool` requires approval, asks for a decision
/// before any pool slot is taken or guest code runs. Returns the arguments
/// to run with: the reviewer's edit (validated against the schema) or the
/// original ones.
///
/// # Errors
/// [`CallError::Rejected`] on a denial (or a review timeout, or an invalid
/// edit); [`CallError::ApprovalPending`] when the reviewer defers to a retry
/// of the call; [`CallError::Configuration`] when nobody can decide.
pub(super) async fn declared(
    env: &CallEnv,
    tool: &Tool,
    arguments: Arguments,
    options: &CallOptions,
) -> Result<Arguments, CallError> {
    if !tool.requires_approval() {
        return Ok(arguments);
    }
    // Boxed: most tools have no declared gate, and the review's future
    // would otherwise enlarge every call's (BENCHMARKS.md, issue 51).
    Box::pin(review(env, tool, arguments, options)).await
}

/// [`declared`]'s review, for a tool that requires approval.
async fn review(
    env: &CallEnv,
    tool: &Tool,
    arguments: Arguments,
    options: &CallOptions,
) -> Result<Arguments, CallError> {
    let (plugin, plugin_sha256) = tool.provider_identity();
    let request = ReviewRequest::new(
        Gate::Declared,
        tool.spec().name.clone(),
        plugin.to_string(),
        plugin_sha256.to_string(),
        tool.spec().description.clone(),
        arguments.value.as_ref().clone(),
        env.gate.timeout,
    )
    .with_script(options.script.clone());
    // A script's deadline stands still while its call is reviewed.
    let pause = options.review_pause.as_ref();
    pause.inspect(|p| p.pause());
    let verdict = env
        .gate
        .review(
            request.clone(),
            Some(tool.validator()),
            options.reviewer.as_ref(),
            tool.resilience().audit.level != AuditLevel::None,
        )
        .await;
    pause.inspect(|p| p.resume());
    match verdict? {
        Verdict::Reject(reason) => Err(CallError::Rejected {
            tool: tool.spec().name.clone(),
            reason,
        }),
        Verdict::Defer => Err(CallError::ApprovalPending {
            tool: tool.spec().name.clone(),
            request: Box::new(request),
            journal: None,
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
    /// The script the call comes from, if any (code mode).
    pub script: Option<corral_sandbox::ScriptOrigin>,
    /// Stops that script's deadline while the guest's request is reviewed.
    pub review_pause: Option<corral_sandbox::ReviewPause>,
}

impl GuestReview {
    /// The failure of a run whose mid-call review was deferred: the guest is
    /// told `exit-early`, so it does not act, and the call ends waiting for
    /// approval, to run again when the answer comes. A tool that is not
    /// [safe to run again](Tool::safe_to_rerun) could repeat what it did
    /// before it asked, so for it the deferral is a configuration error
    /// saying what would work instead.
    fn deferred(&self, request: ReviewRequest) -> CallError {
        let tool = self.tool.spec().name.clone();
        if self.tool.safe_to_rerun() {
            return CallError::ApprovalPending {
                tool,
                request: Box::new(request),
                journal: None,
            };
        }
        CallError::Configuration {
            tool,
            message: "it asked for approval during its run, and this reviewer answers only on \
                      a retry of the whole call, which would repeat what the tool did before \
                      it asked (it is not idempotent and its policy lets it write files or \
                      reach hosts over HTTP); require approval before the call starts \
                      (`[approval] require` in the plugin's policy), or use a reviewer that \
                      answers during the call"
                .into(),
        }
    }
}

impl ApprovalHook for GuestReview {
    fn review(&self, description: String) -> HookFuture<'_> {
        Box::pin(async move {
            let (plugin, plugin_sha256) = self.tool.provider_identity();
            let request = ReviewRequest::new(
                Gate::Requested,
                self.tool.spec().name.clone(),
                plugin.to_string(),
                plugin_sha256.to_string(),
                description,
                self.arguments.as_ref().clone(),
                self.gate.timeout,
            )
            .with_script(self.script.clone());
            // The guest's own budget is paused by the sandbox; a script's
            // that made this call is paused here.
            let pause = self.review_pause.as_ref();
            pause.inspect(|p| p.pause());
            let verdict = self
                .gate
                .review(
                    request.clone(),
                    Some(self.tool.validator()),
                    self.reviewer.as_ref(),
                    self.tool.resilience().audit.level != AuditLevel::None,
                )
                .await;
            pause.inspect(|p| p.resume());
            match verdict {
                Ok(Verdict::Proceed { edited: None }) => HookDecision::Continue,
                Ok(Verdict::Proceed {
                    edited: Some((_, text)),
                }) => HookDecision::Edit(text),
                Ok(Verdict::Reject(reason)) => HookDecision::Reject(reason),
                Ok(Verdict::Defer) => HookDecision::Failed(self.deferred(request)),
                Err(err) => HookDecision::Failed(err),
            }
        })
    }
}
