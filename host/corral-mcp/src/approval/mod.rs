//! Approvals over MCP: who answers a gated call, per client.
//!
//! - **2026-07-28 clients that declared `elicitation`** (in the request's
//!   `_meta`): the multi-round-trip flow of that revision
//!   (basic/patterns/mrtr). A gated call is answered with an input-required
//!   result: an `elicitation/create` form under the key `approval`
//!   (`form.rs`) and a signed `requestState` (`state.rs`). The client asks
//!   its user and retries the original `tools/call` with `inputResponses`
//!   and the state; the server checks the state against the call and runs
//!   it with the answer. A guest that asks during its run
//!   (`request-approval`) is told `exit-early`, its run is abandoned, and the
//!   question goes to the client the same way; the retry runs the call again
//!   and answers the guest's question if it asks the same thing. That needs a
//!   tool that is safe to run again ([`corral::Tool::safe_to_rerun`]); for
//!   any other the call fails saying so.
//! - **Session-based clients that declared `elicitation`**: a
//!   server-initiated `elicitation/create` with the same form, during the
//!   call ([`ElicitationReviewer`]).
//! - **Every other client**: the host's configured reviewer decides; a
//!   client without the capability never gets an automatic yes.
//!
//! Inside `execute_tool_plan` or a pipeline, a step's approval cannot wait
//! for a retry (the retry would run the earlier steps again): under the
//! 2026-07-28 flow such a step fails with `approval_pending`, telling the
//! model to call that tool on its own. A gate on the plan or pipeline itself
//! is asked like any other.

mod elicit;
mod form;
mod state;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use corral::{ApprovalDecision, CallContext, ReviewFuture, ReviewRequest, Reviewer, Tool};

pub use elicit::ElicitationReviewer;
pub(crate) use state::States;
pub use state::{DEFAULT_STATE_TTL, MIN_STATE_KEY_BYTES, StateError, StateKeyError};

use state::{Binding, Decided, Payload, Question};

/// The key of the approval question in `inputRequests` and
/// `inputResponses`.
pub const INPUT_KEY: &str = "approval";

/// Who answers a gated call of this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// 2026-07-28 with `elicitation`: input-required results and retries.
    InputRequired,
    /// A session-based client with `elicitation`: `elicitation/create`.
    Elicitation,
    /// The host's reviewer.
    Host,
}

impl Flow {
    /// The flow for the request of `context`: its protocol revision and
    /// capabilities come from the request's `_meta` (2026-07-28) or the
    /// session's `initialize`.
    pub fn of(context: &RequestContext<RoleServer>) -> Self {
        let elicits = context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        let stateless = context
            .protocol_version()
            .is_some_and(|v| !v.has_initialize());
        match (elicits, stateless) {
            (false, _) => Self::Host,
            (true, true) => Self::InputRequired,
            (true, false) => Self::Elicitation,
        }
    }
}

/// The reviewer of one round of the input-required flow: it knows the
/// decisions of earlier rounds (from the verified state) and the answer the
/// retry brought for the pending question, and defers every other
/// question to the client. Each question is told apart by its tool, plugin
/// build, text and which time in the call it came, so one answer is used
/// for one question once.
#[derive(Debug)]
pub(crate) struct RoundReviewer {
    earlier: Vec<(Question, Decided)>,
    pending: Option<(Question, ElicitResult, serde_json::Value)>,
    /// How often each question (occurrence 0) has come in this round.
    asked: Mutex<BTreeMap<Question, u32>>,
    /// The decision this round's answer turned into, once used.
    made: Mutex<Option<(Question, Decided)>>,
    /// The question that deferred this round.
    deferred: Mutex<Option<Question>>,
}

impl RoundReviewer {
    /// The first round of a call: every question is deferred.
    pub fn first() -> Self {
        Self::with(Vec::new(), None)
    }

    fn with(
        earlier: Vec<(Question, Decided)>,
        pending: Option<(Question, ElicitResult, serde_json::Value)>,
    ) -> Self {
        Self {
            earlier,
            pending,
            asked: Mutex::default(),
            made: Mutex::default(),
            deferred: Mutex::default(),
        }
    }

    /// A retry of a call of `tool` with `arguments` and `context`, the
    /// `sealed` `requestState` and the `responses` the client brought,
    /// checked by `states`. The state is used up only once the answer has
    /// been read.
    ///
    /// # Errors
    /// `invalid_params` for a state that is forged, expired, replayed or
    /// for another call, or responses without a readable answer.
    pub fn retry(
        states: &States,
        tool: &Tool,
        arguments: &serde_json::Value,
        context: &CallContext,
        sealed: &str,
        responses: Option<&InputResponses>,
    ) -> Result<Self, McpError> {
        let invalid = |message: String| McpError::invalid_params(message, None);
        let binding = Binding::of(tool, arguments, context);
        let payload = states
            .open(sealed, &binding)
            .map_err(|err| invalid(err.to_string()))?;
        let answer = responses
            .and_then(|responses| responses.get(INPUT_KEY))
            .ok_or_else(|| {
                invalid(format!(
                    "the retry's inputResponses have no `{INPUT_KEY}` answer"
                ))
            })?;
        let answer: ElicitResult = serde_json::from_value(answer.clone()).map_err(|err| {
            invalid(format!(
                "the `{INPUT_KEY}` answer is not an elicitation result: {err}"
            ))
        })?;
        states
            .consume(&payload.nonce)
            .map_err(|err| invalid(err.to_string()))?;
        Ok(Self::with(
            payload.answered,
            Some((payload.pending, answer, tool.spec().parameters.clone())),
        ))
    }

    /// The question `request` is, counting how often it came this round.
    fn question(&self, request: &ReviewRequest) -> Question {
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        let count = asked.entry(Question::of(request, 0)).or_insert(0);
        let question = Question::of(request, *count);
        *count += 1;
        question
    }

    /// The decision for `request`: an earlier round's, this round's answer,
    /// or a deferral to the client.
    fn decide(&self, request: &ReviewRequest) -> ApprovalDecision {
        let question = self.question(request);
        if let Some((_, decided)) = self.earlier.iter().find(|(q, _)| *q == question) {
            return decided.decision();
        }
        if let Some((_, answer, parameters)) =
            self.pending.as_ref().filter(|(q, _, _)| *q == question)
        {
            let decision =
                form::decision(request, parameters, &answer.action, answer.content.as_ref());
            if let Some(decided) = Decided::of(&decision) {
                *self.made.lock().unwrap_or_else(|p| p.into_inner()) = Some((question, decided));
            }
            return decision;
        }
        *self.deferred.lock().unwrap_or_else(|p| p.into_inner()) = Some(question);
        ApprovalDecision::Defer
    }

    /// The input-required result asking `request` (the question that
    /// deferred this round) about a call of `tool` with `arguments` and
    /// `context`, carrying this round's decisions forward.
    ///
    /// # Errors
    /// `internal_error` when the form or the state cannot be built.
    pub fn ask(
        &self,
        states: &States,
        tool: &Tool,
        arguments: &serde_json::Value,
        context: &CallContext,
        request: &ReviewRequest,
    ) -> Result<InputRequiredResult, McpError> {
        let (message, requested_schema) = form::question(request, &tool.spec().parameters)
            .map_err(|err| McpError::internal_error(err, None))?;
        let mut answered = self.earlier.clone();
        if let Some(made) = self.made.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            answered.push(made);
        }
        let pending = self
            .deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| Question::of(request, 0));
        let payload = Payload {
            binding: Binding::of(tool, arguments, context),
            answered,
            pending,
            nonce: States::nonce(),
        };
        let sealed = states
            .seal(&payload)
            .map_err(|err| McpError::internal_error(err.to_string(), None))?;
        let mut requests = InputRequests::new();
        requests.insert(
            INPUT_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message,
                    requested_schema,
                },
            )),
        );
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }
}

/// Shares a [`RoundReviewer`] as the call's reviewer.
#[derive(Debug)]
pub(crate) struct Shared(pub Arc<RoundReviewer>);

impl Reviewer for Shared {
    fn name(&self) -> &str {
        "mcp-input-required"
    }

    fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a> {
        let decision = self.0.decide(request);
        Box::pin(async move { Ok(decision) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral::Gate;
    use serde_json::json;

    fn request(text: &str) -> ReviewRequest {
        ReviewRequest::new(
            Gate::Requested,
            "ask",
            "hostile",
            "ab".repeat(32),
            text,
            json!({}),
            std::time::Duration::from_secs(1),
        )
    }

    #[test]
    fn one_answer_answers_one_question_once() {
        let yes: ElicitResult =
            serde_json::from_value(json!({"action": "accept", "content": {"decision": "allow"}}))
                .expect("answer");
        let asked = request("delete everything");
        let round =
            RoundReviewer::with(Vec::new(), Some((Question::of(&asked, 0), yes, json!({}))));
        assert_eq!(round.decide(&asked), ApprovalDecision::Continue);
        // The same question a second time in the run is a new question.
        assert_eq!(round.decide(&asked), ApprovalDecision::Defer);
        // So is one from another build of the tool, or another text.
        let mut rebuilt = request("delete everything");
        rebuilt.plugin_sha256 = "cd".repeat(32);
        let fresh = RoundReviewer::first();
        assert_eq!(fresh.decide(&rebuilt), ApprovalDecision::Defer);
        // The decision made carries into the next round for that question.
        let next = RoundReviewer::with(
            vec![(
                Question::of(&asked, 0),
                round.made.lock().expect("lock").clone().expect("made").1,
            )],
            None,
        );
        assert_eq!(next.decide(&asked), ApprovalDecision::Continue);
        assert_eq!(
            next.decide(&request("something else")),
            ApprovalDecision::Defer
        );
    }
}
