//! The errors the sandbox returns: why a call did not produce a result
//! ([`CallError`], the one error of every call path, which the library
//! re-exports as `corral::CallError`), and why a file is not a component this
//! host can compile ([`ComponentError`], which the library wraps in
//! `corral::ComponentError::Component`).
//!
//! Every message names the tool it concerns and says what to do about it.

/// Why a tool call did not produce a result. Each variant is a distinct class
/// that callers can branch on; [`CallError::kind`] gives a stable string for
/// JSON output and metrics. After any of them the host keeps serving.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No loaded tool has this name.
    #[error("unknown tool `{}`{}; list the tools to see which are available",
        corral_names::text::escape(.name),
        .suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownTool {
        /// The requested name, as the caller gave it (the message shows it
        /// with forbidden characters escaped).
        name: String,
        /// A loaded tool with a similar name, if any.
        suggestion: Option<String>,
    },
    /// The arguments are unusable: not a JSON object, a schema violation found by
    /// the host before any guest code ran, or the tool's own `invalid-arguments`
    /// error (LangChain4j's `ToolArgumentsException`). Fix the arguments and
    /// call again.
    #[error("invalid arguments for `{tool}`: {}", .problems.join("; "))]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Each problem, e.g. "`/limit`: \"ten\" is not of type \"integer\"".
        problems: Vec<String>,
        /// The tool's error code, when the tool reported the error.
        code: Option<i32>,
    },
    /// The tool reported `execution-failed` (LangChain4j's
    /// `ToolExecutionException`).
    #[error("tool `{tool}` failed: {message}")]
    ToolFailed {
        /// The tool.
        tool: String,
        /// The tool's message.
        message: String,
        /// The tool's error code, if any.
        code: Option<i32>,
        /// The tool says trying again may help (WIT 0.2.0 `retryable`); the
        /// host retries only idempotent tools.
        retryable: bool,
    },
    /// The tool succeeded, but its result breaks the output schema it
    /// declared (WIT 0.2.0 `output-schema`, TnsAI's postconditions):
    /// the tool's fault, not the caller's.
    #[error(
        "tool `{tool}` returned a result that breaks its own output schema: {}; \
         the tool is faulty, report it to its author",
        .problems.join("; "))]
    OutputInvalid {
        /// The tool.
        tool: String,
        /// Each violation, "`<json pointer>`: `<problem>`".
        problems: Vec<String>,
    },
    /// A reviewer answered the tool's approval request with exit-early.
    #[error("Rejected by reviewer: {reason}")]
    Rejected {
        /// The tool.
        tool: String,
        /// The reviewer's reason.
        reason: String,
    },
    /// The reviewer deferred the decision (`corral::ApprovalDecision::Defer`): it
    /// answers on a retry of the whole call (MCP 2026-07-28's input-required
    /// flow). Nothing the gate guards happened. An entry point that can ask
    /// its client turns this into the question (`request` says what to ask)
    /// and retries the call with the answer; elsewhere, such as a step of a
    /// plan or a pipeline, which cannot be retried alone, the tool has to be
    /// called on its own.
    #[error(
        "`{tool}` waits for approval ({} gate), which its reviewer gives on a retry of the \
         whole call: retry the call with the answer (a step of a plan or a pipeline cannot be \
         retried alone: call `{tool}` on its own)",
        .request.gate
    )]
    ApprovalPending {
        /// The tool.
        tool: String,
        /// What the reviewer is to decide.
        request: Box<crate::review::ReviewRequest>,
        /// For a call a script made (code mode): the journal of the script's
        /// run up to this call. The script's retry replays it
        /// (`CallOptions::with_journal` in `corral`), so no call it holds
        /// runs twice. `None` for any other call.
        journal: Option<Box<crate::Journal>>,
    },
    /// The guest asked its client for input (WIT 0.3.0 `corral:tool/client`)
    /// that the client gives on a retry of the whole call (MCP 2026-07-28's
    /// input-required flow outside a task). The guest was stopped at the
    /// request; whoever answers ([`ClientRefusal::Stop`](crate::ClientRefusal::Stop))
    /// keeps the requests and turns this into the question, and the retry
    /// runs the call again from the start with the answers.
    #[error(
        "`{tool}` asked its client for input ({asked} request(s)), which this client gives on a \
         retry of the whole call: retry the call with the answers"
    )]
    InputRequired {
        /// The tool.
        tool: String,
        /// How many requests wait for an answer.
        asked: usize,
    },
    /// The call used up its fuel budget.
    #[error(
        "tool `{tool}` ran out of fuel after {budget} units and was stopped; \
         give it a smaller input or raise the fuel limit"
    )]
    OutOfFuel {
        /// The tool.
        tool: String,
        /// The budget in fuel units.
        budget: u64,
    },
    /// The call ran past its wall-clock deadline.
    #[error(
        "tool `{tool}` exceeded its deadline of {timeout_ms} ms and was stopped; \
         give it a smaller input or raise the timeout"
    )]
    Timeout {
        /// The tool.
        tool: String,
        /// The deadline in milliseconds.
        timeout_ms: u64,
    },
    /// The guest tried to grow its memory past the cap and then failed.
    #[error(
        "tool `{tool}` hit the memory cap of {} MiB ({limit_bytes} bytes) and was stopped; \
         give it a smaller input or raise the memory limit",
        .limit_bytes / (1 << 20))]
    MemoryLimit {
        /// The tool.
        tool: String,
        /// The cap in bytes.
        limit_bytes: usize,
    },
    /// The guest recursed past the wasm stack limit.
    #[error("tool `{tool}` overflowed its stack (runaway recursion) and was stopped")]
    StackOverflow {
        /// The tool.
        tool: String,
    },
    /// The result text is larger than the output cap.
    #[error(
        "tool `{tool}` returned {bytes} bytes, more than the output cap of {limit_bytes} bytes; \
         ask for less or raise the output limit"
    )]
    OutputTooLarge {
        /// The tool.
        tool: String,
        /// Size of the result in bytes.
        bytes: usize,
        /// The cap in bytes.
        limit_bytes: usize,
    },
    /// The tool's circuit is open after consecutive failures (its policy's
    /// `circuit_breaker`): the call failed fast, without running.
    #[error(
        "tool `{tool}` is failing ({failures} calls in a row) and is paused; try again in \
         {retry_in_ms} ms or use another tool"
    )]
    CircuitOpen {
        /// The tool.
        tool: String,
        /// Consecutive failed calls.
        failures: u32,
        /// Milliseconds until one probe call is let through.
        retry_in_ms: u64,
    },
    /// The tool's (or its plugin's) rate limit is spent, and the call could
    /// not wait for a slot.
    #[error("tool `{tool}` is rate-limited ({limit}); call it less often or try again later")]
    RateLimited {
        /// The tool.
        tool: String,
        /// The limit that was hit, e.g. "10 per second (the tool's limit)".
        limit: String,
    },
    /// The caller's tenant has spent one of its quotas (calls, fuel, guest
    /// time or HTTP bytes per window); no guest code ran. Checked before the
    /// call; a call that started is never cut by another call's charge.
    #[error(
        "tool `{tool}` was not called: tenant {tenant} is over its quota of {quota}; it is \
         admitted again in {}s (at {reset_at}); wait, or ask the operator for a larger quota",
        retry_after.as_secs().max(1)
    )]
    QuotaExceeded {
        /// The tool.
        tool: String,
        /// Whose quota, as shown: `"acme"` (authenticated by a token),
        /// `"acme" (client-asserted)`, or `anonymous`. Escaped.
        tenant: String,
        /// Which quota: kind, amount, window, burst and whose rule, e.g.
        /// "calls: 100 per 1h, burst 10 (the host's per-tenant quota)".
        quota: String,
        /// How long until the same call would be admitted.
        retry_after: std::time::Duration,
        /// When that is, RFC 3339 UTC.
        reset_at: String,
    },
    /// The guest trapped (panicked, hit `unreachable`, divided by zero, ...).
    #[error("tool `{tool}` crashed: {message}")]
    Trapped {
        /// The tool.
        tool: String,
        /// The trap and, when the guest printed one, its panic message.
        message: String,
    },
    /// The host is configured so that the call cannot be decided: the tool needs
    /// approval but no reviewer is configured, the reviewer cannot work (no
    /// terminal), or the audit log cannot be written (AgentEnsemble's
    /// configuration error). Logged at ERROR; fix the configuration, not the
    /// arguments.
    #[error("configuration error for tool `{tool}`: {message}")]
    Configuration {
        /// The tool.
        tool: String,
        /// What is missing and how to fix it.
        message: String,
    },
    /// The call's own limits (`corral::CallOptions::limits`)
    /// are unusable: a knob set to zero. No guest code ran. The caller's
    /// mistake: fix the override and call again.
    #[error("invalid limits for a call of `{tool}`: {problem}")]
    InvalidLimits {
        /// The tool.
        tool: String,
        /// Which knob, and what to do instead.
        problem: String,
    },
    /// The host could not set up the sandbox (for example the instance pool is
    /// misconfigured). Not the tool's fault.
    #[error("corral could not run tool `{tool}`: {message}")]
    Internal {
        /// The tool.
        tool: String,
        /// What went wrong.
        message: String,
    },
}

impl CallError {
    /// A stable, snake_case name of the error class: `unknown_tool`,
    /// `invalid_arguments`, `tool_failed`, `rejected`, `approval_pending`, `input_required`,
    /// `out_of_fuel`, `timeout`,
    /// `memory_limit`, `stack_overflow`, `output_too_large`, `output_invalid`,
    /// `circuit_open`, `rate_limited`, `quota_exceeded`, `trapped`,
    /// `configuration`, `invalid_limits`, `internal`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::ToolFailed { .. } => "tool_failed",
            Self::Rejected { .. } => "rejected",
            Self::ApprovalPending { .. } => "approval_pending",
            Self::InputRequired { .. } => "input_required",
            Self::OutOfFuel { .. } => "out_of_fuel",
            Self::Timeout { .. } => "timeout",
            Self::MemoryLimit { .. } => "memory_limit",
            Self::StackOverflow { .. } => "stack_overflow",
            Self::OutputTooLarge { .. } => "output_too_large",
            Self::OutputInvalid { .. } => "output_invalid",
            Self::CircuitOpen { .. } => "circuit_open",
            Self::RateLimited { .. } => "rate_limited",
            Self::QuotaExceeded { .. } => "quota_exceeded",
            Self::Trapped { .. } => "trapped",
            Self::Configuration { .. } => "configuration",
            Self::InvalidLimits { .. } => "invalid_limits",
            Self::Internal { .. } => "internal",
        }
    }

    /// The text a model sees for this failure, per AgentEnsemble's contract:
    /// `Error: <message>`.
    pub fn llm_text(&self) -> String {
        format!("Error: {self}")
    }

    /// The tool's own error code (WIT `error-info.code`), when the tool
    /// reported the failure with one.
    pub fn code(&self) -> Option<i32> {
        match self {
            Self::InvalidArguments { code, .. } | Self::ToolFailed { code, .. } => *code,
            _ => None,
        }
    }

    /// The name of the tool the error is about.
    pub fn tool(&self) -> &str {
        match self {
            Self::UnknownTool { name, .. } => name,
            Self::InvalidArguments { tool, .. }
            | Self::ToolFailed { tool, .. }
            | Self::Rejected { tool, .. }
            | Self::ApprovalPending { tool, .. }
            | Self::InputRequired { tool, .. }
            | Self::OutOfFuel { tool, .. }
            | Self::Timeout { tool, .. }
            | Self::MemoryLimit { tool, .. }
            | Self::StackOverflow { tool }
            | Self::OutputTooLarge { tool, .. }
            | Self::OutputInvalid { tool, .. }
            | Self::CircuitOpen { tool, .. }
            | Self::RateLimited { tool, .. }
            | Self::QuotaExceeded { tool, .. }
            | Self::Trapped { tool, .. }
            | Self::Configuration { tool, .. }
            | Self::InvalidLimits { tool, .. }
            | Self::Internal { tool, .. } => tool,
        }
    }

    /// The error as JSON, the one shape every surface uses (`corral call
    /// --json`, plan steps, MCP `_meta`): `{"kind": <kind>, "message":
    /// <Display>}` plus `"code": <i32>` when the tool gave one.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({ "kind": self.kind(), "message": self.to_string() });
        if let Some(code) = self.code() {
            value["code"] = code.into();
        }
        value
    }
}

/// Why a file is not a component this host can compile: it cannot be read,
/// is over the plugin size cap, is not wasm, is a core module, or does not
/// validate. Checked in this order by [`read_plugin`](crate::read_plugin)
/// and [`compile`](crate::compile); each message says how to fix the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ComponentError {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Io(String),
    /// The file is larger than the host's plugin size cap (checked before
    /// it is read).
    #[error(
        "is {bytes} bytes, over the host's plugin size cap of {limit_bytes} bytes; remove it, \
         or raise the host's plugin size cap if it is meant to be this large"
    )]
    TooLarge {
        /// The file's size, in bytes.
        bytes: u64,
        /// The cap, in bytes.
        limit_bytes: u64,
    },
    /// The name ends in `.wasm` but the entry is not a regular file (a
    /// directory, a named pipe, a socket, a device); it is never opened
    /// for reading, so a named pipe cannot stall the load.
    #[error("is {0}, not a regular file; remove it from the plugin directory")]
    NotAFile(&'static str),
    /// The file does not start with the wasm magic bytes.
    #[error("not a WebAssembly file (no `\\0asm` header); remove it from the plugin directory")]
    NotWasm,
    /// A core module where a component is expected.
    #[error(
        "is a core WebAssembly module, not a component; build it for `wasm32-wasip2` \
         or wrap it with `wasm-tools component new`"
    )]
    CoreModule,
    /// The component declares a linear memory whose minimum size is larger
    /// than any instance may have (the pool's slot size).
    #[error(
        "declares more linear memory than this host gives any instance ({0}); shrink the \
         plugin's static data, or raise the pool's memory slot (PoolConfig::max_memory_bytes)"
    )]
    MemoryTooLarge(String),
    /// The component uses the component model's async ABI (`async func`,
    /// streams, futures: the WASI 0.3 generation), which this engine does
    /// not enable yet.
    #[error(
        "uses the component model's async ABI, the WASI 0.3 generation ({0}), which corral \
         does not run yet; build it for WASI 0.2 with synchronous exports (no `async func` \
         in its WIT; componentize-qjs: `--sync`)"
    )]
    AsyncAbi(String),
    /// The bytes do not decode or validate as a component.
    #[error("is not a valid component ({0}); the file may be truncated or corrupt, rebuild it")]
    InvalidComponent(String),
}
