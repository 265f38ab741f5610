//! The reviewer of session-based MCP clients (revisions before 2026-07-28)
//! that declared `elicitation`: it asks the user during the call with a
//! server-initiated `elicitation/create` and waits for the answer. The form
//! and the reading of the answer are `form.rs`'s, shared with the
//! input-required flow.

use rmcp::RoleServer;
use rmcp::model::ElicitRequestParams;
use rmcp::service::Peer;

use corral::{Host, ReviewError, ReviewFuture, ReviewRequest, Reviewer};

use super::form;

/// Asks the connected MCP client's user during the call.
pub struct ElicitationReviewer {
    peer: Peer<RoleServer>,
    host: Host,
}

impl std::fmt::Debug for ElicitationReviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElicitationReviewer")
            .finish_non_exhaustive()
    }
}

impl ElicitationReviewer {
    /// Asks through `peer`, which must have declared elicitation, about
    /// calls of `host`'s tools (whose schemas lay out the form's edits).
    pub fn new(peer: Peer<RoleServer>, host: Host) -> Self {
        Self { peer, host }
    }
}

impl Reviewer for ElicitationReviewer {
    fn name(&self) -> &str {
        "mcp-elicitation"
    }

    fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a> {
        Box::pin(async move {
            let failed = |message: String| ReviewError {
                reviewer: "mcp-elicitation".into(),
                message,
            };
            let parameters = form::parameters(&self.host, &request.tool);
            let (message, requested_schema) =
                form::question(request, &parameters).map_err(failed)?;
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema,
            };
            let answer = self
                .peer
                .create_elicitation_with_timeout(params, Some(request.timeout))
                .await
                .map_err(|err| {
                    failed(format!("the client did not answer the elicitation: {err}"))
                })?;
            Ok(form::decision(
                request,
                &parameters,
                &answer.action,
                answer.content.as_ref(),
            ))
        })
    }
}
