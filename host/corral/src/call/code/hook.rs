//! The [`ToolCalls`] hook of one script: each `tools.<name>(args)` the
//! runner makes becomes a call through the [`Caller`], so it takes the whole
//! call path of a direct call (validation, limits, gates with the outer
//! call's reviewer, resilience layers, the audit record) with the outer
//! call's context. It counts the calls and the bytes they return against
//! [`CodeLimits`], keeps the console lines, and records each call for the
//! result's `calls` list.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::StreamExt as _;
use serde::Serialize;
use serde_json::Value;

use super::{CODE_TOOL, CodeLimits};
use crate::call::CallOptions;
use crate::call::compose::Caller;
use crate::model::names::PLAN_TOOL;
use corral_sandbox::{
    CallError, ConsoleLevel, ReviewPause, ScriptOrigin, ToolCalls, ToolFailure, ToolFuture,
    ToolOutput,
};

/// One inner call, as the result's `calls` list shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CallRecord {
    /// The tool called.
    pub tool: String,
    /// Whether it returned (false: it failed, or was refused before it ran).
    pub ok: bool,
    /// How long it took, in milliseconds.
    pub ms: u64,
}

/// One console line.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ConsoleLine {
    /// `debug`, `info`, `warn` or `error`.
    pub level: ConsoleLevel,
    /// The line, cut, scanned for secrets and escaped by the sandbox.
    pub text: String,
}

#[derive(Default)]
struct Tally {
    calls: u32,
    bytes: usize,
    records: Vec<CallRecord>,
    console: Vec<ConsoleLine>,
    fuel: u64,
}

/// What one run of the runner calls its tools through.
pub(crate) struct ScriptCalls {
    caller: Arc<dyn Caller>,
    options: CallOptions,
    limits: CodeLimits,
    concurrency: usize,
    tally: Mutex<Tally>,
}

/// What the hook gathered once the run is over.
pub(crate) struct Gathered {
    pub records: Vec<CallRecord>,
    pub console: Vec<ConsoleLine>,
    /// Fuel the inner calls consumed, in all.
    pub fuel: u64,
}

impl ScriptCalls {
    /// Inner calls go through `caller` with `outer`'s context and reviewer
    /// (not its limit override: each tool keeps its own limits, and the
    /// script's deadline bounds them all), marked as coming from `script`
    /// for their reviewers, at most `concurrency` of a `tools.parallel`
    /// wave at once.
    pub(crate) fn new(
        caller: Arc<dyn Caller>,
        outer: &CallOptions,
        script: ScriptOrigin,
        limits: CodeLimits,
        concurrency: usize,
    ) -> Self {
        let mut options = outer.clone();
        options.limits = None;
        options.script = Some(script);
        Self {
            caller,
            options,
            limits,
            concurrency: concurrency.max(1),
            tally: Mutex::new(Tally::default()),
        }
    }

    /// The records, console lines and fuel, in the order they happened.
    pub(crate) fn gathered(&self) -> Gathered {
        let mut tally = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        Gathered {
            records: std::mem::take(&mut tally.records),
            console: std::mem::take(&mut tally.console),
            fuel: tally.fuel,
        }
    }

    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one call from the cap, or says why not.
    fn admit(&self, name: &str) -> Result<(), ToolFailure> {
        if name == CODE_TOOL || name == PLAN_TOOL {
            return Err(ToolFailure {
                kind: "denied",
                code: None,
                message: format!(
                    "a script cannot call `{name}`: call the tools it would run directly \
                     (and use tools.parallel for a wave)"
                ),
            });
        }
        let mut tally = self.tally();
        if tally.calls >= self.limits.max_calls {
            return Err(ToolFailure {
                kind: "limit",
                code: Some("too_many_calls".into()),
                message: format!(
                    "the script made more than {} tool calls (`max_calls`); do the work in fewer \
                     calls, or split it into several scripts",
                    self.limits.max_calls
                ),
            });
        }
        tally.calls += 1;
        Ok(())
    }

    async fn one(
        &self,
        name: String,
        arguments: String,
        pause: ReviewPause,
    ) -> Result<ToolOutput, ToolFailure> {
        self.admit(&name)?;
        let mut options = self.options.clone();
        options.review_pause = Some(pause);
        let started = Instant::now();
        let result = match serde_json::from_str::<Value>(&arguments) {
            Err(err) => Err(ToolFailure {
                kind: "invalid_arguments",
                code: None,
                message: format!("the arguments of `{name}` are not JSON: {err}"),
            }),
            Ok(value) => self
                .caller
                .call_value(&name, value, &options)
                .await
                .map_err(|err| failure(&err)),
        };
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut tally = self.tally();
        tally.records.push(CallRecord {
            tool: name.clone(),
            ok: result.is_ok(),
            ms,
        });
        let out = result?;
        tally.fuel = tally.fuel.saturating_add(out.fuel_consumed);
        tally.bytes = tally.bytes.saturating_add(out.text.len());
        if tally.bytes > self.limits.max_call_bytes {
            return Err(ToolFailure {
                kind: "limit",
                code: Some("too_much_output".into()),
                message: format!(
                    "the script's tool calls returned more than {} bytes in all \
                     (`max_call_bytes`); ask the tools for less (a filter, a page)",
                    self.limits.max_call_bytes
                ),
            });
        }
        Ok(if out.json().is_some() {
            ToolOutput::Json(out.text)
        } else {
            ToolOutput::Text(out.text)
        })
    }
}

/// A failed inner call as the script's `ToolError` sees it: one of four
/// kinds, the finer kind (or the tool's own code) as its `code`.
fn failure(err: &CallError) -> ToolFailure {
    let kind = match err {
        CallError::UnknownTool { .. } | CallError::InvalidArguments { .. } => "invalid_arguments",
        CallError::Rejected { .. } | CallError::ApprovalPending { .. } => "denied",
        CallError::OutOfFuel { .. }
        | CallError::Timeout { .. }
        | CallError::MemoryLimit { .. }
        | CallError::StackOverflow { .. }
        | CallError::OutputTooLarge { .. }
        | CallError::RateLimited { .. }
        | CallError::CircuitOpen { .. }
        | CallError::InvalidLimits { .. } => "limit",
        _ => "execution_failed",
    };
    ToolFailure {
        kind,
        code: Some(
            err.code()
                .map_or_else(|| err.kind().to_string(), |c| c.to_string()),
        ),
        message: err.to_string(),
    }
}

impl ToolCalls for ScriptCalls {
    fn call(
        &self,
        name: String,
        arguments: String,
        pause: ReviewPause,
    ) -> ToolFuture<'_, Result<ToolOutput, ToolFailure>> {
        Box::pin(self.one(name, arguments, pause))
    }

    fn parallel(
        &self,
        calls: Vec<(String, String)>,
        pause: ReviewPause,
    ) -> ToolFuture<'_, Vec<Result<ToolOutput, ToolFailure>>> {
        Box::pin(async move {
            futures_util::stream::iter(calls)
                .map(|(name, arguments)| self.one(name, arguments, pause.clone()))
                .buffered(self.concurrency)
                .collect()
                .await
        })
    }

    fn console(&self, level: ConsoleLevel, text: String) {
        self.tally().console.push(ConsoleLine { level, text });
    }
}
