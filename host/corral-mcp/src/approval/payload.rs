//! What a `requestState` of the input-required flow says (`state.rs` seals
//! and opens it): the call it is bound to, the approval questions asked
//! and answered in earlier rounds and the one pending, the guest's client
//! requests pending and the client's answers to earlier ones, and for a
//! script (code mode) its encrypted journal.

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use corral::{ApprovalDecision, CallContext, Tool};

/// Which call a state belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Binding {
    pub tool: String,
    pub build_sha256: String,
    pub arguments_sha256: String,
    pub context_sha256: String,
}

impl Binding {
    /// The binding of a call of `tool` with `arguments` and `context`.
    pub fn of(tool: &Tool, arguments: &serde_json::Value, context: &CallContext) -> Self {
        let (_, plugin_sha256) = tool.provider_identity();
        let build = serde_json::json!({
            "plugin": plugin_sha256,
            "spec": tool.spec(),
            "grants": tool.plugin().map(|p| p.policy().grants_summary()),
            "limits": tool.limits(),
        });
        let context: Vec<(&str, &str)> = context.iter().collect();
        Self {
            tool: tool.spec().name.clone(),
            build_sha256: sha256_hex(build.to_string().as_bytes()),
            // serde_json's map is ordered: this is canonical JSON.
            arguments_sha256: sha256_hex(arguments.to_string().as_bytes()),
            context_sha256: sha256_hex(serde_json::json!(context).to_string().as_bytes()),
        }
    }
}

/// A question: which gate asked, for which tool and plugin build, the
/// sha256 of the text shown, and which time in the call it came.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Question {
    pub gate: String,
    pub tool: String,
    pub plugin_sha256: String,
    pub text_sha256: String,
    pub occurrence: u32,
    /// For a call a script makes: its position in the run and the sha256 of
    /// its arguments, so one answer approves that one call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script_call: Option<(u32, String)>,
}

impl Question {
    /// The `occurrence`-th (from 0) asking of `request` in one run.
    pub fn of(request: &corral::ReviewRequest, occurrence: u32) -> Self {
        Self {
            gate: request.gate.to_string(),
            tool: request.tool.clone(),
            plugin_sha256: request.plugin_sha256.clone(),
            text_sha256: sha256_hex(request.description.as_bytes()),
            occurrence,
            script_call: request
                .script
                .as_ref()
                .and_then(|s| s.call)
                .map(|index| (index, sha256_hex(request.arguments.to_string().as_bytes()))),
        }
    }
}

/// A decision made in an earlier round, as the state keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", content = "value", rename_all = "snake_case")]
pub(crate) enum Decided {
    /// Go ahead (a standing approval, if asked for, was granted when the
    /// answer came).
    Continue,
    /// Denied, with the reason.
    ExitEarly(String),
    /// Go ahead with these arguments (JSON text).
    Edit(String),
}

impl Decided {
    /// What to carry into a later round for `decision`; `None` for one that
    /// decides nothing.
    pub fn of(decision: &ApprovalDecision) -> Option<Self> {
        match decision {
            ApprovalDecision::Continue | ApprovalDecision::ContinueAlways => Some(Self::Continue),
            ApprovalDecision::ExitEarly(reason) => Some(Self::ExitEarly(reason.clone())),
            ApprovalDecision::Edit(text) => Some(Self::Edit(text.clone())),
            _ => None,
        }
    }

    /// The decision a reviewer returns for it.
    pub fn decision(&self) -> ApprovalDecision {
        match self {
            Self::Continue => ApprovalDecision::Continue,
            Self::ExitEarly(reason) => ApprovalDecision::ExitEarly(reason.clone()),
            Self::Edit(text) => ApprovalDecision::Edit(text.clone()),
        }
    }
}

/// A guest's request to its client (WIT 0.3.0 `corral:tool/client`), told
/// apart from every other: its key and kind, the sha256 of the whole
/// request (its words, schema, messages and limits), and which time in the
/// run that same request came.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Asked {
    pub key: String,
    pub kind: String,
    pub request_sha256: String,
    pub occurrence: u32,
}

impl Asked {
    /// The `occurrence`-th (from 0) asking of `request` in one run.
    pub fn of(request: &corral::ClientRequest, occurrence: u32) -> Self {
        let canonical = serde_json::to_vec(request).unwrap_or_default();
        Self {
            key: request.key().to_string(),
            kind: request.kind().to_string(),
            request_sha256: sha256_hex(&canonical),
            occurrence,
        }
    }
}

/// What a state says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Payload {
    pub binding: Binding,
    /// Answers of earlier rounds of this call.
    pub answered: Vec<(Question, Decided)>,
    /// The approval question the client's `inputResponses` answer under
    /// `approval`, if one is pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Question>,
    /// The guest's client requests the client's `inputResponses` answer,
    /// each under its key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<Asked>,
    /// The client's answers to the guest's requests of earlier rounds, as
    /// it sent them (an `ElicitResult`, a `CreateMessageResult` or a
    /// `ListRootsResult`): the retry's run asks them again and is answered
    /// from here. Signed, not encrypted: the client wrote them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub given: Vec<(Asked, serde_json::Value)>,
    /// Random, hex; a state is accepted once.
    pub nonce: String,
    /// The journal of a script whose call is pending, encrypted
    /// (`journal.rs`) with `nonce` as associated data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<String>,
}

/// Lowercase hex sha256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}
