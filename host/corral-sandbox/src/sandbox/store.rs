//! A run's store: its deny-by-default WASI context, its meters, and what
//! belongs to the call it serves ([`Bound`]). A store is made when a call
//! arrives ([`new_store`], the fresh path) or ahead of it
//! ([`prepared`](super::prepared)); either way [`bind`] is the one place
//! that sets the call's limits (fuel, epoch deadline, wall-clock budget,
//! memory, resources, stdio) and hooks, before the guest's export runs (a
//! store just made has its budget already, and takes the rest of `bind`,
//! [`attach`]).

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime::{Store, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};
use wasmtime_wasi_http::WasiHttpCtx;

use super::budget::{Budget, Limiter};
use super::http::{self, HttpGate, Resolver};
use super::stdio::Capture;
use super::{ApprovalHook, PluginPre, ProgressSink, SLICE_TICKS, SandboxState, ToolCalls};
use crate::engine::Engine;
use crate::grants::Grants;
use crate::limits::Limits;

/// What a store serves one call with, set by [`bind`]: the tool's name and
/// the call's hooks. A store made ahead of its call holds
/// [`Bound::idle`] until a call takes it.
pub(crate) struct Bound {
    /// The tool's name, for logs, progress and the HTTP gate.
    pub tool: Arc<str>,
    pub approval: Option<Arc<dyn ApprovalHook>>,
    pub client: Option<Arc<dyn crate::client::ClientHook>>,
    pub tools: Option<Arc<dyn ToolCalls>>,
    pub progress: Option<ProgressSink>,
    pub leaks: crate::redact::Leaks,
}

impl Bound {
    /// Nothing of a call: no hooks (a guest's approval request during its
    /// start-up is answered with a configuration error, as in `describe`),
    /// and a leak scan of its own that counts for no call.
    pub(crate) fn idle(plugin: &Arc<str>, grants: &Grants) -> Self {
        Self {
            tool: plugin.clone(),
            approval: None,
            client: None,
            tools: None,
            progress: None,
            leaks: crate::redact::Leaks::new(
                grants.redactor.clone(),
                plugin.clone(),
                Arc::default(),
            ),
        }
    }
}

/// The WASI context of a run: everything denied but what `grants` adds,
/// stdio captured.
fn wasi_ctx(
    grants: &Grants,
    stdout: &Capture,
    stderr: &Capture,
    tape: Option<&crate::tape::Tape>,
) -> std::io::Result<WasiCtx> {
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
    if let Some(tape) = tape {
        crate::tape::sources::install(&mut builder, tape);
    }
    Ok(builder.build())
}

/// What a store is made of that does not depend on the call.
pub(crate) struct Blank<'a> {
    pub engine: &'a Engine,
    pub pre: &'a PluginPre,
    pub plugin: Arc<str>,
    pub grants: &'a Grants,
    pub resolver: Arc<dyn Resolver>,
    pub tape: Option<crate::tape::Tape>,
}

/// A new store for `blank`, bound ([`bind`]) to `limits` and `bound`.
///
/// # Errors
/// When a granted directory cannot be opened, or fuel cannot be set.
pub(crate) fn new_store(
    blank: Blank<'_>,
    limits: &Limits,
    bound: Bound,
) -> Result<Store<SandboxState>, super::Failure> {
    let stdout = Capture::new(limits.stdio_bytes);
    let stderr = Capture::new(limits.stdio_bytes);
    let wasi = wasi_ctx(blank.grants, &stdout, &stderr, blank.tape.as_ref())
        .map_err(|err| super::Failure::Setup(err.to_string()))?;
    let grants = blank.grants;
    let state = SandboxState {
        wasi,
        http: WasiHttpCtx::new(),
        http_gate: HttpGate {
            allow: grants.http_allow.clone(),
            credentials: grants.http_credentials.clone(),
            allow_private: grants.http_private,
            resolver: blank.resolver,
            plugin: blank.plugin.clone(),
            tool: bound.tool.clone(),
            leaks: bound.leaks.clone(),
            meter: Arc::new(http::Meter::default()),
            tape: blank.tape.clone(),
        },
        table: ResourceTable::new(),
        limiter: Limiter {
            inner: StoreLimitsBuilder::new().build(),
            memory_refused: false,
            memory_peak: 0,
        },
        stdout,
        stderr,
        plugin: blank.plugin,
        tool: bound.tool.clone(),
        approval: None,
        client: None,
        client_grants: grants.client,
        samples: 0,
        unnamed: [0; 3],
        tools: None,
        budget: Arc::new(Budget::new(limits.timeout())),
        progress: None,
        rejected: None,
        config_error: None,
        log_lines: 0,
        log_dropped: 0,
        leaks: bound.leaks.clone(),
        files_seen: super::files_seen::FilesSeen::new(grants),
        tape: blank.tape,
    };
    let mut store = Store::new(blank.engine.wasmtime(), state);
    store.limiter(|state| &mut state.limiter);
    // What lifting one value may allocate on the host, for a component of
    // another world, whose results are lifted as `Val`s (40 bytes a list
    // element): bounded by the output cap, not wasmtime's 128 MiB default.
    // A plugin of corral's world lifts its result as typed values (0.1.0
    // and 0.2.0 one string, 0.3.0 a list of parts) under that default, so
    // the output cap, checked after, answers with the size; a 0.3.0 guest
    // listing millions of empty parts is stopped by the same default.
    if matches!(blank.pre, PluginPre::Any(..)) {
        store.set_hostcall_fuel(limits.transfer_bytes());
    }
    // Guest code runs in slices of at most SLICE_TICKS epoch ticks. At the end
    // of each slice it yields to the async runtime (so a dropped call, e.g. a
    // cancelled MCP request, stops within a slice, and a spinning guest does
    // not hold its worker thread), then continues with what is left of the
    // budget (extended by approval reviews); with nothing left it traps.
    store.epoch_deadline_callback(|ctx| {
        let left = ctx.data().budget.left();
        Ok(if left.is_zero() {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Yield(Engine::deadline_ticks(left).min(SLICE_TICKS))
        })
    });
    // The budget was made just above: only the rest of `bind`.
    attach(&mut store, limits, bound)
        .map_err(|err| super::Failure::Trap(format!("cannot set fuel: {err}")))?;
    Ok(store)
}

/// Binds `store` to a call: its limits and hooks. Fuel, the epoch deadline
/// and the wall-clock budget start again from `limits` (what the guest's
/// start-up used in a store made ahead counts for no call); the memory cap
/// and the resource table's capacity apply to what the store grows from
/// now on; the stdio captures keep at most `limits.stdio_bytes` each.
///
/// # Errors
/// When wasmtime refuses the fuel (fuel metering off: never on corral's
/// engine).
pub(crate) fn bind(
    store: &mut Store<SandboxState>,
    limits: &Limits,
    bound: Bound,
) -> wasmtime::Result<()> {
    let state = store.data_mut();
    // A fresh budget; in place when no one else holds the old one, saving
    // an allocation a call.
    match Arc::get_mut(&mut state.budget) {
        Some(budget) => *budget = Budget::new(limits.timeout()),
        None => state.budget = Arc::new(Budget::new(limits.timeout())),
    }
    attach(store, limits, bound)
}

/// [`bind`] but the budget: for a store whose budget is new
/// ([`new_store`]), which saves a clock read a call.
fn attach(store: &mut Store<SandboxState>, limits: &Limits, bound: Bound) -> wasmtime::Result<()> {
    let state = store.data_mut();
    state.http_gate.tool = bound.tool.clone();
    state.http_gate.leaks = bound.leaks.clone();
    state.tool = bound.tool;
    state.approval = bound.approval;
    state.client = bound.client;
    state.tools = bound.tools;
    state.progress = bound.progress;
    state.leaks = bound.leaks;
    state.limiter.inner = StoreLimitsBuilder::new()
        .memory_size(limits.memory_bytes)
        .build();
    state.table.set_max_capacity(limits.resources);
    state.stdout.set_capacity(limits.stdio_bytes);
    state.stderr.set_capacity(limits.stdio_bytes);
    // Fuel and the epoch deadline are per store: set on every store before
    // any guest code runs (start functions run guest code too), and again
    // when a call takes a store made ahead.
    store.set_epoch_deadline(Engine::deadline_ticks(limits.timeout()).min(SLICE_TICKS));
    store.set_fuel(limits.fuel)
}
