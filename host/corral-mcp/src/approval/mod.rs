//! Approvals over MCP: who answers a gated call, per client; and, for a
//! 2026-07-28 client outside a task, the rounds of the input-required flow
//! that carry a guest's own requests to it (`requests.rs`: the same signed
//! state, the same retry, the same rule that only a tool safe to run again
//! is re-run).
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
//! - **Every other client**: the host's configured reviewer (or a standing
//!   approval) decides; a client without the capability never gets an
//!   automatic yes. With neither, a declared gate is refused before the
//!   call with `MissingRequiredClientCapability` (-32021, `call.rs`).
//!
//! Inside `execute_code` (code mode), a gated call of the script can wait
//! for the retry: the run stops there, and the input-required result's
//! state carries the run's journal (every answer the script got so far,
//! its seed and start time), encrypted (`journal.rs`). The retry runs the
//! script again from the start with the journal: its calls are answered
//! from it, never run twice, and then the answered call goes ahead. Each
//! question names the script's call by its position and arguments, so one
//! answer approves that one call.
//!
//! Inside `execute_tool_plan` or a pipeline, a step's approval cannot wait
//! for a retry (the retry would run the earlier steps again): under the
//! 2026-07-28 flow such a step fails with `approval_pending`, telling the
//! model to call that tool on its own. A gate on the plan or pipeline itself
//! is asked like any other.

mod elicit;
mod flow;
pub(crate) mod form;
mod journal;
mod payload;
mod requests;
mod state;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{ElicitResult, InputRequiredResult, InputResponses};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use corral::{ApprovalDecision, CallContext, ReviewFuture, ReviewRequest, Reviewer, Tool};

pub use elicit::ElicitationReviewer;
pub(crate) use flow::{ClientOf, Flow};
pub use state::{DEFAULT_STATE_TTL, MIN_STATE_KEY_BYTES, StateError, StateKeyError};
pub(crate) use state::{States, use_once};

use payload::{Binding, Decided, Payload, Question};
pub(crate) use requests::RoundClient;

pub use requests::{MAX_CARRIED_ANSWER_BYTES, MAX_CARRIED_BYTES};

/// The key of the approval question in `inputRequests` and
/// `inputResponses`.
pub const INPUT_KEY: &str = "approval";

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
    /// The questions that deferred this round (a script's wave can defer
    /// several calls).
    deferred: Mutex<Vec<Question>>,
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

    /// The round a retry starts, from its verified `payload` and the
    /// `responses` the client brought.
    ///
    /// # Errors
    /// `invalid_params` when an approval question is pending and the
    /// responses have no readable answer to it.
    fn retry(
        payload: &Payload,
        responses: Option<&InputResponses>,
        parameters: &serde_json::Value,
    ) -> Result<Self, McpError> {
        let invalid = |message: String| McpError::invalid_params(message, None);
        let pending = match &payload.pending {
            None => None,
            Some(question) => {
                let answer = responses
                    .and_then(|responses| responses.get(INPUT_KEY))
                    .ok_or_else(|| {
                        invalid(format!(
                            "the retry's inputResponses have no `{INPUT_KEY}` answer"
                        ))
                    })?;
                let answer: ElicitResult =
                    serde_json::from_value(answer.clone()).map_err(|err| {
                        invalid(format!(
                            "the `{INPUT_KEY}` answer is not an elicitation result: {err}"
                        ))
                    })?;
                Some((question.clone(), answer, parameters.clone()))
            }
        };
        Ok(Self::with(payload.answered.clone(), pending))
    }

    /// The decisions to carry into the next round: the earlier rounds' and
    /// the one this round's answer made.
    fn decided(&self) -> Vec<(Question, Decided)> {
        let mut answered = self.earlier.clone();
        if let Some(made) = self.made.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            answered.push(made);
        }
        answered
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
        self.deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(question);
        ApprovalDecision::Defer
    }

    /// The deferred question `request` is (its occurrence aside).
    fn pending(&self, request: &ReviewRequest) -> Question {
        self.deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|q| **q == Question::of(request, q.occurrence))
            .cloned()
            .unwrap_or_else(|| Question::of(request, 0))
    }
}

/// What one `tools/call` of the input-required flow keeps to ask its
/// client, once the call ends waiting for an answer: an approval's, or the
/// guest's own requests' (`requests.rs`).
pub(crate) struct Round {
    reviewer: Arc<RoundReviewer>,
    client: Option<Arc<RoundClient>>,
    states: Arc<States>,
    arguments: serde_json::Value,
    /// The nonce of the state this retry used up (here, and next in the
    /// shared store).
    nonce: Option<String>,
}

impl Round {
    /// Sets up who answers the gated calls and the guest's client requests
    /// of a call of `tool` with `arguments` (the `request` of a client with
    /// `context`) in `options`:
    /// - a 2026-07-28 client gets a round of the input-required flow (fresh,
    ///   or from the retry's `requestState` and `inputResponses`, with the
    ///   journal of a script it carries), returned to ask with: a
    ///   [`RoundReviewer`] for approvals when it declared `elicitation`, and
    ///   a [`RoundClient`] for the guest's requests when the tool's policy
    ///   grants any;
    /// - a session client with elicitation gets an [`ElicitationReviewer`];
    /// - otherwise the host's reviewer decides, and `None` is returned.
    ///
    /// # Errors
    /// `invalid_params` for a state the retry may not use (forged, expired,
    /// replayed, for another call) or an approval answer it lacks.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare(
        context: &RequestContext<RoleServer>,
        client_of: &ClientOf,
        states: Option<&Arc<States>>,
        host: &corral::Host,
        tool: &Tool,
        arguments: &serde_json::Value,
        request: &rmcp::model::CallToolRequestParams,
        options: &mut corral::CallOptions,
    ) -> Result<Option<Self>, McpError> {
        let flow = client_of.flow();
        if flow == Flow::Elicitation {
            options.reviewer = Some(Arc::new(ElicitationReviewer::new(
                context.peer.clone(),
                host.clone(),
            )));
            return Ok(None);
        }
        let asks_client = client_of.stateless && tool.client_grants().any();
        let Some(states) = states.filter(|_| flow == Flow::InputRequired || asks_client) else {
            return Ok(None);
        };
        let invalid = |message: String| McpError::invalid_params(message, None);
        let payload = request
            .request_state
            .as_deref()
            .map(|sealed| {
                states
                    .open(sealed, &Binding::of(tool, arguments, &options.context))
                    .map_err(|err| invalid(err.to_string()))
            })
            .transpose()?;
        let responses = request.input_responses.as_ref();
        let reviewer = match &payload {
            Some(payload) => RoundReviewer::retry(payload, responses, &tool.spec().parameters)?,
            None => RoundReviewer::first(),
        };
        let journal = payload
            .as_ref()
            .and_then(|p| p.journal.as_deref().map(|sealed| (sealed, &p.nonce)))
            .map(|(sealed, nonce)| {
                states
                    .journals
                    .open(sealed, nonce)
                    .ok_or_else(|| invalid(StateError::Forged.to_string()))
            })
            .transpose()?;
        // Used up only once the answers have been read.
        if let Some(payload) = &payload {
            states
                .consume(&payload.nonce)
                .map_err(|err| invalid(err.to_string()))?;
        }
        if let Some(journal) = &journal {
            *options = std::mem::take(options).with_journal(journal.clone());
        }
        let reviewer = Arc::new(reviewer);
        if flow == Flow::InputRequired {
            options.reviewer = Some(Arc::new(Shared(reviewer.clone())));
        }
        let client = asks_client.then(|| {
            Arc::new(RoundClient::new(
                client_of.caps.clone().unwrap_or_default(),
                tool,
                payload.as_ref(),
                responses,
            ))
        });
        if let Some(client) = &client {
            *options = std::mem::take(options).with_client(client.clone());
        }
        Ok(Some(Self {
            reviewer,
            client,
            states: states.clone(),
            arguments: arguments.clone(),
            nonce: payload.map(|p| p.nonce),
        }))
    }

    /// The nonce of the state this round's retry used up, for the shared
    /// store to make it single use across replicas; `None` on a first round.
    pub fn nonce(&self) -> Option<&str> {
        self.nonce.as_deref()
    }

    /// How long a state is good for: how long its nonce must be remembered.
    pub fn state_ttl(&self) -> std::time::Duration {
        self.states.ttl()
    }

    /// What answers the guest's client requests this round, if the tool may
    /// ask any.
    pub fn client(&self) -> Option<Arc<RoundClient>> {
        self.client.clone()
    }

    /// The input-required result for a call of `tool` (called as `name`,
    /// with `context`) that ended with `result`, when it waits for the
    /// client: an approval of the tool itself or of the script it ran (with
    /// the script's journal), or the guest's own requests. A plan's or
    /// pipeline's step cannot be retried alone: `None`, and it fails with
    /// its message.
    ///
    /// # Errors
    /// `internal_error` when the form or the state cannot be built.
    pub fn question<T>(
        &self,
        tool: &Tool,
        name: &str,
        context: &CallContext,
        result: &Result<T, corral::CallError>,
    ) -> Result<Option<InputRequiredResult>, McpError> {
        let internal = |message: String| McpError::internal_error(message, None);
        let given = self
            .client
            .as_ref()
            .map(|client| client.given())
            .unwrap_or_default();
        let nonce = States::nonce();
        let mut payload = Payload {
            binding: Binding::of(tool, &self.arguments, context),
            answered: self.reviewer.decided(),
            pending: None,
            asked: Vec::new(),
            given,
            nonce,
            journal: None,
        };
        let requests = match result {
            Err(corral::CallError::ApprovalPending {
                request, journal, ..
            }) => {
                if request.tool != name && journal.is_none() {
                    return Ok(None);
                }
                let (message, requested_schema) =
                    form::question(request, &tool.spec().parameters).map_err(internal)?;
                payload.pending = Some(self.reviewer.pending(request));
                payload.journal = journal
                    .as_deref()
                    .map(|journal| self.states.journals.seal(journal, &payload.nonce))
                    .transpose()
                    .map_err(|err| internal(format!("cannot write the requestState: {err}")))?;
                form::input_requests(INPUT_KEY.to_string(), message, requested_schema)
            }
            Err(corral::CallError::InputRequired { tool: asked, .. }) if asked == name => {
                let Some(client) = &self.client else {
                    return Ok(None);
                };
                let (pending, requests) = client.deferred();
                if requests.is_empty() {
                    return Ok(None);
                }
                payload.asked = pending;
                requests
            }
            _ => return Ok(None),
        };
        let sealed = self
            .states
            .seal(&payload)
            .map_err(|err| internal(err.to_string()))?;
        Ok(Some(InputRequiredResult::new(Some(requests), Some(sealed))))
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
