//! Asking the MCP client in the middle of a call (WIT 0.3.0 `client`): the
//! person ([`elicit`]), the client's model ([`sample`]) and its workspace
//! roots ([`roots`]), or several of these at once ([`ask`]). Each needs a
//! grant in the tool's policy (`[client]`); without it the host answers
//! [`ClientError::Denied`] at once.
//!
//! A stateless (MCP 2026-07-28) client outside a task is asked by a retry:
//! the call that asks stops there, and the client's retry runs the tool
//! again from the start, when the same requests get its answers. Ask
//! before acting, and ask the same things in the same order each run.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::__bindings::corral::tool::client as wit;
use crate::__bindings::corral::tool::types;

pub use crate::output::Audience as Role;

/// Why the client could not answer (WIT `client-error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// The policy grants no such request; the text names the grant.
    Denied(String),
    /// No one can answer: the client lacks the capability, or there is no
    /// MCP client (the CLI).
    Unsupported(String),
    /// Over a limit of the policy (tokens, requests per call, budget).
    OverBudget(String),
    /// The client failed, the answer was unusable, or the wait ran out.
    Failed(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, text) = match self {
            Self::Denied(t) => ("denied", t),
            Self::Unsupported(t) => ("unsupported", t),
            Self::OverBudget(t) => ("over budget", t),
            Self::Failed(t) => ("failed", t),
        };
        write!(f, "client request {kind}: {text}")
    }
}

impl std::error::Error for ClientError {}

impl From<ClientError> for crate::ToolError {
    fn from(err: ClientError) -> Self {
        crate::ToolError::failed(err.to_string())
    }
}

impl From<wit::ClientError> for ClientError {
    fn from(err: wit::ClientError) -> Self {
        match err {
            wit::ClientError::Denied(t) => Self::Denied(t),
            wit::ClientError::Unsupported(t) => Self::Unsupported(t),
            wit::ClientError::OverBudget(t) => Self::OverBudget(t),
            wit::ClientError::Failed(t) => Self::Failed(t),
        }
    }
}

/// The person's answer to [`elicit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// They answered.
    Accept(T),
    /// They said no.
    Decline,
    /// They dismissed the question.
    Cancel,
}

/// Asks the person for the fields of `T` (MCP elicitation, form mode):
/// `message` says what is needed and why; the form is `T`'s JSON Schema,
/// whose properties must be primitives (string, number, integer, boolean,
/// enum). The answer is checked by the host and decoded into `T`.
///
/// # Errors
/// [`ClientError`] when no one can answer or the answer does not decode.
pub fn elicit<T: DeserializeOwned + schemars::JsonSchema>(
    message: &str,
) -> Result<Elicited<T>, ClientError> {
    let schema = crate::__private::schema_of::<T>();
    match wit::elicit(message, &schema)? {
        wit::ElicitAnswer::Accept(json) => serde_json::from_str(&json)
            .map(Elicited::Accept)
            .map_err(|err| ClientError::Failed(format!("the answer does not decode: {err}"))),
        wit::ElicitAnswer::Decline => Ok(Elicited::Decline),
        wit::ElicitAnswer::Cancel => Ok(Elicited::Cancel),
    }
}

/// One message for the client's model: `role` says text.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    role: Role,
    text: String,
}

impl Message {
    /// A message of the person's (`user`).
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            text: text.into(),
        }
    }

    /// A message of the model's (`assistant`), for a conversation so far.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            text: text.into(),
        }
    }
}

impl Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        })
    }
}

/// The model's answer to [`sample`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sampled {
    /// What it wrote (untrusted text).
    pub text: String,
    /// The model, as the client names it.
    pub model: String,
    /// Why it stopped, if the client says.
    pub stop_reason: Option<String>,
}

/// Asks the client's model to continue `messages`, writing at most
/// `max_tokens` tokens (MCP sampling).
///
/// # Errors
/// [`ClientError`]: no grant, over the policy's limits, no client that
/// samples, or a failed request.
pub fn sample(messages: &[Message], max_tokens: u32) -> Result<Sampled, ClientError> {
    let sampled = wit::sample(&wit_messages(messages), None, max_tokens)?;
    Ok(sampled_of(sampled))
}

fn sampled_of(sampled: wit::Sampled) -> Sampled {
    Sampled {
        text: sampled.text,
        model: sampled.model,
        stop_reason: sampled.stop_reason,
    }
}

fn wit_messages(messages: &[Message]) -> Vec<wit::SamplingMessage> {
    messages
        .iter()
        .map(|m| wit::SamplingMessage {
            role: match m.role {
                Role::User => types::Role::User,
                Role::Assistant => types::Role::Assistant,
            },
            content: wit::SamplingContent::Text(m.text.clone()),
        })
        .collect()
}

/// A workspace root of the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Its URI, usually `file://...` (no grant to read it).
    pub uri: String,
    /// Its name, if given.
    pub name: Option<String>,
}

/// The client's workspace roots (MCP `roots/list`).
///
/// # Errors
/// [`ClientError`]: no grant, or no client that has roots.
pub fn roots() -> Result<Vec<Root>, ClientError> {
    Ok(roots_of(wit::roots()?))
}

fn roots_of(roots: Vec<wit::Root>) -> Vec<Root> {
    roots
        .into_iter()
        .map(|r| Root {
            uri: r.uri,
            name: r.name,
        })
        .collect()
}

/// One of several requests asked at once with [`ask`].
#[derive(Debug, Clone)]
pub struct Request {
    key: Option<String>,
    request: wit::Request,
}

impl Request {
    fn of(request: wit::Request) -> Self {
        Self { key: None, request }
    }

    /// As [`elicit`]: the fields of `T`, with `message`.
    pub fn elicit<T: schemars::JsonSchema>(message: &str) -> Self {
        Self::of(wit::Request::Elicit(wit::ElicitRequest {
            message: message.to_owned(),
            requested_schema: crate::__private::schema_of::<T>(),
        }))
    }

    /// As [`sample`].
    pub fn sample(messages: &[Message], max_tokens: u32) -> Self {
        Self::of(wit::Request::Sample(wit::SampleRequest {
            messages: wit_messages(messages),
            preferences: None,
            max_tokens,
        }))
    }

    /// As [`roots`].
    pub fn roots() -> Self {
        Self::of(wit::Request::Roots)
    }

    /// This request under the name `key`: 1 to 64 ASCII letters, digits,
    /// `_`, `-` or `.`, unique among the requests of one [`ask`]. An MCP
    /// 2026-07-28 client sees it as the key of `inputRequests`. Without
    /// one, the host names it `elicit-1`, `sample-1`, `roots-1`, ... A key
    /// that breaks the rules makes the request fail with
    /// [`ClientError::Failed`].
    pub fn keyed(mut self, key: &str) -> Self {
        self.key = Some(key.to_owned());
        self
    }
}

/// The answer to one request of [`ask`].
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// To [`Request::elicit`]: the answers as JSON (decode them with
    /// `serde_json::from_value`).
    Elicited(Elicited<serde_json::Value>),
    /// To [`Request::sample`].
    Sampled(Sampled),
    /// To [`Request::roots`].
    Roots(Vec<Root>),
}

/// Asks several requests at once (at most 8): a session-based client gets
/// them together, a stateless one in one round (each under its
/// [key](Request::keyed)). An answer per request, in order; each is
/// checked against the policy on its own.
pub fn ask(requests: Vec<Request>) -> Vec<Result<Answer, ClientError>> {
    let requests: Vec<wit::InputRequest> = requests
        .into_iter()
        .map(|r| wit::InputRequest {
            key: r.key,
            request: r.request,
        })
        .collect();
    wit::ask(&requests)
        .into_iter()
        .map(|answer| {
            Ok(match answer? {
                wit::Answer::Elicited(wit::ElicitAnswer::Accept(json)) => {
                    let value = serde_json::from_str(&json).map_err(|err| {
                        ClientError::Failed(format!("the answer is not JSON: {err}"))
                    })?;
                    Answer::Elicited(Elicited::Accept(value))
                }
                wit::Answer::Elicited(wit::ElicitAnswer::Decline) => {
                    Answer::Elicited(Elicited::Decline)
                }
                wit::Answer::Elicited(wit::ElicitAnswer::Cancel) => {
                    Answer::Elicited(Elicited::Cancel)
                }
                wit::Answer::Sampled(sampled) => Answer::Sampled(sampled_of(sampled)),
                wit::Answer::Roots(roots) => Answer::Roots(roots_of(roots)),
            })
        })
        .collect()
}
