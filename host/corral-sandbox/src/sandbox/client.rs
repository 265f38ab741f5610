//! The `corral:tool/client` imports of contract 0.3.0: a guest's requests
//! to the MCP client that made the call (`elicit`, `sample`, `roots`, and
//! several at once with `ask`).
//!
//! Each request is checked here, in this order: the policy's grant
//! (`denied`, naming the grant to add), the request's own rules (a flat
//! elicitation form; sampling's `max_tokens` and `calls_per_call`:
//! `over-budget`; the key a guest gives it), then it goes to the call's
//! [`ClientHook`] with the wall-clock budget paused. A call without a hook
//! (the CLI, the library without a client) gets `unsupported`.
//!
//! A hook may answer [`ClientRefusal::Stop`]: the guest is then stopped
//! where it asked (the import traps, so it does nothing after the
//! request), and the call ends with the hook's error. That is how an MCP
//! 2026-07-28 client is asked outside a task: the call ends
//! input-required, and its retry runs it again with the answers.

use super::SandboxState;
use super::imports::truncate;
use crate::bindings::v3::corral::tool::client::{
    Answer, ClientError, ElicitAnswer, ElicitRequest, Host, InputRequest, ModelPreferences,
    Request, Root, SampleRequest, Sampled, SamplingContent, SamplingMessage,
};
use crate::bindings::v3::corral::tool::types::Role as WitRole;
use crate::client::{
    self as data, ClientAnswer, ClientRefusal, ClientRequest, Elicitation,
    elicitation_schema_problem, key_problem,
};
use crate::parts::{Media, Role};
use crate::tape::{ClientReply, Event, Tape};

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

    /// The request's key: the guest's, checked, or the host's next for its
    /// kind (`elicit-1`, ...).
    fn key(&mut self, key: Option<String>, request: &Request) -> Result<String, ClientError> {
        if let Some(key) = key {
            return match key_problem(&key) {
                Some(problem) => Err(ClientError::Failed(problem)),
                None => Ok(key),
            };
        }
        let (kind, slot) = match request {
            Request::Elicit(_) => ("elicit", 0),
            Request::Sample(_) => ("sample", 1),
            Request::Roots => ("roots", 2),
        };
        self.unnamed[slot] += 1;
        Ok(format!("{kind}-{}", self.unnamed[slot]))
    }

    /// A guest's request checked against the grants and limits, as the
    /// hook takes it.
    fn prepare(
        &mut self,
        key: Option<String>,
        request: Request,
    ) -> Result<ClientRequest, ClientError> {
        let key = self.key(key, &request)?;
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
                Ok(ClientRequest::Elicit {
                    key,
                    message,
                    schema,
                })
            }
            Request::Sample(request) => self.prepare_sample(key, request),
            Request::Roots => {
                if !self.client_grants.roots {
                    return Err(self.denied("learn the client's roots", "`roots = true`"));
                }
                Ok(ClientRequest::Roots { key })
            }
        }
    }

    fn prepare_sample(
        &mut self,
        key: String,
        request: SampleRequest,
    ) -> Result<ClientRequest, ClientError> {
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
            key,
            messages,
            preferences,
            max_tokens: request.max_tokens,
        })
    }

    /// Sends the prepared `requests` to the hook at once, with the budget
    /// paused; an answer per request, in order.
    ///
    /// # Errors
    /// A trap when the hook stops the call ([`ClientRefusal::Stop`]): its
    /// error is kept for the call's result.
    async fn ask_client(
        &mut self,
        requests: Vec<ClientRequest>,
    ) -> wasmtime::Result<Vec<Result<ClientAnswer, ClientError>>> {
        let asked: Vec<String> = requests
            .iter()
            .map(|r| serde_json::to_string(r).unwrap_or_default())
            .collect();
        if let Some(tape) = self.tape.clone().filter(|t| t.is_replay()) {
            return self.replayed(&tape, asked);
        }
        let answers = self.asked_client(requests).await;
        if let Some(tape) = self.tape.as_ref() {
            let replies = match &answers {
                Ok(answers) => answers.iter().map(reply).collect(),
                Err(stop) => vec![ClientReply::Stopped(stop.to_string())],
            };
            tape.push(Event::Client {
                requests: asked,
                answers: replies,
            });
        }
        answers
    }

    /// A replay's answers to `asked`, from the recording; a departure gets
    /// `unsupported` for each.
    fn replayed(
        &mut self,
        tape: &Tape,
        asked: Vec<String>,
    ) -> wasmtime::Result<Vec<Result<ClientAnswer, ClientError>>> {
        let got = Event::Client {
            requests: asked.clone(),
            answers: Vec::new(),
        };
        let answer = tape.answer(
            &got,
            |event| matches!(event, Event::Client { requests, .. } if *requests == asked),
        );
        let Some(Event::Client { answers, .. }) = answer else {
            let departed = "the replay departed from its recording here".to_owned();
            return Ok(asked
                .iter()
                .map(|_| Err(ClientError::Unsupported(departed.clone())))
                .collect());
        };
        let mut out = Vec::with_capacity(answers.len());
        for reply in answers {
            out.push(match reply {
                ClientReply::Answer(value) => {
                    serde_json::from_value(value).map_err(|_| mismatched())
                }
                ClientReply::Unsupported(text) => Err(ClientError::Unsupported(text)),
                ClientReply::OverBudget(text) => Err(ClientError::OverBudget(text)),
                ClientReply::Failed(text) => Err(ClientError::Failed(text)),
                ClientReply::Stopped(reason) => {
                    self.config_error = Some(crate::CallError::Configuration {
                        tool: self.tool.to_string(),
                        message: reason.clone(),
                    });
                    return Err(wasmtime::Error::msg(format!(
                        "the guest was stopped at its client request: {reason}"
                    )));
                }
            });
        }
        Ok(out)
    }

    /// The call's hook asked, with the wall-clock budget paused.
    async fn asked_client(
        &mut self,
        requests: Vec<ClientRequest>,
    ) -> wasmtime::Result<Vec<Result<ClientAnswer, ClientError>>> {
        let Some(hook) = self.client.clone() else {
            return Ok(requests
                .iter()
                .map(|r| Err(self.no_client(r.capability())))
                .collect());
        };
        self.budget.pause();
        let answers = hook.ask_all(requests).await;
        self.budget.resume();
        let mut out = Vec::with_capacity(answers.len());
        for answer in answers {
            out.push(match answer {
                Ok(answer) => Ok(answer),
                Err(ClientRefusal::Unsupported(text)) => Err(ClientError::Unsupported(text)),
                Err(ClientRefusal::OverBudget(text)) => Err(ClientError::OverBudget(text)),
                Err(ClientRefusal::Failed(text)) => Err(ClientError::Failed(text)),
                Err(ClientRefusal::Stop(stop)) => {
                    let reason = stop.to_string();
                    self.config_error = Some(*stop);
                    return Err(wasmtime::Error::msg(format!(
                        "the guest was stopped at its client request: {reason}"
                    )));
                }
            });
        }
        Ok(out)
    }

    /// One request, prepared, asked and answered.
    async fn ask_one(&mut self, request: Request) -> wasmtime::Result<Result<Answer, ClientError>> {
        let prepared = match self.prepare(None, request) {
            Ok(prepared) => prepared,
            Err(err) => return Ok(Err(err)),
        };
        let mut answers = self.ask_client(vec![prepared]).await?;
        Ok(answers
            .pop()
            .unwrap_or_else(|| Err(mismatched()))
            .map(answer))
    }
}

/// An answer as a tape keeps it.
fn reply(answer: &Result<ClientAnswer, ClientError>) -> ClientReply {
    match answer {
        Ok(answer) => ClientReply::Answer(serde_json::to_value(answer).unwrap_or_default()),
        Err(ClientError::Unsupported(text)) => ClientReply::Unsupported(text.clone()),
        Err(ClientError::OverBudget(text)) => ClientReply::OverBudget(text.clone()),
        Err(ClientError::Failed(text)) => ClientReply::Failed(text.clone()),
        Err(other) => ClientReply::Failed(format!("{other:?}")),
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
    ) -> wasmtime::Result<Result<ElicitAnswer, ClientError>> {
        let request = Request::Elicit(ElicitRequest {
            message,
            requested_schema,
        });
        Ok(match self.ask_one(request).await? {
            Ok(Answer::Elicited(answer)) => Ok(answer),
            Ok(_) => Err(mismatched()),
            Err(err) => Err(err),
        })
    }

    async fn sample(
        &mut self,
        messages: Vec<SamplingMessage>,
        preferences: Option<ModelPreferences>,
        max_tokens: u32,
    ) -> wasmtime::Result<Result<Sampled, ClientError>> {
        let request = Request::Sample(SampleRequest {
            messages,
            preferences,
            max_tokens,
        });
        Ok(match self.ask_one(request).await? {
            Ok(Answer::Sampled(sampled)) => Ok(sampled),
            Ok(_) => Err(mismatched()),
            Err(err) => Err(err),
        })
    }

    async fn roots(&mut self) -> wasmtime::Result<Result<Vec<Root>, ClientError>> {
        Ok(match self.ask_one(Request::Roots).await? {
            Ok(Answer::Roots(roots)) => Ok(roots),
            Ok(_) => Err(mismatched()),
            Err(err) => Err(err),
        })
    }

    async fn ask(
        &mut self,
        requests: Vec<InputRequest>,
    ) -> wasmtime::Result<Vec<Result<Answer, ClientError>>> {
        if requests.len() > MAX_ASKED_AT_ONCE {
            let refusal = format!(
                "{} requests asked at once; `ask` takes at most {MAX_ASKED_AT_ONCE}",
                requests.len()
            );
            return Ok(requests
                .iter()
                .map(|_| Err(ClientError::Failed(refusal.clone())))
                .collect());
        }
        // Each request checked on its own; the ones that pass go together.
        let mut keys = std::collections::BTreeSet::new();
        let mut prepared: Vec<Result<ClientRequest, ClientError>> =
            Vec::with_capacity(requests.len());
        for InputRequest { key, request } in requests {
            let checked = self.prepare(key, request).and_then(|request| {
                if keys.insert(request.key().to_string()) {
                    Ok(request)
                } else {
                    Err(ClientError::Failed(format!(
                        "two requests of one `ask` are named `{}`; give each its own key",
                        request.key()
                    )))
                }
            });
            prepared.push(checked);
        }
        let ready: Vec<ClientRequest> = prepared
            .iter()
            .filter_map(|p| p.as_ref().ok().cloned())
            .collect();
        let mut answers = self.ask_client(ready).await?.into_iter();
        Ok(prepared
            .into_iter()
            .map(|p| match p {
                Ok(_) => answers
                    .next()
                    .unwrap_or_else(|| Err(mismatched()))
                    .map(answer),
                Err(err) => Err(err),
            })
            .collect())
    }
}
