//! A guest's requests to the MCP client that made its call (WIT 0.3.0
//! `corral:tool/client`), as data: what a policy grants ([`ClientGrants`]),
//! what the guest asks ([`ClientRequest`]), what comes back
//! ([`ClientAnswer`], [`ClientRefusal`]), and the hook a caller installs to
//! answer them ([`ClientHook`]). The sandbox checks the grants and limits
//! and pauses the call's deadline; the library and the MCP server decide
//! who answers.

use std::future::Future;
use std::pin::Pin;

use serde::Serialize;
use serde_json::Value;

use crate::CallError;
use crate::parts::{Media, Role};

/// What a plugin's policy lets its guest ask the client (`[client]`).
/// Deny by default: [`ClientGrants::default`] grants nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ClientGrants {
    /// `elicit`: ask the person for input.
    pub elicitation: bool,
    /// `sample`: ask the client's model, within these limits.
    pub sampling: Option<SamplingGrant>,
    /// `roots`: learn the client's workspace roots.
    pub roots: bool,
}

impl ClientGrants {
    /// Grants for `elicitation`, `sampling` and `roots`.
    pub fn new(elicitation: bool, sampling: Option<SamplingGrant>, roots: bool) -> Self {
        Self {
            elicitation,
            sampling,
            roots,
        }
    }

    /// Whether anything is granted.
    pub fn any(&self) -> bool {
        self.elicitation || self.sampling.is_some() || self.roots
    }
}

/// The limits of `[client] sampling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SamplingGrant {
    /// The most tokens one request may ask the model for.
    pub max_tokens: u32,
    /// The most `sample` requests one call may make.
    pub calls_per_call: u32,
    /// The most tokens one tenant's calls of the plugin may ask for in an
    /// hour (each request counts its `max-tokens`), or no such budget.
    pub tokens_per_hour: Option<u32>,
}

impl SamplingGrant {
    /// At most `max_tokens` per request and `calls_per_call` requests per
    /// call, with no per-tenant budget.
    pub fn new(max_tokens: u32, calls_per_call: u32) -> Self {
        Self {
            max_tokens,
            calls_per_call,
            tokens_per_hour: None,
        }
    }

    /// This grant with a per-tenant budget of `tokens` an hour.
    pub fn with_tokens_per_hour(mut self, tokens: u32) -> Self {
        self.tokens_per_hour = Some(tokens);
        self
    }
}

/// What a guest asks the client. Every request has a `key`: the name the
/// guest gave it (WIT `input-request.key`, checked by [`key_problem`]) or
/// the host's, its kind and place in the call (`elicit-1`, `sample-2`,
/// `roots-1`), unique among the requests asked at once. An MCP 2026-07-28
/// client sees it as the key of `inputRequests`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum ClientRequest {
    /// Ask the person (MCP elicitation, form mode).
    Elicit {
        /// Its name.
        key: String,
        /// The plugin's words: cut, leak-scanned, untrusted.
        message: String,
        /// An object schema of primitive properties, checked.
        schema: Value,
    },
    /// Ask the client's model (MCP sampling).
    Sample {
        /// Its name.
        key: String,
        /// The conversation so far.
        messages: Vec<SamplingMessage>,
        /// What the tool would like of the model.
        preferences: Option<ModelPreferences>,
        /// The most tokens to write, within the grant.
        max_tokens: u32,
    },
    /// The client's workspace roots.
    Roots {
        /// Its name.
        key: String,
    },
}

impl ClientRequest {
    /// `elicitation`, `sampling` or `roots`: the MCP client capability the
    /// request needs.
    pub fn capability(&self) -> &'static str {
        match self {
            Self::Elicit { .. } => "elicitation",
            Self::Sample { .. } => "sampling",
            Self::Roots { .. } => "roots",
        }
    }

    /// `elicit`, `sample` or `roots`: the kind, as default keys spell it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Elicit { .. } => "elicit",
            Self::Sample { .. } => "sample",
            Self::Roots { .. } => "roots",
        }
    }

    /// Its name (see the type's doc).
    pub fn key(&self) -> &str {
        match self {
            Self::Elicit { key, .. } | Self::Sample { key, .. } | Self::Roots { key } => key,
        }
    }
}

/// Longest request key a guest may give, in bytes: 64.
pub const MAX_KEY_BYTES: usize = 64;

/// Why a guest's request key is refused, or `None` for 1 to
/// [`MAX_KEY_BYTES`] ASCII letters, digits, `_`, `-` or `.` (WIT
/// `input-request.key`).
pub fn key_problem(key: &str) -> Option<String> {
    let fits = !key.is_empty()
        && key.len() <= MAX_KEY_BYTES
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    (!fits).then(|| {
        format!(
            "the request key `{}` must be 1 to {MAX_KEY_BYTES} ASCII letters, digits, `_`, `-` \
             or `.`",
            corral_names::text::escape(&corral_names::text::truncate(key.to_string(), 80))
        )
    })
}

/// One message of a sampling request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What it says.
    pub content: SamplingContent,
}

impl SamplingMessage {
    /// `content` said by `role`.
    pub fn new(role: Role, content: SamplingContent) -> Self {
        Self { role, content }
    }
}

/// What a sampling message holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SamplingContent {
    /// Text (the plugin's words).
    Text(String),
    /// An image.
    Image(Media),
    /// Audio.
    Audio(Media),
}

/// What a tool would like of the model (MCP `ModelPreferences`).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[non_exhaustive]
pub struct ModelPreferences {
    /// Model names or families, best first.
    pub hints: Vec<String>,
    /// How much cost matters, 0.0 to 1.0.
    pub cost_priority: Option<f64>,
    /// How much speed matters, 0.0 to 1.0.
    pub speed_priority: Option<f64>,
    /// How much capability matters, 0.0 to 1.0.
    pub intelligence_priority: Option<f64>,
}

/// The client's answer.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClientAnswer {
    /// To [`ClientRequest::Elicit`].
    Elicited(Elicitation),
    /// To [`ClientRequest::Sample`].
    Sampled(Sampled),
    /// To [`ClientRequest::Roots`].
    Roots(Vec<Root>),
}

/// The person's answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Elicitation {
    /// The answers: an object valid against the request's schema.
    Accept(Value),
    /// They said no.
    Decline,
    /// They dismissed the question.
    Cancel,
}

/// The model's answer to a sampling request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Sampled {
    /// What it wrote (untrusted).
    pub text: String,
    /// The model, as the client names it.
    pub model: String,
    /// Why it stopped, if the client says.
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// `text` from `model`, stopped for `stop_reason`.
    pub fn new(text: String, model: String, stop_reason: Option<String>) -> Self {
        Self {
            text,
            model,
            stop_reason,
        }
    }
}

/// A workspace root of the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// Its URI (untrusted; grants nothing).
    pub uri: String,
    /// Its name, if given.
    pub name: Option<String>,
}

impl Root {
    /// The root at `uri`, named `name`.
    pub fn new(uri: String, name: Option<String>) -> Self {
        Self { uri, name }
    }
}

/// Why a request got no answer (WIT `client-error`, less `denied`, which
/// the sandbox gives itself), or why the call stops at it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ClientRefusal {
    /// No one can answer: no client, or one without the capability.
    Unsupported(String),
    /// Over a limit (the tenant's token budget, say).
    OverBudget(String),
    /// The client failed, the answer was unusable, or the wait ran out.
    Failed(String),
    /// The call cannot go on here: the guest is stopped at the request (a
    /// trap; it gets no answer) and the call ends with this error. An MCP
    /// 2026-07-28 client is asked this way (the answer comes with a retry
    /// of the whole call, [`CallError::InputRequired`]), or a tool that is
    /// not safe to run again is refused ([`CallError::Configuration`]).
    /// When several requests asked at once get it, the first one's error
    /// ends the call.
    Stop(Box<CallError>),
}

/// The future a [`ClientHook`] returns.
pub type ClientFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ClientAnswer, ClientRefusal>> + Send + 'a>>;

/// The future of [`ClientHook::ask_all`]: an answer per request, in order.
pub type ClientFutures<'a> =
    Pin<Box<dyn Future<Output = Vec<Result<ClientAnswer, ClientRefusal>>> + Send + 'a>>;

/// Answers one call's client requests (installed per call by the library).
/// The call's wall-clock budget is paused while it runs; the grants and
/// limits were checked before.
pub trait ClientHook: Send + Sync {
    /// Answers `request`.
    fn ask(&self, request: ClientRequest) -> ClientFuture<'_>;

    /// Answers several requests asked at once (WIT `ask`), an answer per
    /// request in order. The default asks them one after another; a hook
    /// whose client takes several at once overrides it.
    fn ask_all(&self, requests: Vec<ClientRequest>) -> ClientFutures<'_> {
        Box::pin(async move {
            let mut answers = Vec::with_capacity(requests.len());
            for request in requests {
                answers.push(self.ask(request).await);
            }
            answers
        })
    }
}

/// Why an elicitation schema is refused, or `None` when it is an object
/// schema whose properties are all primitives (string, number, integer,
/// boolean, or a string enum), as MCP's `requestedSchema` allows.
pub fn elicitation_schema_problem(schema: &Value) -> Option<String> {
    let Some(object) = schema.as_object() else {
        return Some("the requested schema is not a JSON object".into());
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Some("the requested schema must have `\"type\": \"object\"`".into());
    }
    let Some(properties) = object.get("properties").and_then(Value::as_object) else {
        return Some("the requested schema has no `properties`".into());
    };
    for (name, property) in properties {
        let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "string" | "number" | "integer" | "boolean") {
            return Some(format!(
                "property `{}` is not a string, number, integer or boolean; \
                 MCP elicitation asks for flat forms only",
                corral_names::text::escape(name)
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_short_plain_ascii() {
        for good in [
            "user_name",
            "step-2",
            "a.b",
            "X9",
            &"k".repeat(MAX_KEY_BYTES),
        ] {
            assert_eq!(key_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "two words",
            "ключ",
            "a/b",
            "\u{1b}[2J",
            &"k".repeat(MAX_KEY_BYTES + 1),
        ] {
            let problem = key_problem(bad).expect(bad);
            assert!(!problem.contains('\u{1b}'), "{problem}");
        }
    }
}
