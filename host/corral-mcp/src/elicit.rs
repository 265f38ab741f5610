//! A reviewer that asks the MCP client's user through elicitation
//! (`elicitation/create`, a form with an `approve` switch and an optional
//! reason). Used only for clients that declared the `elicitation` capability.

use rmcp::RoleServer;
use rmcp::service::{ElicitationError, Peer};
use schemars::JsonSchema;
use serde::Deserialize;

use corral::{ApprovalDecision, ReviewError, ReviewFuture, ReviewRequest, Reviewer};

/// The form the user fills in.
#[derive(Debug, Deserialize, JsonSchema)]
struct Answer {
    /// Allow this call to run?
    approve: bool,
    /// Why not (shown to the model when denied).
    #[serde(default)]
    reason: Option<String>,
}

rmcp::elicit_safe!(Answer);

/// Asks the connected MCP client's user.
pub struct ElicitationReviewer {
    peer: Peer<RoleServer>,
}

impl std::fmt::Debug for ElicitationReviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElicitationReviewer")
            .finish_non_exhaustive()
    }
}

impl ElicitationReviewer {
    /// Asks through `peer`, which must have declared elicitation.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }
}

impl Reviewer for ElicitationReviewer {
    fn name(&self) -> &str {
        "mcp-elicitation"
    }

    fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a> {
        Box::pin(async move {
            let message = format!("Approve this call?\n{}", request.render());
            match self
                .peer
                .elicit_with_timeout::<Answer>(message, Some(request.timeout))
                .await
            {
                Ok(Some(Answer { approve: true, .. })) => Ok(ApprovalDecision::Continue),
                Ok(Some(Answer {
                    approve: false,
                    reason,
                })) => Ok(ApprovalDecision::ExitEarly(
                    reason
                        .filter(|r| !r.trim().is_empty())
                        .unwrap_or_else(|| "denied by the user".into()),
                )),
                Ok(None) => Ok(ApprovalDecision::ExitEarly(
                    "the user gave no answer; denied".into(),
                )),
                Err(ElicitationError::UserDeclined) => {
                    Ok(ApprovalDecision::ExitEarly("the user declined".into()))
                }
                Err(ElicitationError::UserCancelled) => Ok(ApprovalDecision::ExitEarly(
                    "the user dismissed the request; denied".into(),
                )),
                Err(err) => Err(ReviewError {
                    reviewer: "mcp-elicitation".into(),
                    message: format!("the client did not answer the elicitation: {err}"),
                }),
            }
        })
    }
}
