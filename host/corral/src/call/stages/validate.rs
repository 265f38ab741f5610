//! Stage 2, validate: the arguments parsed once into a JSON value, checked to
//! be an object and against the tool's schema, before any guest code runs.
//! From here on they travel as [`Arguments`]: the value for every host-side
//! use, and the JSON text the guest receives, made once.

use std::sync::Arc;

use serde_json::Value;

use crate::catalog::registry::Tool;
use corral_sandbox::CallError;

/// Arguments as a caller hands them in.
#[derive(Debug)]
pub(crate) enum RawArguments {
    /// JSON text (the CLI, [`Host::call`](crate::Host::call)); kept as the
    /// guest's text when it parses, so the guest sees exactly what was sent.
    Text(Arc<str>),
    /// An already parsed value (MCP, plan and pipeline steps) with its JSON
    /// text, serialized once by the caller.
    Parsed(Value, Arc<str>),
}

/// Validated arguments: a JSON object that satisfies the tool's schema.
#[derive(Debug, Clone)]
pub struct Arguments {
    /// The parsed arguments.
    pub value: Arc<Value>,
    /// The same as JSON text, what the guest's `call` receives.
    pub text: Arc<str>,
}

impl Arguments {
    /// Arguments a reviewer's edit produced, already checked by the gate.
    pub(crate) fn edited(value: Value, text: String) -> Self {
        Self {
            value: Arc::new(value),
            text: text.into(),
        }
    }
}

/// Parses (once) and checks `raw` for `tool`.
///
/// # Errors
/// [`CallError::InvalidArguments`] naming every problem: not JSON, not an
/// object, or each schema violation with its JSON pointer.
pub(super) fn arguments(tool: &Tool, raw: RawArguments) -> Result<Arguments, CallError> {
    let invalid = |problems: Vec<String>| CallError::InvalidArguments {
        tool: tool.spec().name.clone(),
        problems,
        code: None,
    };
    let (value, text) = match raw {
        RawArguments::Text(text) => {
            let value: Value = serde_json::from_str(&text)
                .map_err(|err| invalid(vec![format!("the arguments are not valid JSON: {err}")]))?;
            (value, text)
        }
        RawArguments::Parsed(value, text) => (value, text),
    };
    if !value.is_object() {
        return Err(invalid(vec![
            "the arguments must be a JSON object, e.g. {\"text\": \"...\"}".into(),
        ]));
    }
    tool.validate_arguments(&value).map_err(invalid)?;
    Ok(Arguments {
        value: Arc::new(value),
        text,
    })
}
