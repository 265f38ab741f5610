//! The `corral:tool/client` imports of contract 0.3.0: a guest's requests
//! to the MCP client that made the call (`elicit`, `sample`, `roots`, and
//! several at once with `ask`).
//!
//! Each request is checked here, in this order: the policy's grant
//! (`denied`, naming the grant to add), the request's own rules (a flat
//! elicitation form; sampling's `max_tokens` and `calls_per_call`:
//! `over-budget`), then it goes to the call's [`ClientHook`] with the
//! wall-clock budget paused. A call without a hook (the CLI, the library
//! without a client) gets `unsupported`.

use super::SandboxState;
use super::imports::truncate;
use crate::bindings::v3::corral::tool::client::{
    Answer, ClientError, ElicitAnswer, ElicitRequest, Host, ModelPreferences, Request, Root,
    SampleRequest, Sampled, SamplingContent, SamplingMessage,
};
use crate::bindings::v3::corral::tool::types::Role as WitRole;
use crate::client::{
    self as data, ClientAnswer, ClientRefusal, ClientRequest, Elicitation,
    elicitation_schema_problem,
};
use crate::parts::{Media, Role};

/// The most requests one `ask` takes: 8.
pub const MAX_ASKED_AT_ONCE: usize = 8;

impl SandboxState {
    /// `denied`: the tool's policy grants no `what`; names the grant.
    fn denied(&self, what: &str, grant: &str) -> ClientError {
        ClientError::Denied(format!(
            "tool `{}` may not {what}: the policy of plugin `{}` grants no {grant}; \
             add it under `[client]` if the tool should",
            self.tool, self.plugin
        ))
    }

    /// `unsupported`: no hook, so no client, for `capability`.
    fn no_client(&self, capability: &str) -> ClientError {
        ClientError::Unsupported(format!(
            "no MCP client made this call of `{}`, so no one can answer its {capability} \
             request; call it from an MCP client that declares `{capability}`",
            self.tool
        ))
    }

    /// A guest's request checked against the grants and limits, as the
    /// hook takes it.
    fn prepare(&mut self, request: Request) -> Result<ClientRequest, ClientError> {
        match request {
            Request::Elicit(ElicitRequest {
                message,
                requested_schema,
            }) => {
                if !self.client_grants.elicitation {
                    return Err(self.denied("ask the person", "`elicitation = true`"));
                }
                let schema = serde_json::from_str(&requested_schema).map_err(|err| {
                    ClientError::Failed(format!("the requested schema is not JSON: {err}"))
                })?;
                if let Some(problem) = elicitation_schema_problem(&schema) {
                    return Err(ClientError::Failed(problem));
                }
                let message = truncate(self.leaks.string("elicitation", message));
                Ok(ClientRequest::Elicit { message, schema })
            }
            Request::Sample(request) => self.prepare_sample(request),
            Request::Roots => {
                if !self.client_grants.roots {
                    return Err(self.denied("learn the client's roots", "`roots = true`"));
                }
                Ok(ClientRequest::Roots)
            }
        }
    }

    fn prepare_sample(&mut self, request: SampleRequest) -> Result<ClientRequest, ClientError> {
        let Some(grant) = self.client_grants.sampling else {
            return Err(self.denied(
                "ask the client's model",
                "`sampling = { max_tokens = N, calls_per_call = N }`",
            ));
        };
        if request.max_tokens > grant.max_tokens {
            return Err(ClientError::OverBudget(format!(
                "{} tokens asked; the policy allows at most {} per request",
                request.max_tokens, grant.max_tokens
            )));
        }
        if self.samples >= grant.calls_per_call {
            return Err(ClientError::OverBudget(format!(
                "this call already made {} sampling requests, the most the policy allows",
                grant.calls_per_call
            )));
        }
        self.samples += 1;
        let messages = request
            .messages
            .into_iter()
            .map(|m| {
                let content = match m.content {
                    SamplingContent::Text(text) => {
                        data::SamplingContent::Text(truncate(self.leaks.string("sampling", text)))
                    }
                    SamplingContent::Image(mut media) => {
                        self.leaks.bytes("sampling", &mut media.data);
                        data::SamplingContent::Image(Media::new(media.mime_type, media.data))
                    }
                    SamplingContent::Audio(mut media) => {
                        self.leaks.bytes("sampling", &mut media.data);
                        data::SamplingContent::Audio(Media::new(media.mime_type, media.data))
                    }
                };
                data::SamplingMessage::new(role(m.role), content)
            })
            .collect();
        let preferences = request.preferences.map(|p| data::ModelPreferences {
            hints: p.hints,
            cost_priority: p.cost_priority,
            speed_priority: p.speed_priority,
            intelligence_priority: p.intelligence_priority,
        });
        Ok(ClientRequest::Sample {
            messages,
            preferences,
            max_tokens: request.max_tokens,
        })
    }

    /// Sends the prepared `requests` to the hook at once, with the budget
    /// paused; an answer per request, in order.
    async fn ask_client(
        &mut self,
        requests: Vec<ClientRequest>,
    ) -> Vec<Result<ClientAnswer, ClientError>> {
        let Some(hook) = self.client.clone() else {
            return requests
                .iter()
                .map(|r| Err(self.no_client(r.capability())))
                .collect();
        };
        self.budget.pause();
        let answers = hook.ask_all(requests).await;
        self.budget.resume();
        answers
            .into_iter()
            .map(|answer| {
                answer.map_err(|refusal| match refusal {
                    ClientRefusal::Unsupported(text) => ClientError::Unsupported(text),
                    ClientRefusal::OverBudget(text) => ClientError::OverBudget(text),
                    ClientRefusal::Failed(text) => ClientError::Failed(text),
                })
            })
            .collect()
    }

    /// One request, prepared, asked and answered.
    async fn ask_one(&mut self, request: Request) -> Result<Answer, ClientError> {
        let prepared = self.prepare(request)?;
        let mut answers = self.ask_client(vec![prepared]).await;
        answers
            .pop()
            .unwrap_or_else(|| Err(mismatched()))
            .map(answer)
    }
}

fn role(role: WitRole) -> Role {
    match role {
        WitRole::User => Role::User,
        WitRole::Assistant => Role::Assistant,
    }
}

fn mismatched() -> ClientError {
    ClientError::Failed("the client answered a different request".into())
}

/// The WIT answer for a client's.
fn answer(answer: ClientAnswer) -> Answer {
    match answer {
        ClientAnswer::Elicited(Elicitation::Accept(answers)) => {
            Answer::Elicited(ElicitAnswer::Accept(answers.to_string()))
        }
        ClientAnswer::Elicited(Elicitation::Decline) => Answer::Elicited(ElicitAnswer::Decline),
        ClientAnswer::Elicited(Elicitation::Cancel) => Answer::Elicited(ElicitAnswer::Cancel),
        ClientAnswer::Sampled(sampled) => Answer::Sampled(Sampled {
            text: sampled.text,
            model: sampled.model,
            stop_reason: sampled.stop_reason,
        }),
        ClientAnswer::Roots(roots) => Answer::Roots(
            roots
                .into_iter()
                .map(|r| Root {
                    uri: r.uri,
                    name: r.name,
                })
                .collect(),
        ),
    }
}

impl Host for SandboxState {
    async fn elicit(
        &mut self,
        message: String,
        requested_schema: String,
    ) -> Result<ElicitAnswer, ClientError> {
        let request = Request::Elicit(ElicitRequest {
            message,
            requested_schema,
        });
        match self.ask_one(request).await? {
            Answer::Elicited(answer) => Ok(answer),
            _ => Err(mismatched()),
        }
    }

    async fn sample(
        &mut self,
        messages: Vec<SamplingMessage>,
        preferences: Option<ModelPreferences>,
        max_tokens: u32,
    ) -> Result<Sampled, ClientError> {
        let request = Request::Sample(SampleRequest {
            messages,
            preferences,
            max_tokens,
        });
        match self.ask_one(request).await? {
            Answer::Sampled(sampled) => Ok(sampled),
            _ => Err(mismatched()),
        }
    }

    async fn roots(&mut self) -> Result<Vec<Root>, ClientError> {
        match self.ask_one(Request::Roots).await? {
            Answer::Roots(roots) => Ok(roots),
            _ => Err(mismatched()),
        }
    }

    async fn ask(&mut self, requests: Vec<Request>) -> Vec<Result<Answer, ClientError>> {
        if requests.len() > MAX_ASKED_AT_ONCE {
            let refusal = format!(
                "{} requests asked at once; `ask` takes at most {MAX_ASKED_AT_ONCE}",
                requests.len()
            );
            return requests
                .iter()
                .map(|_| Err(ClientError::Failed(refusal.clone())))
                .collect();
        }
        // Each request checked on its own; the ones that pass go together.
        let prepared: Vec<Result<ClientRequest, ClientError>> =
            requests.into_iter().map(|r| self.prepare(r)).collect();
        let ready: Vec<ClientRequest> = prepared
            .iter()
            .filter_map(|p| p.as_ref().ok().cloned())
            .collect();
        let mut answers = self.ask_client(ready).await.into_iter();
        prepared
            .into_iter()
            .map(|p| match p {
                Ok(_) => answers
                    .next()
                    .unwrap_or_else(|| Err(mismatched()))
                    .map(answer),
                Err(err) => Err(err),
            })
            .collect()
    }
}
