//! The `corral:tool/client` imports of contract 0.3.0: a guest's requests
//! to the MCP client that made the call (`elicit`, `sample`, `roots`).
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
    ClientError, ElicitAnswer, Host, ModelPreferences, Root, Sampled, SamplingContent,
    SamplingMessage,
};
use crate::bindings::v3::corral::tool::types::Role as WitRole;
use crate::client::{
    self as data, ClientAnswer, ClientRefusal, ClientRequest, Elicitation,
    elicitation_schema_problem,
};
use crate::parts::{Media, Role};

impl SandboxState {
    /// `denied`: the tool's policy grants no `what`; names the grant.
    fn denied(&self, what: &str, grant: &str) -> ClientError {
        ClientError::Denied(format!(
            "tool `{}` may not {what}: the policy of plugin `{}` grants no {grant}; \
             add it under `[client]` if the tool should",
            self.tool, self.plugin
        ))
    }

    /// Sends `request` to the call's hook with the budget paused.
    async fn ask_client(&mut self, request: ClientRequest) -> Result<ClientAnswer, ClientError> {
        let capability = request.capability();
        let Some(hook) = self.client.clone() else {
            return Err(ClientError::Unsupported(format!(
                "no MCP client made this call of `{}`, so no one can answer its {capability} \
                 request; call it from an MCP client that declares `{capability}`",
                self.tool
            )));
        };
        self.budget.pause();
        let answer = hook.ask(request).await;
        self.budget.resume();
        answer.map_err(|refusal| match refusal {
            ClientRefusal::Unsupported(text) => ClientError::Unsupported(text),
            ClientRefusal::OverBudget(text) => ClientError::OverBudget(text),
            ClientRefusal::Failed(text) => ClientError::Failed(text),
        })
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

impl Host for SandboxState {
    async fn elicit(
        &mut self,
        message: String,
        requested_schema: String,
    ) -> Result<ElicitAnswer, ClientError> {
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
        match self
            .ask_client(ClientRequest::Elicit { message, schema })
            .await?
        {
            ClientAnswer::Elicited(Elicitation::Accept(answers)) => {
                Ok(ElicitAnswer::Accept(answers.to_string()))
            }
            ClientAnswer::Elicited(Elicitation::Decline) => Ok(ElicitAnswer::Decline),
            ClientAnswer::Elicited(Elicitation::Cancel) => Ok(ElicitAnswer::Cancel),
            _ => Err(mismatched()),
        }
    }

    async fn sample(
        &mut self,
        messages: Vec<SamplingMessage>,
        preferences: Option<ModelPreferences>,
        max_tokens: u32,
    ) -> Result<Sampled, ClientError> {
        let Some(grant) = self.client_grants.sampling else {
            return Err(self.denied(
                "ask the client's model",
                "`sampling = { max_tokens = N, calls_per_call = N }`",
            ));
        };
        if max_tokens > grant.max_tokens {
            return Err(ClientError::OverBudget(format!(
                "{max_tokens} tokens asked; the policy allows at most {} per request",
                grant.max_tokens
            )));
        }
        if self.samples >= grant.calls_per_call {
            return Err(ClientError::OverBudget(format!(
                "this call already made {} sampling requests, the most the policy allows",
                grant.calls_per_call
            )));
        }
        self.samples += 1;
        let messages = messages
            .into_iter()
            .map(|m| {
                let content = match m.content {
                    SamplingContent::Text(text) => {
                        data::SamplingContent::Text(truncate(self.leaks.string("sampling", text)))
                    }
                    SamplingContent::Image(media) => {
                        data::SamplingContent::Image(Media::new(media.mime_type, media.data))
                    }
                    SamplingContent::Audio(media) => {
                        data::SamplingContent::Audio(Media::new(media.mime_type, media.data))
                    }
                };
                data::SamplingMessage::new(role(m.role), content)
            })
            .collect();
        let preferences = preferences.map(|p| data::ModelPreferences {
            hints: p.hints,
            cost_priority: p.cost_priority,
            speed_priority: p.speed_priority,
            intelligence_priority: p.intelligence_priority,
        });
        let request = ClientRequest::Sample {
            messages,
            preferences,
            max_tokens,
        };
        match self.ask_client(request).await? {
            ClientAnswer::Sampled(sampled) => Ok(Sampled {
                text: sampled.text,
                model: sampled.model,
                stop_reason: sampled.stop_reason,
            }),
            _ => Err(mismatched()),
        }
    }

    async fn roots(&mut self) -> Result<Vec<Root>, ClientError> {
        if !self.client_grants.roots {
            return Err(self.denied("learn the client's roots", "`roots = true`"));
        }
        match self.ask_client(ClientRequest::Roots).await? {
            ClientAnswer::Roots(roots) => Ok(roots
                .into_iter()
                .map(|r| Root {
                    uri: r.uri,
                    name: r.name,
                })
                .collect()),
            _ => Err(mismatched()),
        }
    }
}
