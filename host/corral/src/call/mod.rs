//! Making a call. This file holds the shapes of a call: what goes in
//! ([`CallOptions`], [`CallContext`], [`ProgressSink`]) and what comes out
//! ([`CallOutput`], and AgentEnsemble's [`ToolResult`] view of either
//! outcome). What acts on them is below it: the [`stages`] every call goes
//! through, the approval gate and its reviewers ([`approval`]), the
//! resilience layers around dispatch ([`resilience`]), the audit log
//! ([`audit`]), each tool's health window ([`health`]) and per-call
//! metric keys ([`metrics`]), and plans and pipelines, which call tools
//! through a [`Caller`](compose::Caller) ([`compose`]).

pub(crate) mod approval;
pub(crate) mod audit;
pub(crate) mod client;
pub(crate) mod code;
pub(crate) mod compose;
pub(crate) mod health;
pub(crate) mod metrics;
pub(crate) mod quota;
pub(crate) mod resilience;
pub(crate) mod stages;
pub(crate) mod tenant;

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::call::approval::Reviewer;
use corral_sandbox::CallError;
use corral_sandbox::Limits;
use corral_sandbox::ReturnBehavior;

pub use corral_sandbox::ProgressSink;

/// Out-of-band key/value pairs passed into a call (WIT `context`): tenant, user
/// id, correlation id. They never appear in a schema, so a model can neither see
/// nor forge them. Keys are unique; later inserts replace earlier ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CallContext(BTreeMap<String, String>);

impl CallContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`, replacing any previous value.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.0.insert(key.into(), value.into());
        self
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for CallContext {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// Options of one call. `CallOptions::default()` passes no context, uses the
/// host's (or the plugin policy's) limits, drops progress messages (they are
/// still logged) and uses the host's reviewer. Build one with the `with_*`
/// methods.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Context of this call, merged over the host's context (this call's values
    /// win) and filtered by each plugin's
    /// [`ContextPolicy`](crate::config::context::ContextPolicy) before it reaches the
    /// guest.
    pub context: CallContext,
    /// Tighter limits for this call: each knob is the smaller of this and the
    /// tool's own limits (host defaults, then its plugin's policy). It can
    /// never raise a limit; see [`limits::effective`](corral_sandbox::effective).
    pub limits: Option<Limits>,
    /// Receives the guest's `progress` messages as `(tool, message)`.
    pub progress: Option<ProgressSink>,
    /// Decides this call's approval gates instead of the host's reviewer
    /// (e.g. MCP elicitation to the client that made the call). Standing
    /// approvals, the review timeout and the audit log still apply.
    pub reviewer: Option<std::sync::Arc<dyn Reviewer>>,
    /// Whose quotas the call spends, when the caller's transport
    /// authenticated it ([`Tenant::authenticated`](crate::Tenant)); `None`
    /// (the default) takes the context key `tenant` as a client-asserted
    /// tenant, else `anonymous`. Steps of a plan, pipeline or script carry
    /// the options, so they spend the same tenant's quotas.
    pub tenant: Option<crate::Tenant>,
    /// Answers the guest's requests to its client (WIT 0.3.0 `elicit`,
    /// `sample`, `roots`) that its policy grants; `None` (the default)
    /// answers each `unsupported`.
    pub client: Option<std::sync::Arc<dyn client::ClientRequests>>,
    /// Records every sandboxed run of this call (each step of a plan,
    /// pipeline or script too) into the host's recordings directory
    /// ([`HostBuilder::recordings`](crate::HostBuilder::recordings)); the
    /// request lists the files once the call returns. `None` (the
    /// default): only what the plugins' policies sample (`[record]`).
    pub record: Option<std::sync::Arc<crate::replay::RecordRequest>>,
    /// The script this call comes from (code mode sets it on the calls a
    /// script makes, so that a reviewer sees it); `None` otherwise.
    pub(crate) script: Option<corral_sandbox::ScriptOrigin>,
    /// For a call a script makes: stops the script's deadline while this
    /// call's reviewer decides.
    pub(crate) review_pause: Option<corral_sandbox::ReviewPause>,
    /// For a retry of `execute_code`: the journal of the earlier run, whose
    /// calls are answered from it (see [`CallOptions::with_journal`]).
    pub(crate) journal: Option<std::sync::Arc<corral_sandbox::Journal>>,
}

impl CallOptions {
    /// These options with `context` as the call's context.
    #[must_use]
    pub fn with_context(mut self, context: CallContext) -> Self {
        self.context = context;
        self
    }

    /// These options with `request` recording the call (see
    /// [`CallOptions::record`]).
    #[must_use]
    pub fn with_record(mut self, request: std::sync::Arc<crate::replay::RecordRequest>) -> Self {
        self.record = Some(request);
        self
    }

    /// These options with tighter `limits` (see [`CallOptions::limits`]).
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// These options with `sink` receiving progress messages.
    #[must_use]
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// These options with `reviewer` deciding the call's approval gates.
    #[must_use]
    pub fn with_reviewer(mut self, reviewer: std::sync::Arc<dyn Reviewer>) -> Self {
        self.reviewer = Some(reviewer);
        self
    }

    /// These options with `client` answering the guest's client requests
    /// (see [`CallOptions::client`]).
    #[must_use]
    pub fn with_client(mut self, client: std::sync::Arc<dyn client::ClientRequests>) -> Self {
        self.client = Some(client);
        self
    }

    /// These options for a retry of `execute_code` after its run stopped at
    /// a call waiting for approval: `journal` is the one that
    /// [`CallError::ApprovalPending`](crate::CallError::ApprovalPending)
    /// carried. The script runs again from the start with the same seed and
    /// start time, and every call the journal holds is answered from it
    /// (never run twice); a call that differs from its entry fails the run
    /// with [`NOT_DETERMINISTIC`](corral_sandbox::NOT_DETERMINISTIC). The
    /// retry must carry the same script: another one is refused. Other
    /// tools ignore it.
    #[must_use]
    pub fn with_journal(mut self, journal: corral_sandbox::Journal) -> Self {
        self.journal = Some(std::sync::Arc::new(journal));
        self
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("context", &self.context)
            .field("limits", &self.limits)
            .field("progress", &self.progress.is_some())
            .field("client", &self.client.is_some())
            .field(
                "reviewer",
                &self.reviewer.as_ref().map(|r| r.name().to_string()),
            )
            .field("journal", &self.journal.as_ref().map(|j| j.calls.len()))
            .finish()
    }
}

/// A successful call.
///
/// JSON shape (`corral call --json`): `{"tool", "ok": true, "output": <the
/// output as JSON, or as a string when it is not JSON>, "return_behavior":
/// "to_llm"|"immediate", "duration_ms", "fuel_consumed"}`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallOutput {
    /// The tool that ran.
    pub tool: String,
    /// The output text exactly as the guest returned it: for a 0.3.0
    /// guest's parts, the structured (`json`) part's text if there is one,
    /// else its text parts joined by newlines.
    pub text: String,
    /// Every part of the output in the guest's order (WIT 0.3.0
    /// `tool-output`), checked (`corral_sandbox::check_parts`); empty when
    /// [`text`](Self::text) is the whole output: every 0.1.0 and 0.2.0
    /// result, a built-in's, and a 0.3.0 result of one plain text or json
    /// part.
    pub parts: Vec<corral_sandbox::OutputPart>,
    /// `text` parsed as JSON ([`CallOutput::json`]): set when the call
    /// parsed it already (an output contract was checked, a built-in built
    /// the value), else on first use.
    pub(crate) json: OnceLock<Option<Value>>,
    /// Where the result should go, from the tool's metadata.
    pub return_behavior: ReturnBehavior,
    /// Wall-clock time of the whole call: validation, sandbox, teardown.
    pub duration: Duration,
    /// Fuel units the guest used (0 for a cached result).
    pub fuel_consumed: u64,
    /// Sandboxed attempts it took: 1 without a retry, 0 for a cached result
    /// or a one-shot tool's advice (no guest code ran).
    pub attempts: u32,
    /// Whether the result came from the result cache (no guest code ran).
    pub cache_hit: bool,
}

impl CallOutput {
    /// The output parsed as JSON, `None` when it is not JSON (plain text).
    /// Parsed on first use and kept, so a caller that reads only
    /// [`text`](Self::text) never pays for a parse, and nobody parses it
    /// twice (a tool with an output schema had it parsed for the check).
    pub fn json(&self) -> Option<&Value> {
        self.json
            .get_or_init(|| serde_json::from_str(&self.text).ok())
            .as_ref()
    }

    /// [`CallOutput::json`], owned: the parsed value taken out of the
    /// output (parsed now if nobody has yet).
    pub fn into_json(self) -> Option<Value> {
        self.into_text_and_json().1
    }

    /// [`text`](Self::text) and [`CallOutput::json`], both owned, without
    /// copying either (an MCP result carries the text and, for an object,
    /// the same output as structured content).
    pub fn into_text_and_json(mut self) -> (String, Option<Value>) {
        let json = match self.json.take() {
            Some(parsed) => parsed,
            None => serde_json::from_str(&self.text).ok(),
        };
        (self.text, json)
    }
}

/// Equal when every field is: the parsed JSON is a function of `text`, so
/// whether either side has parsed it yet does not matter.
impl PartialEq for CallOutput {
    fn eq(&self, other: &Self) -> bool {
        self.tool == other.tool
            && self.text == other.text
            && self.parts == other.parts
            && self.return_behavior == other.return_behavior
            && self.duration == other.duration
            && self.fuel_consumed == other.fuel_consumed
            && self.attempts == other.attempts
            && self.cache_hit == other.cache_hit
    }
}

/// AgentEnsemble's result contract for either outcome of a call: output,
/// success flag, error message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The output text; empty on failure.
    pub output: String,
    /// Whether the call succeeded.
    pub success: bool,
    /// The error message on failure, `None` on success.
    pub error_message: Option<String>,
}

impl ToolResult {
    /// What a model sees: the output on success, `Error: <message>` on failure.
    pub fn llm_text(&self) -> String {
        match &self.error_message {
            None => self.output.clone(),
            Some(message) => format!("Error: {message}"),
        }
    }
}

impl From<&Result<CallOutput, CallError>> for ToolResult {
    fn from(result: &Result<CallOutput, CallError>) -> Self {
        match result {
            Ok(out) => Self {
                output: out.text.clone(),
                success: true,
                error_message: None,
            },
            Err(err) => Self {
                output: String::new(),
                success: false,
                error_message: Some(err.to_string()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_as_error_lines() {
        let err: Result<CallOutput, CallError> = Err(CallError::StackOverflow { tool: "t".into() });
        let result = ToolResult::from(&err);
        assert!(!result.success);
        assert!(result.llm_text().starts_with("Error: tool `t` overflowed"));
    }

    fn output(text: &str) -> CallOutput {
        CallOutput {
            tool: "t".into(),
            parts: Vec::new(),
            text: text.into(),
            json: OnceLock::new(),
            return_behavior: ReturnBehavior::ToLlm,
            duration: Duration::ZERO,
            fuel_consumed: 1,
            attempts: 1,
            cache_hit: false,
        }
    }

    #[test]
    fn json_is_parsed_on_first_use_and_kept() {
        let out = output(r#"{"n": 1}"#);
        assert!(
            out.json.get().is_none(),
            "nothing parsed before it is asked for"
        );
        let unparsed = out.clone();
        assert_eq!(out.json(), Some(&serde_json::json!({"n": 1})));
        assert!(out.json.get().is_some(), "kept once parsed");
        assert_eq!(out, unparsed, "equality does not depend on what was parsed");
        assert_eq!(unparsed.into_json(), Some(serde_json::json!({"n": 1})));
        assert_eq!(out.into_json(), Some(serde_json::json!({"n": 1})));
        let text = output("plain words");
        assert_eq!(text.json(), None);
        assert_eq!(
            text.clone().into_text_and_json(),
            ("plain words".to_string(), None)
        );
        assert_eq!(text.into_json(), None);
    }
}
