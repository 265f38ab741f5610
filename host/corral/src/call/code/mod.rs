//! Code mode: the built-in tool `execute_code` runs a script a model wrote
//! (the body of an async JavaScript function) in code mode's runner, a
//! QuickJS component that ships inside corral
//! ([`RUNNER_WASM`](corral_sandbox::RUNNER_WASM)), and every tool call the
//! script makes takes the whole call path of a direct call ([`hook`]).
//!
//! The rules come from MCP's client guide (2026-07-28, "Programmatic Tool
//! Calling / Code Mode"): the sandbox has no network (the runner imports no
//! WASI at all); the host dispatches each call as a tool call; approving a
//! script does not approve the calls it makes (each gated call is reviewed);
//! credentials stay in the host; limits are set; output is checked before it
//! reaches the model.
//!
//! Limits: the script runs under the host's default [`Limits`] (fuel, memory,
//! output), its deadline tightened by `timeout_ms` and the call's override,
//! and the deadline covers the whole run, inner calls included. Beyond
//! those, [`CodeLimits`] caps the number of inner calls and the bytes they
//! return. Scripts take slots of their own
//! ([`SCRIPT_INSTANCES`](corral_sandbox::SCRIPT_INSTANCES) at once, fewer
//! in a pool of fewer plugin slots, beside those slots), so a script
//! waiting for its inner calls never holds a slot they need: no deadlock
//! however many scripts run.

mod guide;
mod hook;
mod limits;
mod listing;
mod scan;
pub mod typescript;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::sync::{OnceCell, Semaphore};

use crate::call::CallOptions;
use crate::call::audit::{AuditLog, AuditRecord, CallRecord};
use crate::call::compose::Caller;
use corral_sandbox::{
    CallError, ComponentCache, Engine, Grants, Journal, Leaks, Limits, Op, OpResult, PluginPre,
    RunSetup, RunnerPre, ScriptError, SystemResolver,
};
pub(crate) use guide::{DESCRIPTION, description, schema};
use hook::{Halt, ScriptCalls};
pub use limits::CodeLimits;
pub(crate) use scan::RedactorOf;
use scan::Scan;

pub use crate::model::names::CODE_TOOL;

/// The runner's sha256 (cache key, audit digest), hashed once: it is 3 MB.
static RUNNER_SHA256: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| hex::encode(Sha256::digest(corral_sandbox::RUNNER_WASM)));

/// What `execute_code` needs from the host: the engine and cache to compile
/// the runner once, the scripts' own slots, and the limits.
pub(crate) struct CodeEnv {
    engine: Engine,
    cache: ComponentCache,
    runner: OnceCell<Result<Arc<PluginPre>, String>>,
    slots: Semaphore,
    limits: CodeLimits,
    /// Where each run's `call` record goes, if anywhere.
    audit: Option<Arc<AuditLog>>,
}

impl CodeEnv {
    pub(crate) fn new(
        engine: Engine,
        cache: ComponentCache,
        limits: CodeLimits,
        audit: Option<Arc<AuditLog>>,
    ) -> Self {
        Self {
            slots: Semaphore::new(engine.script_instances() as usize),
            engine,
            cache,
            runner: OnceCell::new(),
            limits,
            audit,
        }
    }

    /// The runner, compiled (through the component cache) and linked on the
    /// first script.
    async fn runner(&self) -> Result<Arc<PluginPre>, String> {
        self.runner
            .get_or_init(|| async {
                let (engine, cache) = (self.engine.clone(), self.cache.clone());
                tokio::task::spawn_blocking(move || {
                    let (component, _) = cache
                        .load_or_compile(&engine, corral_sandbox::RUNNER_WASM, &RUNNER_SHA256)
                        .map_err(|e| format!("{e:#}"))?;
                    RunnerPre::new(&engine, &component)
                        .map(|pre| Arc::new(PluginPre::Runner(pre)))
                        .map_err(|e| format!("{e:#}"))
                })
                .await
                .unwrap_or_else(|e| Err(format!("the compile task failed: {e}")))
            })
            .await
            .clone()
    }
}

/// Runs `execute_code` with validated `arguments` (called as `name`), and
/// appends its `call` record to the audit log, if there is one: every run is
/// recorded, with an id the records of its tool calls (and of their
/// approvals) name as their `parent_id`.
///
/// # Errors
/// [`CallError::InvalidArguments`] for a script over
/// [`CodeLimits::max_code_bytes`]; [`CallError::ToolFailed`] for an uncaught
/// exception (its message names the line and column); the sandbox's
/// errors (fuel, deadline, memory, stack, output size) when the runner is
/// stopped; [`CallError::Internal`] when the runner cannot be compiled.
///
/// `limits` are the host's, already tightened by the call's override;
/// `concurrency` is how many calls of a `tools.parallel` wave run at once.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    code_env: &CodeEnv,
    limits: Limits,
    concurrency: usize,
    redactor_of: RedactorOf,
    caller: Arc<dyn Caller>,
    name: &str,
    arguments: &Value,
    options: &CallOptions,
) -> Result<(Value, u64), CallError> {
    let started = std::time::Instant::now();
    let run = Run {
        limits,
        concurrency,
        id: AuditRecord::new_id(),
        redactor_of,
        redactions: Arc::default(),
    };
    // Boxed: the run's deep future would weigh on every caller's layout.
    let result = Box::pin(script(code_env, &run, caller, name, arguments, options)).await;
    if let Some(log) = &code_env.audit {
        let mut record = CallRecord {
            time: AuditRecord::now(),
            event: "call",
            call_id: run.id,
            parent_id: None,
            tool: name.to_string(),
            plugin: "corral".into(),
            plugin_sha256: RUNNER_SHA256.clone(),
            context: options
                .context
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            outcome: "ok".into(),
            code: None,
            duration_ms: started.elapsed().as_secs_f64() * 1e3,
            fuel: 0,
            attempts: 1,
            cache_hit: false,
            arguments_sha256: AuditRecord::hash(&arguments.to_string()),
            arguments: None,
            secrets_redacted: run.redactions.load(std::sync::atomic::Ordering::Relaxed),
        };
        match &result {
            Ok((_, fuel)) => record.fuel = *fuel,
            Err(err) => record.failed(err),
        }
        record.append_to(log);
    }
    result
}

/// One run's limits, wave concurrency, id, and leak scan.
struct Run {
    limits: Limits,
    concurrency: usize,
    id: String,
    redactor_of: RedactorOf,
    redactions: Arc<std::sync::atomic::AtomicU32>,
}

/// [`run`] without its audit record.
async fn script(
    code_env: &CodeEnv,
    run: &Run,
    caller: Arc<dyn Caller>,
    name: &str,
    arguments: &Value,
    options: &CallOptions,
) -> Result<(Value, u64), CallError> {
    let (limits, concurrency) = (run.limits, run.concurrency);
    let code = arguments.get("code").and_then(Value::as_str).unwrap_or("");
    if code.len() > code_env.limits.max_code_bytes {
        return Err(CallError::InvalidArguments {
            tool: name.to_string(),
            problems: vec![format!(
                "the script is {} bytes; the limit is {} (`max_code_bytes`): move data out of \
                 the script and fetch it with a tool call",
                code.len(),
                code_env.limits.max_code_bytes
            )],
            code: None,
        });
    }
    let mut limits = limits;
    if let Some(ms) = arguments.get("timeout_ms").and_then(Value::as_u64) {
        limits.timeout_ms = limits.timeout_ms.min(ms);
    }
    let runner = code_env
        .runner()
        .await
        .map_err(|message| CallError::Internal {
            tool: name.to_string(),
            message: format!("code mode's runner could not be compiled: {message}"),
        })?;
    let _slot = code_env
        .slots
        .acquire()
        .await
        .map_err(|_| CallError::Internal {
            tool: name.to_string(),
            message: "the host is shutting down".into(),
        })?;
    let code_sha256 = hex::encode(Sha256::digest(code.as_bytes()));
    let replay = options.journal.as_deref();
    if let Some(journal) = replay
        && journal.code_sha256 != code_sha256
    {
        return Err(CallError::InvalidArguments {
            tool: name.to_string(),
            problems: vec![format!(
                "the journal being replayed is of another script (sha256 {}, this one is {}): \
                 a retry must carry the script its approval was asked for; call again without \
                 the journal to start over",
                journal.code_sha256, code_sha256
            )],
            code: None,
        });
    }
    let (seed, start_ms) = replay.map_or_else(seed_and_start, |j| (j.seed, j.start_ms));
    let script = corral_sandbox::ScriptOrigin::new(code_sha256.clone(), code).with_run(&run.id);
    let hook = Arc::new(ScriptCalls::new(
        caller,
        options,
        script,
        code_env.limits,
        concurrency,
        Journal::new(code_sha256, seed, start_ms),
        replay,
    ));
    let tool: Arc<str> = Arc::from(name);
    let setup = RunSetup {
        tape: None,
        engine: &code_env.engine,
        pre: &runner,
        limits: &limits,
        plugin: Arc::from("corral"),
        tool: tool.clone(),
        grants: &Grants::default(),
        approval: None,
        client: None,
        tools: Some(hook.clone()),
        resolver: Arc::new(SystemResolver),
        progress: options.progress.clone(),
        leaks: Leaks::new(None, tool, run.redactions.clone()),
        slot: None,
    };
    let (result, report) = corral_sandbox::run(
        setup,
        Op::Script {
            code,
            seed,
            start_ms,
        },
    )
    .await;
    let gathered = hook.gathered();
    let fuel = report.fuel_consumed.saturating_add(gathered.fuel);
    match gathered.halt {
        Some(Halt::NotDeterministic(message)) => return Err(not_deterministic(name, message)),
        // Only a run that stopped at its halt with every call it started
        // recorded can wait for approval: one cut off by its deadline with a
        // call still running fails as the deadline says (that call may have
        // acted, and no journal holds it).
        Some(Halt::Pending(pending)) if gathered.in_flight == 0 => {
            let journal = (!gathered.overflowed).then_some(gathered.journal);
            return Err(pending_with(name, pending, journal, code_env.limits));
        }
        Some(Halt::Pending(_)) | None => {}
    }
    if gathered.unreplayed > 0 && matches!(result, Ok(OpResult::Script(_))) {
        return Err(not_deterministic(
            name,
            format!(
                "{}: it ended without making {} of the calls its journal holds",
                corral_sandbox::NOT_DETERMINISTIC,
                gathered.unreplayed
            ),
        ));
    }
    let returned = match result {
        Ok(OpResult::Script(Ok(json))) => json,
        Ok(OpResult::Script(Err(err))) => {
            let scan = Scan::of(
                gathered.tools.iter().map(String::as_str),
                &run.redactor_of,
                run.redactions.clone(),
            );
            return Err(uncaught(name, &err, &scan));
        }
        Ok(_) => {
            return Err(CallError::Internal {
                tool: name.to_string(),
                message: "the runner answered something other than a script's result".into(),
            });
        }
        // The runner was stopped: the sandbox's error, as a guest gets it.
        Err(failure) => return Err(failure.into_call_error(name, &limits)),
    };
    if returned.len() > limits.output_bytes {
        return Err(CallError::OutputTooLarge {
            tool: name.to_string(),
            bytes: returned.len(),
            limit_bytes: limits.output_bytes,
        });
    }
    let scan = Scan::of(
        gathered.tools.iter().map(String::as_str),
        &run.redactor_of,
        run.redactions.clone(),
    );
    let result: Value = serde_json::from_str(&returned).map_err(|err| CallError::Internal {
        tool: name.to_string(),
        message: format!("the runner returned text that is not JSON: {err}"),
    })?;
    let mut logs: Vec<Value> = gathered
        .console
        .into_iter()
        .map(|line| json!({ "level": line.level, "text": scan.text(line.text) }))
        .collect();
    if report.log_dropped > 0 {
        logs.push(json!({
            "level": "warn",
            "text": format!("{} more console lines dropped (at most {} a script)",
                report.log_dropped, corral_sandbox::MAX_LOG_LINES),
        }));
    }
    Ok((
        json!({ "result": scan.value(result), "logs": logs, "calls": scan.records(gathered.records) }),
        fuel,
    ))
}

/// A re-run that did not repeat its calls.
fn not_deterministic(name: &str, message: String) -> CallError {
    CallError::ToolFailed {
        tool: name.to_string(),
        message,
        code: None,
        retryable: false,
    }
}

/// The run stopped at a call waiting for approval on a retry: that call's
/// [`CallError::ApprovalPending`], carrying the run's journal, unless the
/// journal is over [`CodeLimits::max_journal_bytes`].
fn pending_with(
    name: &str,
    pending: CallError,
    journal: Option<Journal>,
    limits: CodeLimits,
) -> CallError {
    let CallError::ApprovalPending { tool, request, .. } = pending else {
        return pending;
    };
    // `None`: the journal went over the cap while the script ran.
    let bytes = journal.as_ref().map_or(usize::MAX, Journal::json_bytes);
    if let Some(journal) = journal.filter(|_| bytes <= limits.max_journal_bytes) {
        return CallError::ApprovalPending {
            tool,
            request,
            journal: Some(Box::new(journal)),
        };
    }
    let size = if bytes == usize::MAX {
        "more".to_string()
    } else {
        format!("{bytes} bytes")
    };
    CallError::ToolFailed {
        tool: name.to_string(),
        message: format!(
            "the script's call of `{tool}` needs approval, which this client gives by calling \
             again, and a retry carries the answers of every call before it; those are {size}, \
             over the cap of {} bytes (`max_journal_bytes`). Make the gated call earlier in the \
             script, have the calls before it return less, or call `{tool}` on its own",
            limits.max_journal_bytes
        ),
        code: None,
        retryable: false,
    }
}

/// A fresh seed and start time per run: what `Math.random` and `Date.now()`
/// start from (the runner makes both deterministic from here).
fn seed_and_start() -> (u64, u64) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let start_ms = u64::try_from(now.as_millis()).unwrap_or(0);
    let mut hash = Sha256::new();
    hash.update(now.as_nanos().to_le_bytes());
    hash.update(std::process::id().to_le_bytes());
    let digest = hash.finalize();
    let mut seed = [0u8; 8];
    seed.copy_from_slice(&digest[..8]);
    (u64::from_le_bytes(seed), start_ms)
}

/// An uncaught exception: a tool error that names where, with the
/// script's text escaped.
fn uncaught(name: &str, err: &ScriptError, scan: &Scan) -> CallError {
    let message = corral_names::text::escape(&corral_names::text::truncate(
        scan.text(err.message.clone()),
        corral_sandbox::MAX_LOG_MESSAGE_BYTES,
    ))
    .into_owned();
    let at = match (err.line, err.column) {
        (Some(line), Some(column)) => format!(" (line {line}, column {column})"),
        (Some(line), None) => format!(" (line {line})"),
        _ => String::new(),
    };
    CallError::ToolFailed {
        tool: name.to_string(),
        message: format!("the script threw {message}{at}"),
        code: None,
        retryable: false,
    }
}
