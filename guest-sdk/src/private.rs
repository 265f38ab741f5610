//! Support code for the `#[tool]` and `plugin!` macros: the generated
//! `describe` and `call` glue. Not a public API: it changes without notice.

use super::*;

pub use crate::__bindings::exports::corral::tool::tool::Guest;
pub use crate::__bindings::exports::corral::tool::tool::{
    ToolError as WitToolError, ToolSpec as WitToolSpec,
};

/// The parts a call returns (WIT `tool-output`).
pub type WitOutput = Vec<wit::Part>;

/// The signature `#[tool]` generates for a tool's entry point.
pub type CallFn = fn(&str, &Context) -> Result<WitOutput, ToolError>;

/// What `#[tool]` implements on the hidden struct named like the function.
pub trait ToolDef {
    /// The tool name.
    const NAME: &'static str;
    /// The full spec.
    fn spec() -> ToolSpec;
    /// Decode, run, encode.
    fn call(arguments: &str, context: &Context) -> Result<WitOutput, ToolError>;
}

/// The JSON Schema of `T` as JSON text, without the `title` (the Rust type
/// name, which means nothing to a model).
pub fn schema_of<T: schemars::JsonSchema>() -> String {
    let mut schema = schemars::schema_for!(T);
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
    }
    schema.to_value().to_string()
}

/// Decodes the arguments, naming the field that failed.
pub fn decode_arguments<T: serde::de::DeserializeOwned>(arguments: &str) -> Result<T, ToolError> {
    let mut de = serde_json::Deserializer::from_str(arguments);
    serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = strip_position(&err.inner().to_string());
        if path == "." || path.is_empty() {
            ToolError::invalid(format!("invalid arguments: {inner}"))
        } else {
            ToolError::invalid(format!("invalid argument `{path}`: {inner}"))
        }
    })
}

/// serde_json appends " at line 1 column 17": noise for a model.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// Turns a tool function's return value into the WIT result: its parts
/// ([`IntoToolOutput`]: one JSON part for a `T: Serialize`, none for `()`).
pub fn encode_output<T: IntoToolOutput, E: Into<ToolError>>(
    result: Result<T, E>,
) -> Result<WitOutput, ToolError> {
    result.map_err(Into::into)?.into_parts()
}

/// Finds the tool by name and runs it.
pub fn dispatch(
    tools: &[(&str, CallFn)],
    name: &str,
    arguments: &str,
    context: Vec<(String, String)>,
) -> Result<WitOutput, WitToolError> {
    let context = Context { entries: context };
    let result = match tools.iter().find(|(n, _)| *n == name) {
        Some((_, call)) => call(arguments, &context),
        None => {
            let known: Vec<&str> = tools.iter().map(|(n, _)| *n).collect();
            Err(ToolError::invalid(format!(
                "unknown tool `{name}`; this plugin provides: {}",
                known.join(", ")
            )))
        }
    };
    result.map_err(to_wit_error)
}

fn to_wit_error(err: ToolError) -> WitToolError {
    match err {
        ToolError::InvalidArguments { message, code } => {
            WitToolError::InvalidArguments(wit::ErrorInfo {
                message,
                code,
                retryable: false,
            })
        }
        ToolError::ExecutionFailed {
            message,
            code,
            retryable,
        } => WitToolError::ExecutionFailed(wit::ErrorInfo {
            message,
            code,
            retryable,
        }),
    }
}

/// Converts the SDK spec to the generated WIT record.
pub fn to_wit_spec(spec: ToolSpec) -> WitToolSpec {
    let m = spec.metadata;
    WitToolSpec {
        name: spec.name,
        description: spec.description,
        parameters: spec.parameters,
        metadata: wit::ToolMetadata {
            category: m.category,
            keywords: m.keywords,
            version: m.version,
            idempotent: m.idempotent,
            parallelizable: m.parallelizable,
            latency: match m.latency {
                Latency::Fast => wit::LatencyHint::Fast,
                Latency::Medium => wit::LatencyHint::Medium,
                Latency::Slow => wit::LatencyHint::Slow,
            },
            requires_approval: m.requires_approval,
            return_behavior: match m.return_behavior {
                ReturnBehavior::ToLlm => wit::ReturnBehavior::ToLlm,
                ReturnBehavior::Immediate => wit::ReturnBehavior::Immediate,
            },
            priority: m.priority,
            depends_on: m.depends_on,
            output_schema: m.output_schema,
            resilience: m.resilience.map(|h| wit::ResilienceHints {
                max_attempts: h.max_attempts,
                cache_ttl_ms: h.cache_ttl_ms,
                requests_per_second: h.requests_per_second,
            }),
        },
    }
}
