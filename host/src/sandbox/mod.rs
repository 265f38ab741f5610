//! The sandbox: one fresh store and instance per call, deny-by-default WASI, and
//! every limit (fuel, epoch deadline, wall-clock timeout, memory cap) applied
//! before any guest code runs. This module is the only place guest code is
//! executed; `describe` at load time goes through it too.
//!
//! What a guest gets by default (a plugin's policy can add directories,
//! environment variables and HTTP destinations, see [`grants`]):
//! - WASI with no preopened directories, no environment variables, no arguments,
//!   stdin closed, TCP, UDP and name lookup disabled, every socket address
//!   denied; wall and monotonic clocks and random numbers are available.
//! - stdout and stderr captured to bounded buffers ([`stdio::Capture`]) and
//!   logged after the call.
//! - The `corral:tool/host` imports: `log`, `progress`, `request-approval`.
//! - `wasi:http` outgoing requests, each checked against the plugin's allow-list
//!   in the `send_request` hook; the default allow-list is empty, so every
//!   request fails inside the guest with `HTTP-request-denied`. Raw sockets stay
//!   off whatever the policy says.

pub mod grants;
pub mod stdio;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::approval::gate::{Gatekeeper, Verdict};
use crate::approval::{Gate, ReviewRequest};
use crate::bindings::corral::tool::types as wit;
use crate::bindings::{Plugin, PluginPre};
use crate::engine::Engine;
use crate::error::CallError;
use crate::limits::Limits;
use grants::{Grants, HttpGate};
use stdio::Capture;

/// Epoch ticks a guest runs before yielding to the async runtime: 2 ticks of
/// [`EPOCH_TICK`](crate::engine::EPOCH_TICK) (5 ms), so about every 10 ms.
pub const SLICE_TICKS: u64 = 2;

/// Longest guest log or progress message kept, in bytes; the rest is cut.
pub const MAX_LOG_MESSAGE_BYTES: usize = 4096;

/// Receives a guest's `progress(message)` calls: `(tool, message)`.
pub type ProgressSink = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Builds the linker every plugin is instantiated with: WASI p2 (async),
/// `wasi:http` (outgoing, gated per call by [`grants::HttpGate`]) and the
/// `corral:tool/host` interface.
pub(crate) fn linker(engine: &Engine) -> wasmtime::Result<Linker<SandboxState>> {
    let mut linker = Linker::new(engine.wasmtime());
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    Plugin::add_to_linker::<SandboxState, HasSelf<SandboxState>>(&mut linker, |state| state)?;
    Ok(linker)
}

/// The WASI context of a call: everything denied but what `grants` adds,
/// stdio captured.
fn wasi_ctx(grants: &Grants, stdout: &Capture, stderr: &Capture) -> std::io::Result<WasiCtx> {
    // `WasiCtxBuilder::new()` already has no env, args or preopens, a closed
    // stdin and every socket address denied; the explicit calls below make the
    // network denial independent of that default. No grant turns sockets on.
    let mut builder = WasiCtxBuilder::new();
    builder
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    grants.apply(&mut builder)?;
    Ok(builder.build())
}

/// `StoreLimits` plus a record of whether a growth was refused, so that the trap
/// that usually follows can be reported as a memory-cap failure.
struct Limiter {
    inner: StoreLimits,
    memory_refused: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.inner.memory_growing(current, desired, maximum)?;
        if !allowed {
            self.memory_refused = true;
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.inner.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

/// What a guest-requested approval (`host.request-approval`) is reviewed with.
#[derive(Clone, Default)]
pub(crate) struct ApprovalSetup {
    /// The reviewer, standing approvals, audit log and review timeout.
    pub gate: Arc<Gatekeeper>,
    /// The plugin's sha256, for standing approvals and the audit log.
    pub plugin_sha256: String,
    /// The call's arguments, shown to the reviewer.
    pub arguments: serde_json::Value,
    /// Validates a reviewer's edited arguments against the tool's schema.
    pub validator: Option<Arc<jsonschema::Validator>>,
    /// The call's own reviewer, if it overrides the host's.
    pub reviewer: Option<Arc<dyn crate::approval::Reviewer>>,
}

/// The call's wall-clock budget, paused while a reviewer decides a
/// guest-requested approval: a person reading a prompt is not the guest using
/// its time. Shared by the epoch callback (inside the store) and the outer
/// timeout (outside it).
#[derive(Debug)]
pub(crate) struct Budget {
    start: Instant,
    timeout: Duration,
    /// Total time spent in finished reviews, and the start of the current one.
    paused: Mutex<(Duration, Option<Instant>)>,
}

impl Budget {
    fn new(timeout: Duration) -> Self {
        Self {
            start: Instant::now(),
            timeout,
            paused: Mutex::new((Duration::ZERO, None)),
        }
    }

    fn pause(&self) {
        if let Ok(mut p) = self.paused.lock() {
            p.1 = Some(Instant::now());
        }
    }

    fn resume(&self) {
        if let Ok(mut p) = self.paused.lock()
            && let Some(since) = p.1.take()
        {
            p.0 += since.elapsed();
        }
    }

    /// How much of the budget is left now. While a review is running this is
    /// what was left when it started: the deadline can only move later.
    fn left(&self) -> Duration {
        let (paused, since) = self
            .paused
            .lock()
            .map(|p| *p)
            .unwrap_or((Duration::ZERO, None));
        let now = since.unwrap_or_else(Instant::now);
        let used = now
            .saturating_duration_since(self.start)
            .saturating_sub(paused);
        self.timeout.saturating_sub(used)
    }
}

/// The per-call store data.
pub(crate) struct SandboxState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    http_gate: HttpGate,
    table: ResourceTable,
    limiter: Limiter,
    stderr: Capture,
    plugin: Arc<str>,
    tool: Arc<str>,
    approval: ApprovalSetup,
    budget: Arc<Budget>,
    progress: Option<ProgressSink>,
    /// The reason of an exit-early decision, if the guest got one.
    rejected: Option<String>,
    /// A configuration error met while reviewing (no reviewer, no terminal).
    config_error: Option<CallError>,
}

impl WasiHttpView for SandboxState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_gate,
        }
    }
}

impl WasiView for SandboxState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

fn truncate(mut message: String) -> String {
    if message.len() > MAX_LOG_MESSAGE_BYTES {
        let mut cut = MAX_LOG_MESSAGE_BYTES;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

impl crate::bindings::corral::tool::host::Host for SandboxState {
    async fn log(&mut self, level: wit::LogLevel, message: String) {
        let message = truncate(message);
        let (plugin, tool) = (&*self.plugin, &*self.tool);
        match level {
            wit::LogLevel::Trace => tracing::trace!(plugin, tool, "{message}"),
            wit::LogLevel::Debug => tracing::debug!(plugin, tool, "{message}"),
            wit::LogLevel::Info => tracing::info!(plugin, tool, "{message}"),
            wit::LogLevel::Warn => tracing::warn!(plugin, tool, "{message}"),
            wit::LogLevel::Error => tracing::error!(plugin, tool, "{message}"),
        }
    }

    async fn progress(&mut self, message: String) {
        let message = truncate(message);
        tracing::info!(
            plugin = &*self.plugin,
            tool = &*self.tool,
            "progress: {message}"
        );
        if let Some(sink) = &self.progress {
            sink(&self.tool, &message);
        }
    }

    async fn request_approval(&mut self, description: String) -> wit::ApprovalDecision {
        let request = ReviewRequest {
            gate: Gate::Requested,
            tool: self.tool.to_string(),
            plugin: self.plugin.to_string(),
            plugin_sha256: self.approval.plugin_sha256.clone(),
            description: truncate(description),
            arguments: self.approval.arguments.clone(),
            timeout: self.approval.gate.timeout,
        };
        self.budget.pause();
        let verdict = self
            .approval
            .gate
            .review(
                request,
                self.approval.validator.as_deref(),
                self.approval.reviewer.as_ref(),
            )
            .await;
        self.budget.resume();
        match verdict {
            Ok(Verdict::Proceed { edited: None }) => wit::ApprovalDecision::Continue,
            Ok(Verdict::Proceed {
                edited: Some(revised),
            }) => wit::ApprovalDecision::Edit(revised),
            Ok(Verdict::Reject(reason)) => {
                self.rejected = Some(reason.clone());
                wit::ApprovalDecision::ExitEarly(reason)
            }
            Err(err) => {
                let reason = err.to_string();
                self.config_error = Some(err);
                wit::ApprovalDecision::ExitEarly(reason)
            }
        }
    }
}

impl wit::Host for SandboxState {}

/// Why guest code stopped without returning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Fuel ran out.
    OutOfFuel,
    /// The epoch deadline or the wall-clock timeout passed.
    Timeout,
    /// A memory growth was refused and the guest then failed.
    MemoryLimit,
    /// The wasm stack overflowed.
    StackOverflow,
    /// Any other trap; the text includes the guest's panic message if it printed one.
    Trap(String),
    /// The sandbox could not be set up (a granted directory is gone); no guest
    /// code ran.
    Setup(String),
}

impl Failure {
    /// Turns the failure into the public error class for `tool`.
    pub(crate) fn into_call_error(self, tool: &str, limits: &Limits) -> crate::CallError {
        use crate::CallError;
        let tool = tool.to_string();
        match self {
            Failure::OutOfFuel => CallError::OutOfFuel {
                tool,
                budget: limits.fuel,
            },
            Failure::Timeout => CallError::Timeout {
                tool,
                timeout_ms: limits.timeout_ms,
            },
            Failure::MemoryLimit => CallError::MemoryLimit {
                tool,
                limit_bytes: limits.memory_bytes,
            },
            Failure::StackOverflow => CallError::StackOverflow { tool },
            Failure::Trap(message) => CallError::Trapped { tool, message },
            Failure::Setup(message) => CallError::Internal { tool, message },
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::OutOfFuel => f.write_str("ran out of fuel"),
            Failure::Timeout => f.write_str("exceeded its deadline"),
            Failure::MemoryLimit => f.write_str("hit the memory cap"),
            Failure::StackOverflow => f.write_str("overflowed its stack"),
            Failure::Trap(message) | Failure::Setup(message) => f.write_str(message),
        }
    }
}

/// What to run inside the sandbox.
pub(crate) enum Op<'a> {
    /// `tool.describe()`.
    Describe,
    /// `tool.call(name, arguments, context)`.
    Call {
        name: &'a str,
        arguments: &'a str,
        context: Vec<(String, String)>,
    },
}

/// The result of an [`Op`].
pub(crate) enum OpResult {
    Describe(Vec<wit::ToolSpec>),
    Call(Result<String, wit::ToolError>),
}

/// Everything a run reports besides its result.
#[derive(Debug, Clone)]
pub(crate) struct RunReport {
    /// Fuel units consumed.
    pub fuel_consumed: u64,
    /// The guest printed to stdout: kept text and discarded byte count.
    pub stdout: (String, u64),
    /// The same for stderr.
    pub stderr: (String, u64),
    /// Reason of an exit-early approval decision the guest received.
    pub rejected: Option<String>,
    /// A configuration error met during a guest-requested review.
    pub config_error: Option<CallError>,
}

/// Who is running and with what, for one sandboxed run.
pub(crate) struct RunSetup<'a> {
    pub engine: &'a Engine,
    pub pre: &'a PluginPre<SandboxState>,
    pub limits: &'a Limits,
    pub plugin: Arc<str>,
    pub tool: Arc<str>,
    pub grants: &'a Grants,
    pub approval: ApprovalSetup,
    pub progress: Option<ProgressSink>,
}

/// Instantiates a fresh instance under every limit, runs `op`, and tears the
/// store down. Nothing survives the call.
pub(crate) async fn run(setup: RunSetup<'_>, op: Op<'_>) -> (Result<OpResult, Failure>, RunReport) {
    let limits = setup.limits;
    let stdout = Capture::new(limits.stdio_bytes);
    let stderr = Capture::new(limits.stdio_bytes);
    let budget = Arc::new(Budget::new(limits.timeout()));
    let wasi = match wasi_ctx(setup.grants, &stdout, &stderr) {
        Ok(wasi) => wasi,
        Err(err) => {
            let report = RunReport {
                fuel_consumed: 0,
                stdout: (String::new(), 0),
                stderr: (String::new(), 0),
                rejected: None,
                config_error: None,
            };
            return (Err(Failure::Setup(err.to_string())), report);
        }
    };
    let state = SandboxState {
        wasi,
        http: WasiHttpCtx::new(),
        http_gate: HttpGate {
            allow: setup.grants.http_allow.clone(),
            plugin: setup.plugin.clone(),
            tool: setup.tool.clone(),
        },
        table: ResourceTable::new(),
        limiter: Limiter {
            inner: StoreLimitsBuilder::new()
                .memory_size(limits.memory_bytes)
                .build(),
            memory_refused: false,
        },
        stderr: stderr.clone(),
        plugin: setup.plugin,
        tool: setup.tool,
        approval: setup.approval,
        budget: budget.clone(),
        progress: setup.progress,
        rejected: None,
        config_error: None,
    };
    let mut store = Store::new(setup.engine.wasmtime(), state);
    store.limiter(|state| &mut state.limiter);
    // Fuel and the epoch deadline are per store: set them on every store, before
    // instantiation (start functions run guest code too).
    let fuel_ok = store.set_fuel(limits.fuel);
    // Guest code runs in slices of at most SLICE_TICKS epoch ticks. At the end
    // of each slice it yields to the async runtime (so a dropped call, e.g. a
    // cancelled MCP request, stops within a slice, and a spinning guest does
    // not hold its worker thread), then continues with what is left of the
    // budget (extended by approval reviews); with nothing left it traps.
    let slice = Engine::deadline_ticks(limits.timeout()).min(SLICE_TICKS);
    store.set_epoch_deadline(slice);
    store.epoch_deadline_callback(|ctx| {
        let left = ctx.data().budget.left();
        Ok(if left.is_zero() {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Yield(Engine::deadline_ticks(left).min(SLICE_TICKS))
        })
    });

    let result = match fuel_ok {
        Err(err) => Err(Failure::Trap(format!("cannot set fuel: {err}"))),
        Ok(()) => {
            let pre = setup.pre;
            let work = async {
                let plugin = pre.instantiate_async(&mut store).await?;
                let tool = plugin.corral_tool_tool();
                match op {
                    Op::Describe => tool.call_describe(&mut store).await.map(OpResult::Describe),
                    Op::Call {
                        name,
                        arguments,
                        context,
                    } => tool
                        .call_call(&mut store, name, arguments, &context)
                        .await
                        .map(OpResult::Call),
                }
            };
            // The epoch stops guest code spinning in wasm; this timer stops a
            // guest parked in an async host call (a WASI sleep, a poll). Waking
            // early is harmless: the budget is re-read and the timer re-armed.
            let outcome = {
                let mut work = std::pin::pin!(work);
                loop {
                    let left = budget.left();
                    if left.is_zero() {
                        break None;
                    }
                    tokio::select! {
                        done = &mut work => break Some(done),
                        () = tokio::time::sleep(left) => {}
                    }
                }
            };
            match outcome {
                None => Err(Failure::Timeout),
                Some(Ok(value)) => Ok(value),
                Some(Err(err)) => Err(classify(&err, store.data())),
            }
        }
    };
    let fuel_consumed = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
    let report = RunReport {
        fuel_consumed,
        stdout: stdout.contents(),
        stderr: stderr.contents(),
        rejected: store.data_mut().rejected.take(),
        config_error: store.data_mut().config_error.take(),
    };
    (result, report)
}

/// Maps a wasmtime error to a [`Failure`] class.
fn classify(err: &wasmtime::Error, state: &SandboxState) -> Failure {
    match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => return Failure::OutOfFuel,
        Some(Trap::Interrupt) => return Failure::Timeout,
        Some(Trap::StackOverflow) => return Failure::StackOverflow,
        _ => {}
    }
    if state.limiter.memory_refused {
        return Failure::MemoryLimit;
    }
    let mut message = match err.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{:#}", err.root_cause()),
    };
    let (stderr, _) = state.stderr.contents();
    if let Some(reason) = crash_reason(&stderr) {
        message.push_str(&format!(" (guest {reason})"));
    }
    Failure::Trap(message)
}

/// What the guest said about its crash on stderr, in the words of its
/// language's runtime, newest first: a Python exception (componentize-py
/// prints the traceback, then its own runtime panics), a JavaScript value
/// thrown out of an export (componentize-js reports it while lifting the
/// result), or a Rust panic. `None` when stderr holds none of them (a C
/// `abort()` says nothing).
fn crash_reason(stderr: &str) -> Option<String> {
    python_exception(stderr)
        .or_else(|| javascript_exception(stderr))
        .or_else(|| panic_message(stderr))
        .map(truncate)
}

/// The exception line ("RuntimeError: kaboom") of the last Python traceback.
fn python_exception(stderr: &str) -> Option<String> {
    let start = stderr.rfind("Traceback (most recent call last):")?;
    let line = stderr[start..]
        .lines()
        .skip(1)
        .find(|line| !line.is_empty() && !line.starts_with(char::is_whitespace))?;
    Some(format!("raised {}", line.trim()))
}

/// The value a JavaScript export threw, from componentize-js's report
/// "invalid variant tag value `undefined` (received `Error: kaboom`)".
fn javascript_exception(stderr: &str) -> Option<String> {
    const MARK: &str = "(received `";
    let start = stderr.rfind(MARK)? + MARK.len();
    let end = stderr[start..].find("`)")?;
    Some(format!("threw {}", &stderr[start..start + end]))
}

/// Finds a Rust panic line ("panicked at src/lib.rs:3:5:\nmessage") in stderr.
fn panic_message(stderr: &str) -> Option<String> {
    let start = stderr.rfind("panicked at ")?;
    let text: String = stderr[start..]
        .lines()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    Some(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_panic_message() {
        let stderr = "noise\nthread '<unnamed>' panicked at src/lib.rs:3:5:\nboom\nnote: run with RUST_BACKTRACE";
        assert_eq!(
            panic_message(stderr).as_deref(),
            Some("panicked at src/lib.rs:3:5: boom")
        );
        assert_eq!(panic_message("all fine"), None);
        assert_eq!(crash_reason("all fine"), None);
    }

    #[test]
    fn finds_a_python_exception_before_the_runtime_panic() {
        let stderr = "Traceback (most recent call last):\n  File \"/0/app.py\", line 5, in boom\n    raise RuntimeError(message)\nRuntimeError: kaboom\n\nthread '<unnamed>' (1) panicked at runtime/src/lib.rs:1293:29:\nPython function threw an unexpected exception\n";
        assert_eq!(
            crash_reason(stderr).as_deref(),
            Some("raised RuntimeError: kaboom")
        );
    }

    #[test]
    fn finds_a_thrown_javascript_value() {
        let stderr = "invalid variant tag value `undefined` (received `Error: kaboom`) specified for `ToolError`\nStack:\n  export_tool_0_1_0$call@initializer.js:419:17\n";
        assert_eq!(crash_reason(stderr).as_deref(), Some("threw Error: kaboom"));
    }

    #[test]
    fn truncates_on_a_char_boundary() {
        let long = "é".repeat(MAX_LOG_MESSAGE_BYTES);
        let cut = truncate(long);
        assert!(cut.len() <= MAX_LOG_MESSAGE_BYTES + "…".len());
        assert!(cut.ends_with('…'));
    }
}
