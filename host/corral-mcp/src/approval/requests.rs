//! A guest's requests to its client (WIT 0.3.0 `elicit`, `sample`,
//! `roots`, `ask`) for a 2026-07-28 client outside a task: the
//! input-required flow of that revision (basic/patterns/mrtr).
//!
//! A round runs the guest from the start. Each request it makes is
//! answered from, in order:
//! 1. the client's answers of earlier rounds, carried in the signed
//!    `requestState` ([`Payload::given`]) and matched to the request by
//!    [`Asked`] (key, kind, sha256 of the whole request, and which time in
//!    the run it came);
//! 2. this retry's `inputResponses`, under the request's key: with a state,
//!    only for a request that state says was pending; without one (a
//!    client that answers before it is asked), by key and kind alone. A
//!    client's answer to its own guest's question needs no proof that it
//!    was asked: it is the client's data either way, unlike an approval,
//!    which needs the state (`RoundReviewer`). An answer that is not the
//!    right kind of result counts as none, and is asked again.
//!
//! The first request with no answer ends the run: the guest is stopped
//! there ([`ClientRefusal::Stop`]), and every request of that `ask` still
//! unanswered goes to the client at once, under its key, with a new state
//! carrying the answers so far. The retry runs the guest again, and so on
//! for as many rounds as it asks.
//!
//! Re-running the guest repeats what it did before it asked, so only a
//! tool that is safe to run again ([`corral::Tool::safe_to_rerun`]) is
//! asked this way; for any other the call fails with a configuration error
//! saying what works. Requests of a kind the client did not declare never
//! go out: the guest gets `unsupported`, as in line.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, InputRequest, InputRequests, InputResponses};
use serde_json::Value;

use corral::{
    Asking, CallError, ClientAnswer, ClientFuture, ClientFutures, ClientRefusal, ClientRequest,
    ClientRequests,
};

use super::payload::{Asked, Payload};

/// Largest answer carried from one round to the next, in bytes of JSON:
/// 65 536. A larger one is given to the guest as `failed`, not carried.
pub const MAX_CARRIED_ANSWER_BYTES: usize = 64 * 1024;

/// Most bytes of answers one state carries, in bytes of JSON: 262 144.
/// Past it, a new answer is given to the guest as `failed`.
pub const MAX_CARRIED_BYTES: usize = 256 * 1024;

/// The client requests of one round of a 2026-07-28 client's call.
pub(crate) struct RoundClient {
    capabilities: ClientCapabilities,
    /// Whether the tool may be run again ([`corral::Tool::safe_to_rerun`]).
    safe_to_rerun: bool,
    /// Answers of earlier rounds.
    earlier: Vec<(Asked, Value)>,
    /// The requests the state says this retry answers; `None` without a
    /// state.
    pending: Option<Vec<Asked>>,
    /// This retry's `inputResponses`.
    responses: InputResponses,
    /// How often each request (occurrence 0) has come in this run.
    seen: Mutex<BTreeMap<Asked, u32>>,
    /// Answers taken from this retry's responses, to carry on.
    made: Mutex<Vec<(Asked, Value)>>,
    /// The requests left for the client, once the run stops.
    deferred: Mutex<Vec<(Asked, String, InputRequest)>>,
    /// Who asks what this round cannot answer, instead of stopping the run:
    /// the task a retry became (`tasks/client.rs`).
    then: std::sync::OnceLock<Arc<dyn ClientRequests>>,
}

impl RoundClient {
    /// A round of a call of `tool` by a client with `capabilities`, from the
    /// verified `payload` of its retry (if any) and the `responses` it sent.
    pub fn new(
        capabilities: ClientCapabilities,
        tool: &corral::Tool,
        payload: Option<&Payload>,
        responses: Option<&InputResponses>,
    ) -> Self {
        Self {
            capabilities,
            safe_to_rerun: tool.safe_to_rerun(),
            earlier: payload.map(|p| p.given.clone()).unwrap_or_default(),
            pending: payload.map(|p| p.asked.clone()),
            responses: responses.cloned().unwrap_or_default(),
            seen: Mutex::default(),
            made: Mutex::default(),
            deferred: Mutex::default(),
            then: std::sync::OnceLock::new(),
        }
    }

    /// Makes `then` ask what this round cannot answer, instead of stopping
    /// the run (a retry that became a task). Set once; later calls do
    /// nothing.
    pub fn then(&self, then: Arc<dyn ClientRequests>) {
        let _ = self.then.set(then);
    }

    /// Every answer to carry into the next round's state.
    pub fn given(&self) -> Vec<(Asked, Value)> {
        let mut given = self.earlier.clone();
        given.extend(lock(&self.made).iter().cloned());
        given
    }

    /// The requests left for the client: what the state records as pending,
    /// and the `inputRequests` to send.
    pub fn deferred(&self) -> (Vec<Asked>, InputRequests) {
        let deferred = lock(&self.deferred);
        let asked = deferred.iter().map(|(a, _, _)| a.clone()).collect();
        let requests = deferred
            .iter()
            .map(|(_, key, input)| (key.clone(), input.clone()))
            .collect();
        (asked, requests)
    }

    /// `request`, counting how often it came this run.
    fn asked(&self, request: &ClientRequest) -> Asked {
        let mut seen = lock(&self.seen);
        let count = seen.entry(Asked::of(request, 0)).or_insert(0);
        let asked = Asked::of(request, *count);
        *count += 1;
        asked
    }

    /// Whether this retry's responses may answer `asked`:
    /// with a state, only a request it says was pending; without one, any.
    fn expected(&self, asked: &Asked) -> bool {
        match &self.pending {
            Some(pending) => pending.contains(asked),
            None => true,
        }
    }

    /// The answer to `request` (asked as `asked`) this round knows, if any.
    fn known(
        &self,
        asked: &Asked,
        request: &ClientRequest,
    ) -> Option<Result<ClientAnswer, ClientRefusal>> {
        if let Some((_, value)) = self.earlier.iter().find(|(a, _)| a == asked) {
            return Some(crate::client::read_answer(request, value.clone()));
        }
        let value = self
            .responses
            .get(&asked.key)
            .filter(|_| self.expected(asked))?;
        // An answer that is not the right kind of result is asked again.
        let answer = crate::client::read_answer(request, value.clone()).ok()?;
        let bytes = value.to_string().len();
        let carried: usize = self.given().iter().map(|(_, v)| v.to_string().len()).sum();
        if bytes > MAX_CARRIED_ANSWER_BYTES || carried + bytes > MAX_CARRIED_BYTES {
            return Some(Err(ClientRefusal::Failed(format!(
                "the client's answer to `{}` is {bytes} bytes; answers carried between rounds \
                 are capped at {MAX_CARRIED_ANSWER_BYTES} bytes each and {MAX_CARRIED_BYTES} \
                 in all",
                asked.key
            ))));
        }
        lock(&self.made).push((asked.clone(), value.clone()));
        Some(Ok(answer))
    }

    /// Why `tool` cannot be asked by a retry.
    fn unsafe_to_rerun(tool: &str) -> CallError {
        CallError::Configuration {
            tool: tool.to_string(),
            message: "it asked its MCP client for input, and this client (MCP 2026-07-28, \
                      outside a task) answers only on a retry of the whole call, which would \
                      repeat what the tool did before it asked (it is not idempotent and its \
                      policy lets it write files or reach hosts over HTTP); run it as a task \
                      (`[tasks] mode = \"always\"` in the plugin's policy) or from a \
                      session-based client, which are asked during the call, or mark the tool \
                      idempotent if running it twice is harmless"
                .into(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl ClientRequests for RoundClient {
    /// An answer of an earlier round, or a usable one of this retry, for
    /// the next asking of `request` (its occurrence counted, not taken).
    fn remembers(&self, request: &ClientRequest) -> bool {
        let count = lock(&self.seen)
            .get(&Asked::of(request, 0))
            .copied()
            .unwrap_or(0);
        let asked = Asked::of(request, count);
        self.earlier.iter().any(|(a, _)| *a == asked)
            || self
                .responses
                .get(&asked.key)
                .filter(|_| self.expected(&asked))
                .is_some_and(|value| crate::client::read_answer(request, value.clone()).is_ok())
    }

    fn ask<'a>(&'a self, asking: &'a Asking, request: ClientRequest) -> ClientFuture<'a> {
        Box::pin(crate::client::only(self.ask_all(asking, vec![request])))
    }

    fn ask_all<'a>(
        &'a self,
        asking: &'a Asking,
        requests: Vec<ClientRequest>,
    ) -> ClientFutures<'a> {
        Box::pin(async move {
            let mut answers = Vec::with_capacity(requests.len());
            let mut left = Vec::new();
            for request in requests {
                if let Err(refusal) = crate::client::declared(&self.capabilities, &request) {
                    answers.push(Some(Err(refusal)));
                    continue;
                }
                let asked = self.asked(&request);
                match self.known(&asked, &request) {
                    Some(answer) => answers.push(Some(answer)),
                    None => {
                        left.push((asked, request));
                        answers.push(None);
                    }
                }
            }
            if left.is_empty() {
                return answers.into_iter().flatten().collect();
            }
            // A retry that became a task: the task asks the rest.
            if let Some(then) = self.then.get() {
                let asked = left.into_iter().map(|(_, request)| request).collect();
                let mut rest = then.ask_all(asking, asked).await.into_iter();
                return answers
                    .into_iter()
                    .map(|answer| {
                        answer.unwrap_or_else(|| {
                            rest.next().unwrap_or_else(|| {
                                Err(ClientRefusal::Failed("the client gave no answer".into()))
                            })
                        })
                    })
                    .collect();
            }
            // What goes to the client, and what cannot (a form it does not
            // take), in the order asked.
            let mut deferred = Vec::new();
            let mut refused = Vec::new();
            for (asked, request) in left {
                match crate::client::input_request(asking, &self.capabilities, &request) {
                    Ok(input) => {
                        deferred.push((asked, request.key().to_string(), input));
                        refused.push(None);
                    }
                    Err(refusal) => refused.push(Some(refusal)),
                }
            }
            let stop = if deferred.is_empty() {
                None
            } else if self.safe_to_rerun {
                Some(CallError::InputRequired {
                    tool: asking.tool.clone(),
                    asked: deferred.len(),
                })
            } else {
                Some(Self::unsafe_to_rerun(&asking.tool))
            };
            lock(&self.deferred).extend(deferred);
            let mut refused = refused.into_iter();
            answers
                .into_iter()
                .map(|answer| {
                    answer.unwrap_or_else(|| match (refused.next().flatten(), &stop) {
                        (Some(refusal), _) => Err(refusal),
                        (None, Some(stop)) => Err(ClientRefusal::Stop(Box::new(stop.clone()))),
                        (None, None) => {
                            Err(ClientRefusal::Failed("the client gave no answer".into()))
                        }
                    })
                })
                .collect()
        })
    }
}
