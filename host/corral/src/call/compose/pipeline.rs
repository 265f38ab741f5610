//! Pipelines (AgentEnsemble's `ToolPipeline`): several tools chained into one
//! compound tool that a model calls once. Steps run sequentially inside one
//! call, with no model round trip between them.
//!
//! Pipelines are defined in `pipelines.json` in the plugin directory:
//!
//! ```json
//! {"version": 1, "pipelines": [{
//!   "name": "hash_slug",
//!   "description": "Slugify a title and hash the slug.",
//!   "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
//!   "error_strategy": "fail_fast",
//!   "steps": [
//!     {"tool": "slugify", "arguments": {"text": "$ref:input.title"}, "adapter": "slug"},
//!     {"tool": "sha256", "arguments": {"text": "$ref:prev"}}
//!   ]
//! }]}
//! ```
//!
//! - Each step's `arguments` may use `$ref:input...` (the pipeline's own
//!   arguments) and `$ref:prev...` (the previous step's output, after its
//!   adapter), with the insertion rules of plan references. Without
//!   `arguments`, the first step gets the pipeline's arguments and every later
//!   step gets the previous output, which must then be a JSON object.
//! - `adapter` (optional) is a field path (`a.b.0`) extracted from the step's
//!   output before it is passed on. Like AgentEnsemble's step adapters it runs
//!   only when the step succeeded and there is a next step.
//! - `error_strategy`: `fail_fast` (the default) stops at the first failed step
//!   and returns its error; `continue_on_failure` forwards the error text
//!   (`Error: <message>`) as the next step's input and runs to the end. The
//!   pipeline's result is the last step's.
//! - A pipeline's name follows the tool naming rules and may not collide with
//!   any tool; its steps may call plugin tools only (not `execute_tool_plan` or
//!   another pipeline).

use std::path::Path;
use std::time::Instant;

use serde::Deserialize;
use serde_json::Value;

use super::plan::reference::{self, Output};
use super::{Caller, output_of};
use crate::call::{CallOptions, CallOutput};
use crate::loader::error::{LoadError, LoadErrorReason};
use corral_sandbox::CallError;
use corral_sandbox::ReturnBehavior;

/// The file, in the plugin directory, that defines pipelines.
pub const PIPELINES_FILE: &str = "pipelines.json";

/// What to do when a step fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorStrategy {
    /// Stop and return the failed step's error.
    #[default]
    FailFast,
    /// Pass `Error: <message>` to the next step and keep going.
    ContinueOnFailure,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// Checked by `config::versioned` before this parse.
    #[serde(rename = "version")]
    _version: u32,
    pipelines: Vec<Pipeline>,
}

/// One pipeline definition.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// The tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the pipeline's arguments (an object schema).
    pub parameters: Value,
    /// What to do when a step fails.
    #[serde(default)]
    pub error_strategy: ErrorStrategy,
    /// The steps, in order.
    pub steps: Vec<PipelineStep>,
}

/// One step of a pipeline.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineStep {
    /// The tool to call.
    pub tool: String,
    /// Arguments template; see the module docs.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// Field path extracted from the output before it is passed on.
    #[serde(default)]
    pub adapter: Option<String>,
}

/// Reads `pipelines.json` from `dir`, if there is one. Structural problems
/// (not JSON, unknown fields, wrong version) fail the whole file; the checks
/// that need the tool set happen in the resolver.
pub(crate) fn read(dir: &Path) -> Result<Vec<Pipeline>, LoadError> {
    use crate::config::versioned::{self, Format, VersionedError};
    let path = dir.join(PIPELINES_FILE);
    let file = versioned::read::<File>(&path, corral_files::Kind::Pipelines, Format::Json, 1)
        .map_err(|err| LoadError {
            path: path.clone(),
            reason: LoadErrorReason::InvalidPipelines(match err {
                VersionedError::Shape(why) => format!(
                    "{why}; expected {{\"version\": 1, \"pipelines\": [{{\"name\", \"description\", \"parameters\", \"steps\"}}]}}"
                ),
                other => other.to_string(),
            }),
        })?;
    Ok(file.map(|f| f.pipelines).unwrap_or_default())
}

impl Pipeline {
    /// Checks what only the tool set can tell: steps exist and call plugin
    /// tools. Returns a problem text.
    pub(crate) fn check_steps(&self, is_plugin_tool: impl Fn(&str) -> bool) -> Result<(), String> {
        if self.steps.is_empty() {
            return Err("the pipeline has no steps; add at least one".into());
        }
        for (i, step) in self.steps.iter().enumerate() {
            if !is_plugin_tool(&step.tool) {
                return Err(format!(
                    "step {} calls `{}`, which is not a tool of a loaded plugin (pipelines \
                     may not call built-in tools or other pipelines)",
                    i + 1,
                    step.tool
                ));
            }
        }
        Ok(())
    }
}

/// The arguments for step `index`, from the pipeline's input and the previous
/// output.
fn step_arguments(
    step: &PipelineStep,
    index: usize,
    input: &Value,
    prev: Option<&Output>,
) -> Value {
    match &step.arguments {
        Some(template) => reference::substitute(template, &|id| match id {
            "input" => Some(Output::Json(input.clone())),
            "prev" => prev.cloned(),
            _ => None,
        }),
        None if index == 0 => input.clone(),
        None => match prev {
            Some(Output::Json(value)) => value.clone(),
            Some(Output::Text(text)) => Value::String(text.clone()),
            None => Value::Null,
        },
    }
}

/// Applies a step's adapter to its output.
fn adapt(step: &PipelineStep, output: Output) -> Output {
    match &step.adapter {
        None => output,
        Some(path) => {
            let segments: Vec<String> = path.split('.').map(str::to_string).collect();
            Output::Json(output.select(&segments))
        }
    }
}

/// Wraps a failed step's error so the caller sees which step failed.
fn step_error(pipeline: &str, index: usize, tool: &str, err: &CallError) -> CallError {
    CallError::ToolFailed {
        tool: pipeline.to_string(),
        message: format!("step {} (`{tool}`) failed: {err}", index + 1),
        code: err.code(),
        retryable: false,
    }
}

/// Runs `pipeline` (the tool `name`) on `input`, its steps in order through
/// `caller`, each a whole call under its own tool's limits. The result is the
/// last step's output, its parts included (an image, say), with the
/// pipeline's name, `to_llm`, the whole duration since `started` and the
/// fuel of every step.
///
/// # Errors
/// With `fail_fast`, the first failed step's error, wrapped as
/// [`CallError::ToolFailed`] naming the step; with `continue_on_failure`,
/// only the last step's.
pub(crate) async fn run(
    caller: &dyn Caller,
    name: &str,
    pipeline: &Pipeline,
    input: &Value,
    options: &CallOptions,
    started: Instant,
) -> Result<CallOutput, CallError> {
    let mut prev: Option<Output> = None;
    let mut last: Option<CallOutput> = None;
    let mut fuel = 0;
    for (i, step) in pipeline.steps.iter().enumerate() {
        let arguments = step_arguments(step, i, input, prev.as_ref());
        let is_last = i + 1 == pipeline.steps.len();
        match caller.call_value(&step.tool, arguments, options).await {
            Ok(out) => {
                fuel += out.fuel_consumed;
                if !is_last {
                    prev = Some(adapt(step, output_of(&out)));
                }
                last = Some(out);
            }
            Err(err) => {
                if pipeline.error_strategy == ErrorStrategy::FailFast || is_last {
                    return Err(step_error(name, i, &step.tool, &err));
                }
                prev = Some(Output::Text(err.llm_text()));
                last = None;
            }
        }
    }
    let out = last.ok_or_else(|| CallError::Internal {
        tool: name.to_string(),
        message: "the pipeline has no steps".into(),
    })?;
    Ok(CallOutput {
        tool: name.to_string(),
        // Pipelines are declared to_llm, whatever their last step says.
        return_behavior: ReturnBehavior::ToLlm,
        duration: started.elapsed(),
        fuel_consumed: fuel,
        ..out
    })
}
