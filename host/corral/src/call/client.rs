//! Who answers a guest's requests to its client (WIT 0.3.0
//! `corral:tool/client`: `elicit`, `sample`, `roots`): a
//! [`ClientRequests`] the caller puts in
//! [`CallOptions::client`](crate::CallOptions::client), the MCP server's
//! for the client that made the call. The sibling of
//! [`Reviewer`](crate::Reviewer): a reviewer decides approvals, this
//! answers questions.
//!
//! The sandbox has checked the plugin's `[client]` grants and limits and
//! paused the call's deadline; here the wait is bounded by the host's
//! review timeout (`--review-timeout-ms`, 120 s by default), a script's
//! deadline is paused too, a sampling request is charged to the tenant's
//! budget (`sampling.tokens_per_hour`; one it cannot pay for is
//! `over-budget` and never sent), and an elicitation's answer is checked
//! against the schema the guest asked with before the guest sees it.

use std::sync::Arc;
use std::time::Duration;

use corral_sandbox::{
    ClientAnswer, ClientFuture, ClientFutures, ClientHook, ClientRefusal, ClientRequest,
    Elicitation, ReviewPause,
};

use crate::call::resilience::limiter::Limiter;

/// Which call asks: what an answerer may show beside the request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Asking {
    /// The tool, by the name clients see.
    pub tool: String,
    /// Its plugin (file stem).
    pub plugin: String,
    /// Lowercase hex sha256 of the plugin's component.
    pub plugin_sha256: String,
    /// How long the answer may take before the guest gets `failed`.
    pub timeout: Duration,
}

/// Answers the client requests of the calls it is given to
/// ([`CallOptions::with_client`](crate::CallOptions::with_client)).
///
/// Return [`ClientRefusal::Unsupported`] for a request kind the client
/// cannot answer (it did not declare the MCP capability), and
/// [`ClientRefusal::Failed`] when asking failed; the guest gets the text.
/// Return [`ClientRefusal::Stop`] to end the call at the request instead
/// (the guest is stopped there and gets no answer): with
/// [`CallError::InputRequired`](crate::CallError::InputRequired) when the
/// answer comes with a retry of the whole call, which runs the guest again
/// from the start and must then answer the same requests (same kind, key
/// and content) from what the client sent.
pub trait ClientRequests: Send + Sync {
    /// Answers `request` of the call `asking` describes.
    fn ask<'a>(&'a self, asking: &'a Asking, request: ClientRequest) -> ClientFuture<'a>;

    /// Whether this client already holds the answer to `request`, so that
    /// asking it reaches no one (an MCP 2026-07-28 round answering a re-run
    /// guest from the answers its client sent): the tenant's sampling
    /// budget was charged when the request went out and is not charged
    /// again. `false` by default.
    fn remembers(&self, _request: &ClientRequest) -> bool {
        false
    }

    /// Answers several requests the guest asked at once (WIT `ask`), an
    /// answer per request in order. The default asks them one after
    /// another; a client that takes several at once overrides it.
    fn ask_all<'a>(
        &'a self,
        asking: &'a Asking,
        requests: Vec<ClientRequest>,
    ) -> ClientFutures<'a> {
        Box::pin(async move {
            let mut answers = Vec::with_capacity(requests.len());
            for request in requests {
                answers.push(self.ask(asking, request).await);
            }
            answers
        })
    }
}

/// The per-call [`ClientHook`]: the caller's [`ClientRequests`] under the
/// review timeout, with a script's deadline paused, the tenant's sampling
/// budget charged and elicitation answers checked.
pub(crate) struct ToolClient {
    pub client: Arc<dyn ClientRequests>,
    pub asking: Asking,
    pub review_pause: Option<ReviewPause>,
    /// The plugin's sampling budget per tenant, if its policy sets one.
    pub sampling_budget: Option<Arc<Limiter>>,
    /// The call's context, whose `tenant` the budget is charged to.
    pub context: Vec<(String, String)>,
}

impl ToolClient {
    /// `Err(over-budget)` for a sampling request the tenant's budget cannot
    /// pay for (its `max-tokens` are taken from the budget otherwise).
    fn charge(&self, request: &ClientRequest) -> Result<(), ClientRefusal> {
        let (Some(budget), ClientRequest::Sample { max_tokens, .. }) =
            (&self.sampling_budget, request)
        else {
            return Ok(());
        };
        if self.client.remembers(request) {
            return Ok(());
        }
        budget.take(&self.context, *max_tokens).map_err(|limit| {
            ClientRefusal::OverBudget(format!(
                "{max_tokens} tokens asked, and this tenant's sampling budget of {limit} is \
                 spent for now; it refills over the hour"
            ))
        })
    }
}

impl ClientHook for ToolClient {
    fn ask(&self, request: ClientRequest) -> ClientFuture<'_> {
        Box::pin(async move {
            let mut answers = self.ask_all(vec![request]).await;
            answers
                .pop()
                .unwrap_or_else(|| Err(ClientRefusal::Failed("the client gave no answer".into())))
        })
    }

    fn ask_all(&self, requests: Vec<ClientRequest>) -> ClientFutures<'_> {
        Box::pin(async move {
            let schemas: Vec<Option<serde_json::Value>> = requests
                .iter()
                .map(|request| match request {
                    ClientRequest::Elicit { schema, .. } => Some(schema.clone()),
                    _ => None,
                })
                .collect();
            // Over the tenant's budget: refused here, never sent.
            let charged: Vec<Result<(), ClientRefusal>> =
                requests.iter().map(|r| self.charge(r)).collect();
            let sent: Vec<ClientRequest> = requests
                .into_iter()
                .zip(&charged)
                .filter_map(|(request, charge)| charge.is_ok().then_some(request))
                .collect();
            let count = sent.len();
            self.review_pause.as_ref().inspect(|p| p.pause());
            let answers =
                tokio::time::timeout(self.asking.timeout, self.client.ask_all(&self.asking, sent))
                    .await;
            self.review_pause.as_ref().inspect(|p| p.resume());
            let mut answers = match answers {
                Ok(answers) => answers,
                Err(_) => {
                    let late = format!("no answer within {} s", self.asking.timeout.as_secs());
                    vec![Err(ClientRefusal::Failed(late)); count]
                }
            };
            answers.resize_with(count, || {
                Err(ClientRefusal::Failed("the client gave no answer".into()))
            });
            let mut answers = answers.into_iter();
            charged
                .into_iter()
                .map(|charge| match charge {
                    Ok(()) => answers.next().unwrap_or_else(|| {
                        Err(ClientRefusal::Failed("the client gave no answer".into()))
                    }),
                    Err(refusal) => Err(refusal),
                })
                .zip(schemas)
                .map(|(answer, schema)| {
                    let answer = answer?;
                    if let (Some(schema), ClientAnswer::Elicited(Elicitation::Accept(answers))) =
                        (schema, &answer)
                    {
                        check_answers(&schema, answers)?;
                    }
                    Ok(answer)
                })
                .collect()
        })
    }
}

/// The person's answers against the schema the guest asked with.
fn check_answers(
    schema: &serde_json::Value,
    answers: &serde_json::Value,
) -> Result<(), ClientRefusal> {
    let validator = jsonschema::validator_for(schema).map_err(|err| {
        ClientRefusal::Failed(format!("the requested schema does not compile: {err}"))
    })?;
    crate::model::schema::problems(&validator, answers).map_err(|problems| {
        ClientRefusal::Failed(format!(
            "the answers do not fit the requested schema: {}",
            problems.join("; ")
        ))
    })
}
