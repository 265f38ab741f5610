//! Write corral tools in Rust.
//!
//! A tool is a plain function over a typed argument struct. The struct derives
//! `serde::Deserialize` and `schemars::JsonSchema` (the tool crate depends on
//! `serde` and `schemars` 1 directly); its doc comments become the
//! parameter descriptions the model reads. [`tool`] registers the function,
//! [`plugin!`] exports the plugin's tools as a component of the `corral:tool`
//! world (`wit/corral-tool.wit`):
//!
//! ```ignore
//! use corral_guest::{tool, ToolError};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Args {
//!     /// The text whose words to count.
//!     text: String,
//! }
//!
//! /// Count the words in a text.
//! #[tool(category = "text", idempotent)]
//! fn word_count(args: Args) -> Result<serde_json::Value, ToolError> {
//!     Ok(serde_json::json!({ "words": args.text.split_whitespace().count() }))
//! }
//!
//! corral_guest::plugin!(word_count);
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2` from a `cdylib` crate;
//! the `.wasm` file is already a component.
//!
//! What the SDK does for you:
//! - `describe` lists every tool given to [`plugin!`] with its JSON Schema
//!   (generated from the argument type) and [`Metadata`].
//! - `call` dispatches by name, decodes the arguments (a decoding failure becomes
//!   [`ToolError::InvalidArguments`] naming the field, for example
//!   ``invalid argument `limit`: invalid type: string "ten", expected u32``), runs
//!   the function and serializes its output to JSON text.
//! - [`log`], [`progress`] and [`request_approval`] call the host.

/// The `schemars` version the SDK builds schemas with. Argument structs derive
/// `schemars::JsonSchema` from a direct `schemars = "1"` dependency of the tool
/// crate (the derive refers to the `schemars` crate by name).
pub use schemars;
/// Re-exported so that plugins with hand-written bindings use the same version.
pub use wit_bindgen;

/// Registers a function as a tool of this plugin.
///
/// The function takes the argument struct by value, and optionally
/// `&corral_guest::Context` as a second parameter, and returns
/// `Result<T, E>` where `T: Serialize` (sent to the host as JSON text) and
/// `E: Into<ToolError>` (a `String` or `&str` becomes
/// [`ToolError::ExecutionFailed`]).
///
/// The function's doc comment is the tool description. Options, all optional:
///
/// | option | default | meaning |
/// |---|---|---|
/// | `name = "..."` | the function name | tool name, `[A-Za-z0-9_]{1,64}` |
/// | `description = "..."` | the doc comment | what the tool does, for the model |
/// | `category = "..."` | `""` | grouping such as "text" |
/// | `keywords("a", "b")` | none | search keywords |
/// | `version = "..."` | the crate version | tool version |
/// | `idempotent` | not idempotent | repeating a call has no further effect |
/// | `sequential` | parallelizable | never run two calls of this tool at once |
/// | `requires_approval` | no | each call needs a reviewer's approval |
/// | `latency = "fast" \| "medium" \| "slow"` | `"fast"` | latency hint |
/// | `return_behavior = "to_llm" \| "immediate"` | `"to_llm"` | where the result goes |
/// | `priority = N` | 50 | preference among similar tools, 0 to 100 |
/// | `depends_on("a", "b")` | none | tools whose results this one consumes |
/// | `output_schema` | none | the return type's JSON Schema is declared; the host checks every result against it (the type must derive `JsonSchema`) |
/// | `max_attempts = N` | none | hint: attempts for transient failures (idempotent tools) |
/// | `cache_ttl_ms = N` | none | hint: how long a result may be reused (idempotent tools) |
/// | `requests_per_second = N` | none | hint: the rate the upstream tolerates |
///
/// A wrong signature, an unknown option, an invalid name or a missing description
/// is a compile error pointing at the offending code.
pub use corral_guest_macros::tool;

#[doc(hidden)]
pub mod __bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "corral:tool/plugin@0.3.0",
        pub_export_macro: true,
        export_macro_name: "__export_corral_plugin",
        default_bindings_module: "::corral_guest::__bindings",
    });
}

use __bindings::corral::tool::{host, types as wit};

mod client;
mod output;

pub use client::{
    Answer, ClientError, Elicited, Message, Request, Root, Sampled, ask, elicit, roots, sample,
};
pub use output::{Audience, IntoToolOutput, Part, ToolOutput};

/// How long a call of the tool usually takes (WIT `latency-hint`). A hint for
/// clients; the host enforces its limits regardless.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    /// Well under 100 ms. The default.
    Fast,
    /// Up to about a second.
    Medium,
    /// Seconds or more.
    Slow,
}

/// Where the tool's result goes (WIT `return-behavior`, LangChain4j's
/// `ReturnBehavior`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnBehavior {
    /// Back to the model. The default.
    ToLlm,
    /// Straight to the user, bypassing the model.
    Immediate,
}

/// Descriptive metadata of a tool (WIT `tool-metadata`). See [`tool`] for the
/// defaults.
#[derive(Debug, Clone)]
pub struct Metadata {
    /// Free-form grouping; empty means none.
    pub category: String,
    /// Search keywords.
    pub keywords: Vec<String>,
    /// Tool version; defaults to the crate version.
    pub version: String,
    /// Repeating a call with the same arguments has no further effect.
    pub idempotent: bool,
    /// Calls of this tool may run concurrently.
    pub parallelizable: bool,
    /// Latency hint.
    pub latency: Latency,
    /// Each call needs a reviewer's approval before it runs.
    pub requires_approval: bool,
    /// Where the result goes.
    pub return_behavior: ReturnBehavior,
    /// Preference among similar tools, 0 to 100; 50 by default.
    pub priority: u8,
    /// Tools whose results this one usually consumes.
    pub depends_on: Vec<String>,
    /// JSON Schema of the result, as JSON text; the host validates every
    /// successful result against it.
    pub output_schema: Option<String>,
    /// Suggestions for the host's resilience layers (its policy wins).
    pub resilience: Option<ResilienceHints>,
}

/// A tool's suggestions for the host's resilience layers (WIT
/// `resilience-hints`); the host's policy overrides each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResilienceHints {
    /// Attempts in all for transient failures (idempotent tools only).
    pub max_attempts: Option<u32>,
    /// How long a result may be reused for the same arguments, in ms
    /// (idempotent tools only).
    pub cache_ttl_ms: Option<u64>,
    /// Calls per second the upstream tolerates.
    pub requests_per_second: Option<u32>,
}

/// One tool as `describe` reports it (WIT `tool-spec`).
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// Tool name, `[A-Za-z0-9_]{1,64}`.
    pub name: String,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the arguments, as JSON text.
    pub parameters: String,
    /// Descriptive metadata.
    pub metadata: Metadata,
}

/// Why a tool call failed (WIT `tool-error`, LangChain4j's two exception kinds).
///
/// `From<String>` and `From<&str>` produce [`ToolError::ExecutionFailed`], so
/// `Err("upstream timed out")?`-style code works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments cannot be used; the caller should fix them and retry.
    InvalidArguments {
        /// What is wrong and how to fix it.
        message: String,
        /// Optional tool-defined code.
        code: Option<i32>,
    },
    /// The arguments were fine but the work failed.
    ExecutionFailed {
        /// What went wrong.
        message: String,
        /// Optional tool-defined code.
        code: Option<i32>,
        /// Trying again may help (an upstream timeout, a 503); the host
        /// retries only idempotent tools.
        retryable: bool,
    },
}

impl ToolError {
    /// An [`ToolError::InvalidArguments`] error without a code.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidArguments {
            message: message.into(),
            code: None,
        }
    }

    /// An [`ToolError::ExecutionFailed`] error without a code, not
    /// retryable.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::ExecutionFailed {
            message: message.into(),
            code: None,
            retryable: false,
        }
    }

    /// The same error marked as worth retrying (an execution failure only;
    /// invalid arguments never are).
    #[must_use]
    pub fn retryable(self) -> Self {
        match self {
            Self::ExecutionFailed { message, code, .. } => Self::ExecutionFailed {
                message,
                code,
                retryable: true,
            },
            other => other,
        }
    }

    /// The same error carrying the numeric `code`.
    #[must_use]
    pub fn with_code(self, code: i32) -> Self {
        match self {
            Self::InvalidArguments { message, .. } => Self::InvalidArguments {
                message,
                code: Some(code),
            },
            Self::ExecutionFailed {
                message, retryable, ..
            } => Self::ExecutionFailed {
                message,
                code: Some(code),
                retryable,
            },
        }
    }

    /// The error message.
    pub fn message(&self) -> &str {
        match self {
            Self::InvalidArguments { message, .. } | Self::ExecutionFailed { message, .. } => {
                message
            }
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self::failed(message)
    }
}

/// The out-of-band key/value pairs the host passed into this call (WIT
/// `context`): tenant, user id, correlation id. Only keys the host allows this
/// plugin to see are present.
#[derive(Debug, Clone, Default)]
pub struct Context {
    entries: Vec<(String, String)>,
}

impl Context {
    /// The value of `key`, if the host passed it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every pair, in the order the host sent them.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether the host passed no context at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Severity of a [`log`] message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected that the tool handled.
    Warn,
    /// Something failed.
    Error,
}

/// Writes `message` to the host's log, tagged with this plugin and tool. Never
/// fails; long messages are truncated by the host.
pub fn log(level: Level, message: &str) {
    let level = match level {
        Level::Trace => wit::LogLevel::Trace,
        Level::Debug => wit::LogLevel::Debug,
        Level::Info => wit::LogLevel::Info,
        Level::Warn => wit::LogLevel::Warn,
        Level::Error => wit::LogLevel::Error,
    };
    host::log(level, message);
}

/// Reports progress of the current call ("page 3 of 10"). Never fails.
pub fn progress(message: &str) {
    host::progress(message);
}

/// A reviewer's answer to [`request_approval`] (AgentEnsemble's decisions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead.
    Continue,
    /// Do not do it; the payload is the reviewer's reason. Return an
    /// [`ToolError::ExecutionFailed`] error.
    ExitEarly(String),
    /// Go ahead with these revised arguments (JSON text, already validated by the
    /// host against this tool's schema).
    Edit(String),
}

/// Asks a reviewer for approval before a dangerous action, for example
/// `request_approval("delete 12 files in /notes")`. Blocks until a decision; a
/// review that times out comes back as [`Approval::ExitEarly`].
pub fn request_approval(description: &str) -> Approval {
    match host::request_approval(description) {
        wit::ApprovalDecision::Continue => Approval::Continue,
        wit::ApprovalDecision::ExitEarly(reason) => Approval::ExitEarly(reason),
        wit::ApprovalDecision::Edit(args) => Approval::Edit(args),
    }
}

/// Exports the listed tools (functions marked with [`tool`]) as this crate's
/// component. Use it once per plugin crate:
///
/// ```ignore
/// corral_guest::plugin!(word_count, slugify, regex_extract);
/// ```
///
/// The plugin's `describe` returns the tools in this order; `call` dispatches by
/// name and answers an unknown name with [`ToolError::InvalidArguments`].
#[macro_export]
macro_rules! plugin {
    ($($tool:path),+ $(,)?) => {
        #[doc(hidden)]
        struct __CorralPlugin;

        impl $crate::__private::Guest for __CorralPlugin {
            fn describe() -> ::std::vec::Vec<$crate::__private::WitToolSpec> {
                ::std::vec![$($crate::__private::to_wit_spec(
                    <$tool as $crate::__private::ToolDef>::spec()
                )),+]
            }

            fn call(
                name: ::std::string::String,
                arguments: ::std::string::String,
                context: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::core::result::Result<$crate::__private::WitOutput, $crate::__private::WitToolError> {
                let tools: &[(&str, $crate::__private::CallFn)] = &[
                    $((
                        <$tool as $crate::__private::ToolDef>::NAME,
                        <$tool as $crate::__private::ToolDef>::call,
                    )),+
                ];
                $crate::__private::dispatch(tools, &name, &arguments, context)
            }
        }

        $crate::__bindings::__export_corral_plugin!(__CorralPlugin with_types_in $crate::__bindings);
    };
}

/// Support code for the macros. Not a public API: it changes without notice.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

#[cfg(test)]
mod tests {
    use super::__private::*;
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// How many.
        limit: u32,
        /// Nested options.
        #[serde(default)]
        options: Option<Options>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Options {
        depth: u8,
    }

    fn message(arguments: &str) -> String {
        decode_arguments::<Args>(arguments)
            .err()
            .expect("decoding fails")
            .message()
            .to_string()
    }

    #[test]
    fn decoding_errors_name_the_field_without_positions() {
        assert_eq!(
            message(r#"{"limit": "ten"}"#),
            "invalid argument `limit`: invalid type: string \"ten\", expected u32"
        );
        assert_eq!(
            message(r#"{"limit": 1, "options": {"depth": 300}}"#),
            "invalid argument `options.depth`: invalid value: integer `300`, expected u8"
        );
        assert_eq!(message("{}"), "invalid arguments: missing field `limit`");
        assert!(matches!(
            decode_arguments::<Args>("{}"),
            Err(ToolError::InvalidArguments { code: None, .. })
        ));
    }

    #[test]
    fn schemas_carry_doc_comments_and_no_title() {
        let schema: serde_json::Value =
            serde_json::from_str(&schema_of::<Args>()).expect("schema is JSON");
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["limit"]["description"], "How many.");
        assert!(schema.get("title").is_none());
    }

    #[test]
    fn outputs_are_json_and_errors_convert() {
        let parts = encode_output::<_, ToolError>(Ok(serde_json::json!({"a": 1}))).expect("ok");
        assert!(
            matches!(&parts[..], [p] if matches!(&p.content, wit::Content::Json(j) if j == r#"{"a":1}"#))
        );
        assert!(
            encode_output::<(), ToolError>(Ok(()))
                .expect("ok")
                .is_empty()
        );
        let err = encode_output::<u8, &str>(Err("boom")).expect_err("fails");
        assert_eq!(err, ToolError::failed("boom"));
        assert_eq!(
            ToolError::invalid("x").with_code(3),
            ToolError::InvalidArguments {
                message: "x".into(),
                code: Some(3)
            }
        );
    }
}
