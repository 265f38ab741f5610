//! The gatekeeper around a [`Reviewer`]: standing approvals first, then the
//! reviewer under a timeout, then the schema check of edits, then the audit
//! log. Both gates (declared and requested) go through [`Gatekeeper::review`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::standing::StandingApprovals;
use super::{ApprovalDecision, ReviewRequest, Reviewer};
use crate::call::audit::{AuditLog, AuditRecord};
use corral_sandbox::CallError;

/// What the host does after a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run, with the reviewer's revised arguments (parsed, and as JSON text)
    /// if edited; already validated.
    Proceed { edited: Option<(Value, String)> },
    /// Do not run; the call fails with `Rejected by reviewer: <reason>`.
    Reject(String),
    /// Do not run now: the reviewer will answer on a retry of the call
    /// ([`ApprovalDecision::Defer`]).
    Defer,
}

/// Everything a review needs besides the request.
#[derive(Debug, Clone)]
pub(crate) struct Gatekeeper {
    pub reviewer: Option<Arc<dyn Reviewer>>,
    pub standing: Arc<StandingApprovals>,
    pub audit: Option<Arc<AuditLog>>,
    pub timeout: Duration,
}

impl Default for Gatekeeper {
    fn default() -> Self {
        Self {
            reviewer: None,
            standing: Arc::new(StandingApprovals::in_memory()),
            audit: None,
            timeout: super::DEFAULT_REVIEW_TIMEOUT,
        }
    }
}

/// The decision as recorded: kind, reason, edit.
struct Outcome {
    reviewer: String,
    decision: String,
    reason: Option<String>,
    edited: Option<Value>,
    result: Result<Verdict, CallError>,
}

impl Gatekeeper {
    /// Reviews `request`; `validator` checks edited arguments.
    ///
    /// # Errors
    /// [`CallError::Configuration`] when no reviewer is configured, the reviewer
    /// cannot decide, or the audit log cannot be written.
    pub async fn review(
        &self,
        mut request: ReviewRequest,
        validator: Option<&jsonschema::Validator>,
        reviewer: Option<&Arc<dyn Reviewer>>,
        audited: bool,
    ) -> Result<Verdict, CallError> {
        request.timeout = self.timeout;
        let started = Instant::now();
        let outcome = self
            .decide(&request, validator, reviewer.or(self.reviewer.as_ref()))
            .await;
        metrics::counter!("corral_approvals_total", "decision" => outcome.decision.clone())
            .increment(1);
        let review_ms = started.elapsed().as_millis() as u64;
        // Configuration errors are logged at ERROR once, with the call's result.
        if outcome.result.is_ok() {
            tracing::info!(
                tool = request.tool,
                plugin = request.plugin,
                gate = %request.gate,
                reviewer = outcome.reviewer,
                decision = outcome.decision,
                review_ms,
                "approval: {}{}",
                outcome.decision,
                outcome
                    .reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
        }
        if let Some(audit) = self.audit.as_ref().filter(|_| audited) {
            let record = AuditRecord {
                time: AuditRecord::now(),
                event: "approval",
                gate: request.gate.to_string(),
                tool: request.tool.clone(),
                plugin: request.plugin.clone(),
                plugin_sha256: request.plugin_sha256.clone(),
                arguments_sha256: AuditRecord::hash(&request.arguments.to_string()),
                reviewer: outcome.reviewer,
                decision: outcome.decision,
                reason: outcome.reason,
                edited_arguments: outcome.edited,
                review_ms,
                parent_id: request.script.as_ref().and_then(|s| s.run.clone()),
            };
            if let Err(err) = audit.append(&record) {
                tracing::error!(path = %audit.path().display(), "audit log write failed: {err}");
                return Err(CallError::Configuration {
                    tool: request.tool,
                    message: format!(
                        "the audit log {} cannot be written ({err}), so the decision \
                         does not take effect; fix the path or its permissions",
                        audit.path().display()
                    ),
                });
            }
        }
        outcome.result
    }

    async fn decide(
        &self,
        request: &ReviewRequest,
        validator: Option<&jsonschema::Validator>,
        reviewer: Option<&Arc<dyn Reviewer>>,
    ) -> Outcome {
        if self.standing.allows(&request.tool, &request.plugin_sha256) {
            return Outcome {
                reviewer: "standing".into(),
                decision: ApprovalDecision::Continue.kind().into(),
                reason: None,
                edited: None,
                result: Ok(Verdict::Proceed { edited: None }),
            };
        }
        let Some(reviewer) = reviewer else {
            let message = format!(
                "it needs approval ({} gate) but no reviewer is configured; \
                 configure one (auto, deny, console, rules or your own)",
                request.gate
            );
            return Outcome {
                reviewer: "none".into(),
                decision: "error".into(),
                reason: Some(message.clone()),
                edited: None,
                result: Err(CallError::Configuration {
                    tool: request.tool.clone(),
                    message,
                }),
            };
        };
        let name = reviewer.name().to_string();
        // A reviewer that times itself (the console, whose prompts queue)
        // starts the clock when it asks; the host does not time the wait.
        let review = reviewer.review(request);
        let timed = if reviewer.times_itself() {
            Ok(review.await)
        } else {
            tokio::time::timeout(self.timeout, review).await
        };
        let decision = match timed {
            Ok(Ok(decision)) => decision,
            Ok(Err(err)) => {
                return Outcome {
                    reviewer: name,
                    decision: "error".into(),
                    reason: Some(err.message.clone()),
                    edited: None,
                    result: Err(CallError::Configuration {
                        tool: request.tool.clone(),
                        message: err.to_string(),
                    }),
                };
            }
            Err(_) => {
                let reason = format!(
                    "no decision within {} ms; denied by default",
                    self.timeout.as_millis()
                );
                return Outcome {
                    reviewer: name,
                    decision: "timeout".into(),
                    reason: Some(reason.clone()),
                    edited: None,
                    result: Ok(Verdict::Reject(reason)),
                };
            }
        };
        let kind = decision.kind().to_string();
        let (reason, edited, result) = match decision {
            ApprovalDecision::Continue => (None, None, Verdict::Proceed { edited: None }),
            ApprovalDecision::ContinueAlways => {
                if let Err(err) =
                    self.standing
                        .grant(&request.tool, &request.plugin, &request.plugin_sha256)
                {
                    tracing::warn!(
                        tool = request.tool,
                        "standing approval not saved (it holds for this process): {err}"
                    );
                }
                (None, None, Verdict::Proceed { edited: None })
            }
            ApprovalDecision::ExitEarly(reason) => {
                (Some(reason.clone()), None, Verdict::Reject(reason))
            }
            ApprovalDecision::Defer => (None, None, Verdict::Defer),
            ApprovalDecision::Edit(text) => match check_edit(&text, validator) {
                Ok(value) => (
                    None,
                    Some(value.clone()),
                    Verdict::Proceed {
                        edited: Some((value, text)),
                    },
                ),
                Err(problems) => {
                    let reason = format!(
                        "the reviewer's edited arguments are invalid: {}",
                        problems.join("; ")
                    );
                    let edited = serde_json::from_str(&text).unwrap_or(Value::String(text));
                    (Some(reason.clone()), Some(edited), Verdict::Reject(reason))
                }
            },
        };
        Outcome {
            reviewer: name,
            decision: kind,
            reason,
            edited,
            result: Ok(result),
        }
    }
}

/// Parses and validates a reviewer's revised arguments.
fn check_edit(text: &str, validator: Option<&jsonschema::Validator>) -> Result<Value, Vec<String>> {
    let value: Value =
        serde_json::from_str(text).map_err(|err| vec![format!("not JSON: {err}")])?;
    if !value.is_object() {
        return Err(vec!["not a JSON object".into()]);
    }
    if let Some(validator) = validator {
        crate::model::schema::problems(validator, &value)?;
    }
    Ok(value)
}
