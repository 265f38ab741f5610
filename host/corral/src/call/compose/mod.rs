//! Calls made of calls: plans (the built-in `execute_tool_plan`, after the
//! tool-planning guide, docs/references.md) and pipelines (compound tools,
//! AgentEnsemble's `ToolPipeline`).
//!
//! Both run their steps through a [`Caller`], never through the host
//! directly, so every step takes the whole call path (argument validation,
//! effective limits, the approval gate, a fresh sandbox, the record) exactly
//! like a call a client makes. Invariants: a step's arguments and outputs
//! travel as parsed JSON values, never re-parsed text; a plan can only
//! tighten a step's limits (its deadline), never loosen them.

pub mod pipeline;
pub mod plan;

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::call::{CallOptions, CallOutput};
use corral_sandbox::CallError;
use plan::reference::Output;

/// The future a [`Caller`] returns.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<CallOutput, CallError>> + Send + 'a>>;

/// What plans and pipelines call their steps through: the whole call path of
/// a [`Host`](crate::Host), which implements it. An embedder can implement it
/// to run plans against something else (a test double, a remote host).
pub trait Caller: Send + Sync {
    /// Calls `tool` with `arguments` (a JSON object) under `options`.
    ///
    /// # Errors
    /// The step's [`CallError`], as the host's call would return it.
    fn call_value<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        options: &'a CallOptions,
    ) -> CallFuture<'a>;
}

/// A step's output as `$ref` and adapters see it: the parsed JSON when the
/// tool returned JSON, its text otherwise. Nothing is parsed again.
pub(crate) fn output_of(out: &CallOutput) -> Output {
    match out.json() {
        Some(value) => Output::Json(value.clone()),
        None => Output::Text(out.text.clone()),
    }
}
