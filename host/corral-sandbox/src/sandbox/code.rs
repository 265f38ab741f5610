//! Code mode's runner inside the sandbox: the component that runs a script
//! (`host/corral-sandbox/runner/`, world `corral:code/runner@0.1.0` in
//! `wit/code`), its linker, and the [`ToolCalls`] hook through which the
//! call path answers the script's tool calls. The sandbox never calls the
//! pipeline itself: as with [`ApprovalHook`](super::ApprovalHook), the call
//! layer injects the hook for one run.
//!
//! The runner is linked with `corral:code/tools` and nothing else: it is
//! built with WASI stubbed out (every WASI function traps inside it), so no
//! preopen, environment, socket, clock or random source of the host's is
//! reachable from a script, whatever a policy grants. It runs like any guest:
//! a fresh store and instance per script, with fuel, the epoch deadline, the
//! wall-clock budget (over the whole run, inner calls included) and the
//! memory cap set before instantiation ([`run`](super::run)).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tracing::Instrument as _;
use wasmtime::Store;
use wasmtime::component::{HasSelf, InstancePre, Linker};

use super::SandboxState;
use super::budget::Budget;
use super::imports::truncate;
use crate::engine::Engine;
use crate::script::{ToolFailure, ToolOutput};
use crate::trace::{instantiate_span, run_span};

#[allow(missing_docs)]
mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/code",
        world: "corral:code/runner@0.1.0",
        imports: { default: async | trappable },
        exports: { default: async },
    });
}

use bindings::corral::code::tools as wit;

/// The runner component, as `scripts/build-runner.sh` built it from
/// `host/corral-sandbox/runner/runner.js` (CI rebuilds it and compares the
/// bytes). About 3 MB; compiled once into the component cache.
pub const RUNNER_WASM: &[u8] = include_bytes!("../../runner/runner.wasm");

/// The runner's world, for messages: `corral:code/runner@0.1.0`.
pub const RUNNER_WORLD: &str = "corral:code/runner@0.1.0";

/// A script's console line's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConsoleLevel {
    /// `console.debug`.
    Debug,
    /// `console.log`, `console.info`.
    Info,
    /// `console.warn`.
    Warn,
    /// `console.error`.
    Error,
}

/// The future a [`ToolCalls`] method returns.
pub type ToolFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Stops the script's wall-clock budget while a reviewer decides one of its
/// tool calls (a person reading a prompt is not the script using its time),
/// as the budget stops for a guest's own `request-approval`. Overlapping
/// reviews are counted: the clock runs again when the last one ends.
#[derive(Clone)]
pub struct ReviewPause(Arc<Budget>);

impl ReviewPause {
    /// A review starts: the budget stands still.
    pub fn pause(&self) {
        self.0.pause();
    }

    /// A review ended: the budget runs again once no other review runs.
    pub fn resume(&self) {
        self.0.resume();
    }
}

impl std::fmt::Debug for ReviewPause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReviewPause")
    }
}

/// Answers one script's tool calls: installed by the call layer for one run
/// of the runner, so that each call takes the whole call path of a direct
/// call. The run's wall-clock budget keeps running while a call is answered.
pub trait ToolCalls: Send + Sync {
    /// `tools.<name>(arguments)`: `arguments` is JSON text of an object;
    /// `pause` stops the run's budget while a reviewer decides the call.
    fn call(
        &self,
        name: String,
        arguments: String,
        pause: ReviewPause,
    ) -> ToolFuture<'_, Result<ToolOutput, ToolFailure>>;

    /// `tools.parallel(...)`: the calls as one wave, results in order.
    fn parallel(
        &self,
        calls: Vec<(String, String)>,
        pause: ReviewPause,
    ) -> ToolFuture<'_, Vec<Result<ToolOutput, ToolFailure>>>;

    /// A console line, already cut to
    /// [`MAX_LOG_MESSAGE_BYTES`](super::MAX_LOG_MESSAGE_BYTES), scanned for
    /// secrets and escaped; at most [`MAX_LOG_LINES`](super::MAX_LOG_LINES)
    /// per run reach it.
    fn console(&self, level: ConsoleLevel, line: String);

    /// Whether the run is to stop now, after the call just answered: one of
    /// its calls waits for approval that comes on a retry of the whole
    /// script, or a re-run did not repeat its journal. The runner then traps
    /// (the script cannot catch it) and the hook says why. False by
    /// default.
    fn halted(&self) -> bool {
        false
    }
}

/// The trap that stops a run its hook [halted](ToolCalls::halted).
fn halt() -> wasmtime::Error {
    wasmtime::Error::msg("the script's run was stopped by its tool-call hook")
}

/// An uncaught exception, or a script that could not run (a syntax error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// `Name: message`, as the exception had it (guest text: not yet
    /// escaped).
    pub message: String,
    /// Where in the script, 1-based, when the runner could tell.
    pub line: Option<u32>,
    /// The column, 1-based.
    pub column: Option<u32>,
}

/// The runner, linked and ready to instantiate.
#[derive(Clone)]
pub struct RunnerPre(bindings::RunnerPre<SandboxState>);

impl RunnerPre {
    /// Links `component` (the runner, compiled) with `corral:code/tools`
    /// and nothing else.
    ///
    /// # Errors
    /// When the component imports anything else or does not export `run`.
    pub fn new(
        engine: &Engine,
        component: &wasmtime::component::Component,
    ) -> wasmtime::Result<Self> {
        let mut linker: Linker<SandboxState> = Linker::new(engine.wasmtime());
        bindings::Runner::add_to_linker::<SandboxState, HasSelf<SandboxState>>(&mut linker, |s| s)?;
        let pre: InstancePre<SandboxState> = linker.instantiate_pre(component)?;
        Ok(Self(bindings::RunnerPre::new(pre)?))
    }

    /// Instantiates the runner in `store` and runs `code`.
    pub(super) async fn run(
        &self,
        store: &mut Store<SandboxState>,
        code: &str,
        seed: u64,
        start_ms: u64,
    ) -> wasmtime::Result<Result<String, ScriptError>> {
        let runner = self
            .0
            .instantiate_async(&mut *store)
            .instrument(instantiate_span())
            .await?;
        let answer = runner
            .call_run(&mut *store, code, seed, start_ms)
            .instrument(run_span())
            .await?;
        Ok(answer.map_err(|e| ScriptError {
            message: e.message,
            line: e.line,
            column: e.column,
        }))
    }
}

fn output(out: ToolOutput) -> wit::ToolOutput {
    match out {
        ToolOutput::Json(text) => wit::ToolOutput::Json(text),
        ToolOutput::Text(text) => wit::ToolOutput::Text(text),
    }
}

fn failure(f: ToolFailure) -> wit::ToolFailure {
    wit::ToolFailure {
        kind: f.kind.to_string(),
        code: f.code,
        message: f.message,
    }
}

fn answer(result: Result<ToolOutput, ToolFailure>) -> Result<wit::ToolOutput, wit::ToolFailure> {
    result.map(output).map_err(failure)
}

/// What a run without a [`ToolCalls`] hook answers (never in practice: the
/// runner only runs with one).
fn no_hook() -> ToolFailure {
    ToolFailure {
        kind: "execution_failed",
        code: None,
        message: "no tool calls are possible here".into(),
    }
}

impl wit::Host for SandboxState {
    async fn call(
        &mut self,
        name: String,
        arguments: String,
    ) -> wasmtime::Result<Result<wit::ToolOutput, wit::ToolFailure>> {
        match self.tools.clone() {
            None => Ok(Err(failure(no_hook()))),
            Some(hook) => {
                let pause = ReviewPause(self.budget.clone());
                let result = hook.call(name, arguments, pause).await;
                if hook.halted() {
                    return Err(halt());
                }
                Ok(answer(result))
            }
        }
    }

    async fn parallel(
        &mut self,
        calls: Vec<(String, String)>,
    ) -> wasmtime::Result<Vec<Result<wit::ToolOutput, wit::ToolFailure>>> {
        match self.tools.clone() {
            None => Ok(calls.iter().map(|_| Err(failure(no_hook()))).collect()),
            Some(hook) => {
                let pause = ReviewPause(self.budget.clone());
                let results = hook.parallel(calls, pause).await;
                if hook.halted() {
                    return Err(halt());
                }
                Ok(results.into_iter().map(answer).collect())
            }
        }
    }

    async fn log(&mut self, level: wit::LogLevel, line: String) -> wasmtime::Result<()> {
        if !self.may_log() {
            return Ok(());
        }
        let line =
            corral_names::text::escape(&truncate(self.leaks.string("console", line))).into_owned();
        let level = match level {
            wit::LogLevel::Debug => ConsoleLevel::Debug,
            wit::LogLevel::Info => ConsoleLevel::Info,
            wit::LogLevel::Warn => ConsoleLevel::Warn,
            wit::LogLevel::Error => ConsoleLevel::Error,
        };
        if let Some(hook) = &self.tools {
            hook.console(level, line);
        }
        Ok(())
    }
}
