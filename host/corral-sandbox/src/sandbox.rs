//! The sandbox: one store and instance no call has used per call,
//! deny-by-default WASI, and every limit (fuel, epoch deadline, wall-clock
//! timeout, memory cap) applied before any guest code runs. This module is the only place guest code is
//! executed; `describe` at load time goes through it too.
//!
//! What a guest gets by default (a plugin's policy can add directories,
//! environment variables and HTTP destinations, see [`grants`]):
//! - WASI with no preopened directories, no environment variables, no arguments,
//!   stdin closed, TCP, UDP and name lookup disabled, every socket address
//!   denied; wall and monotonic clocks and random numbers are available.
//! - stdout and stderr captured to bounded buffers ([`stdio::Capture`]) and
//!   logged after the call.
//! - The `corral:tool/host` imports: `log`, `progress`, `request-approval`
//!   ([`imports`]); approval requests go to an [`ApprovalHook`] the caller
//!   injects, so the sandbox knows nothing of reviewers.
//! - Code mode's runner ([`code`]) is linked with its own interface only
//!   (`corral:code/tools`, answered by a [`ToolCalls`] hook the caller
//!   injects) and no WASI at all.
//! - `wasi:http` outgoing requests, each checked against the plugin's allow-list
//!   in the `send_request` hook; the default allow-list is empty, so every
//!   request fails inside the guest with `HTTP-request-denied`. Raw sockets stay
//!   off whatever the policy says.

//!
//! Invariant: nothing outside this module creates a `Store` for plugin code,
//! and every store it creates has fuel, an epoch deadline, a wall-clock timer
//! and a memory limiter set before instantiation (and, for a component of
//! another world, a cap on host memory per lifted value,
//! [`Limits::transfer_bytes`]), by `store::new_store`. A store serves at
//! most one call: made when the call arrives, or ahead of it under the
//! plugin's limits and then bound to the call's ([`prepared`]); dropped
//! when the call ends, after its answer when the run holds a pool
//! [`Slot`].

pub mod any;
mod budget;
mod client;
pub mod code;
mod failure;
mod files_seen;
pub mod http;
mod imports;
mod outcome;
pub mod prepared;
pub mod stdio;
mod store;
#[cfg(test)]
mod type_checks;
mod versions;

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::engine::Engine;
use crate::error::CallError;
use crate::grants::Grants;
use crate::limits::Limits;
use budget::{Budget, Limiter};
pub use code::{ConsoleLevel, ReviewPause, RunnerPre, ScriptError, ToolCalls};
pub use failure::Failure;
use http::{HttpGate, Resolver};
pub use imports::{ApprovalHook, HookDecision, HookFuture};
pub use imports::{MAX_LOG_LINES, MAX_LOG_MESSAGE_BYTES};
pub use outcome::{ErrorInfo, GuestError};
pub use prepared::{Blueprint, Instances, MIN_GAP, OFF_PATH_DROP, PreparedStats, Slot, Want};
use stdio::Capture;
pub(crate) use versions::Instantiated;
pub use versions::PluginPre;

/// Receives a guest's `progress(message)` calls as `(tool, message)`. Called
/// on the runtime thread that runs the guest: keep it short (send to a
/// channel).
pub type ProgressSink = std::sync::Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Epoch ticks a guest runs before yielding to the async runtime: 2 ticks of
/// [`EPOCH_TICK`](crate::engine::EPOCH_TICK) (5 ms), so about every 10 ms.
pub const SLICE_TICKS: u64 = 2;

/// Builds the linker every plugin is instantiated with: WASI p2 (async),
/// its `wasi:filesystem` recording each path operation (`files_seen`),
/// `wasi:http` (outgoing, gated per call by the plugin's allow-list) and the
/// `corral:tool/host` interface.
pub fn linker(engine: &Engine) -> wasmtime::Result<Linker<SandboxState>> {
    let mut linker = Linker::new(engine.wasmtime());
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    files_seen::add_to_linker(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    versions::add_to_linker(&mut linker)?;
    Ok(linker)
}

/// The per-call store data.
pub struct SandboxState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    http_gate: HttpGate,
    table: ResourceTable,
    limiter: Limiter,
    stdout: Capture,
    stderr: Capture,
    plugin: Arc<str>,
    tool: Arc<str>,
    approval: Option<Arc<dyn ApprovalHook>>,
    /// Answers the guest's client requests (0.3.0 `corral:tool/client`).
    client: Option<Arc<dyn crate::client::ClientHook>>,
    /// What the policy lets the guest ask the client.
    client_grants: crate::client::ClientGrants,
    /// `sample` requests made so far in this call.
    samples: u32,
    /// Requests named by the host so far in this call, per kind (elicit,
    /// sample, roots): the `n` of the default key `elicit-n`.
    unnamed: [u32; 3],
    /// Answers a script's tool calls (code mode's runner only).
    tools: Option<Arc<dyn ToolCalls>>,
    budget: Arc<Budget>,
    progress: Option<ProgressSink>,
    /// The reason of an exit-early decision, if the guest got one.
    rejected: Option<String>,
    /// A configuration error met while reviewing (no reviewer, no terminal).
    config_error: Option<CallError>,
    /// Log and progress lines written for this call.
    log_lines: u32,
    /// Log and progress lines dropped past [`imports::MAX_LOG_LINES`].
    log_dropped: u64,
    /// The call's leak scan.
    leaks: crate::redact::Leaks,
    /// The guest's filesystem operations, by path.
    files_seen: files_seen::FilesSeen,
    /// The run's recording or replay, if any.
    tape: Option<crate::tape::Tape>,
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

/// What to run inside the sandbox.
pub enum Op<'a> {
    /// `tool.describe()`.
    Describe,
    /// `tool.call(name, arguments, context)`.
    Call {
        /// The tool's name as the guest knows it (before any policy rename).
        name: &'a str,
        /// The arguments, JSON text of an object, already validated.
        arguments: &'a str,
        /// The call context the plugin may see (WIT `context`).
        context: &'a Vec<(String, String)>,
    },
    /// Code mode: the runner's `run(code, seed, start-ms)`
    /// ([`PluginPre::Runner`] only).
    Script {
        /// The script: the body of an async JavaScript function.
        code: &'a str,
        /// Seeds the script's `Math.random`.
        seed: u64,
        /// The script's first `Date.now()`, in ms since the Unix epoch.
        start_ms: u64,
    },
}

/// The result of an [`Op`].
pub enum OpResult {
    /// The specs `describe` returned, unchecked.
    Describe(Vec<crate::spec::RawSpec>),
    /// The guest's answer to `call`: its output, or its own error.
    Call(Result<crate::parts::GuestOutput, GuestError>),
    /// The runner's answer: the script's return value as JSON text, or its
    /// uncaught exception.
    Script(Result<String, ScriptError>),
}

/// Everything a run reports besides its result.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
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
    /// Log, progress and console lines dropped past
    /// [`MAX_LOG_LINES`](imports::MAX_LOG_LINES).
    pub log_dropped: u64,
    /// What the run used: fuel, memory peak, wall time, HTTP bytes.
    pub usage: crate::attempts::Usage,
    /// What the run attempted at the boundary (outbound HTTP, filesystem).
    pub attempts: crate::attempts::Attempts,
}

/// Who is running and with what, for one sandboxed run.
pub struct RunSetup<'a> {
    /// The engine (its epoch ticker drives the deadline).
    pub engine: &'a Engine,
    /// The plugin's linked component.
    pub pre: &'a PluginPre,
    /// The run's effective limits: fuel, deadline, memory, output, stdio.
    pub limits: &'a Limits,
    /// The plugin's name (file stem), for logs and the guest's host calls.
    pub plugin: Arc<str>,
    /// The tool's name, for logs and progress.
    pub tool: Arc<str>,
    /// What the plugin's policy lets the guest reach.
    pub grants: &'a Grants,
    /// Decides the guest's `request-approval`; `None` answers every request
    /// with a configuration error (as for `describe`).
    pub approval: Option<Arc<dyn ApprovalHook>>,
    /// Answers the guest's requests to the MCP client (`elicit`, `sample`,
    /// `roots`) that the policy grants; `None` answers each `unsupported`.
    pub client: Option<Arc<dyn crate::client::ClientHook>>,
    /// Answers the tool calls of code mode's runner; `None` for plugins
    /// (the runner's calls then fail, naming the missing hook).
    pub tools: Option<Arc<dyn ToolCalls>>,
    /// Resolves the host names of outbound HTTP requests.
    pub resolver: Arc<dyn Resolver>,
    /// Receives the guest's `progress` messages; `None` drops them.
    pub progress: Option<ProgressSink>,
    /// The call's leak scan: log, progress and approval text and outbound
    /// HTTP (both ways) are scanned for the plugin's secrets.
    pub leaks: crate::redact::Leaks,
    /// Records what the guest receives, or answers it from a recording
    /// ([`tape`](crate::tape)); `None` for a plain run. A replaying tape
    /// keeps the run off the network: every request is answered from it.
    pub tape: Option<crate::tape::Tape>,
    /// The pool slot the run holds ([`Instances::slot`]), with an instance
    /// made ahead of the call when one was ready. With a slot, the run's
    /// store is dropped after the answer, off the caller's path, and the
    /// slot freed after it; without one (`describe`, a replay, a script)
    /// the run starts fresh and drops its store before it returns, and the
    /// caller holds the pool's slot around it.
    pub slot: Option<Slot>,
}

/// Runs `op` in an instance no call has used: one made ahead and bound to
/// this call ([`Instances`]) when `setup.slot` holds one this call's limits
/// allow, else a fresh one made now, under every limit. Nothing survives
/// the call: the store is dropped when it ends (after the answer, with a
/// slot).
pub async fn run(setup: RunSetup<'_>, op: Op<'_>) -> (Result<OpResult, Failure>, RunReport) {
    let limits = setup.limits;
    let bound = store::Bound {
        tool: setup.tool,
        approval: setup.approval,
        client: setup.client,
        tools: setup.tools,
        progress: setup.progress,
        leaks: setup.leaks,
    };
    let mut slot = setup.slot;
    // Only a plain call takes a store made ahead: a recorded one must record
    // its start-up, and `describe` and scripts always start fresh.
    let eligible = matches!(op, Op::Call { .. }) && setup.tape.is_none();
    let ready = slot.as_mut().and_then(|slot| slot.take(limits, eligible));
    let made = match ready {
        Some((mut store, instance)) => {
            let _bind = crate::trace::bind_span().entered();
            store::bind(&mut store, limits, bound)
                .map(|()| (store, Some(instance)))
                .map_err(|err| Failure::Trap(format!("cannot set fuel: {err}")))
        }
        None => store::new_store(
            store::Blank {
                engine: setup.engine,
                pre: setup.pre,
                plugin: setup.plugin,
                grants: setup.grants,
                resolver: setup.resolver,
                tape: setup.tape,
            },
            limits,
            bound,
        )
        .map(|store| (store, None)),
    };
    let (mut store, instance) = match made {
        Ok(made) => made,
        Err(failure) => return (Err(failure), RunReport::default()),
    };
    let budget = store.data().budget.clone();
    let pre = setup.pre;
    // The work is pinned here, in this future, for `within` to drive by
    // reference; the block ends its borrow of the store.
    let outcome = {
        let work = std::pin::pin!(async {
            match op {
                Op::Describe => pre.describe(&mut store).await.map(OpResult::Describe),
                Op::Call {
                    name,
                    arguments,
                    context,
                } => pre
                    .call(
                        &mut store,
                        instance,
                        name,
                        arguments,
                        context,
                        limits.output_bytes,
                    )
                    .await
                    .map(OpResult::Call),
                Op::Script {
                    code,
                    seed,
                    start_ms,
                } => pre
                    .script(&mut store, code, seed, start_ms)
                    .await
                    .map(OpResult::Script),
            }
        });
        budget::within(&budget, work).await
    };
    let result = match outcome {
        None => Err(Failure::Timeout),
        Some(Ok(value)) => Ok(value),
        Some(Err(err)) => {
            let (stderr, _) = store.data().stderr.contents();
            Err(failure::classify(
                &err,
                store.data().limiter.memory_refused,
                &stderr,
            ))
        }
    };
    let report = report(&mut store, limits, &budget);
    match slot {
        Some(slot) => slot.finish(store),
        None => drop(store),
    }
    (result, report)
}

/// What the run in `store` used and attempted, once it ended.
fn report(store: &mut Store<SandboxState>, limits: &Limits, budget: &Budget) -> RunReport {
    let fuel_consumed = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
    let data = store.data_mut();
    let dropped = data.log_dropped;
    if dropped > 0 {
        tracing::warn!(
            plugin = &*data.plugin,
            tool = &*data.tool,
            dropped,
            "{dropped} guest log and progress messages dropped (more than {} in one call)",
            imports::MAX_LOG_LINES
        );
    }
    let mut attempts = data.http_gate.meter.take();
    data.files_seen.report(&mut attempts);
    let usage = crate::attempts::Usage {
        fuel: fuel_consumed,
        memory_peak: data.limiter.memory_peak,
        wall: budget.used(),
        egress_bytes: attempts.egress_bytes,
    };
    RunReport {
        fuel_consumed,
        stdout: data.stdout.contents(),
        stderr: data.stderr.contents(),
        rejected: data.rejected.take(),
        config_error: data.config_error.take(),
        log_dropped: dropped,
        usage,
        attempts,
    }
}
