//! Errors of the library: why a call failed ([`CallError`]), why a plugin did not
//! load ([`LoadError`]), and why a host could not start ([`HostError`]).
//!
//! Every message names the tool or file it concerns and says what to do about it.

use std::path::PathBuf;

use crate::limits::LimitsError;

/// Why a tool call did not produce a result. Each variant is a distinct class
/// that callers can branch on; [`CallError::kind`] gives a stable string for
/// JSON output and metrics. After any of them the host keeps serving.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No loaded tool has this name.
    #[error("unknown tool `{}`{}; list the tools to see which are available",
        crate::text::escape(.name),
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
    /// The reviewer deferred the decision ([`ApprovalDecision::Defer`]): it
    /// answers on a retry of the whole call (MCP 2026-07-28's input-required
    /// flow). Nothing the gate guards happened. An entry point that can ask
    /// its client turns this into the question (`request` says what to ask)
    /// and retries the call with the answer; elsewhere, such as a step of a
    /// plan or a pipeline, which cannot be retried alone, the tool has to be
    /// called on its own.
    ///
    /// [`ApprovalDecision::Defer`]: crate::ApprovalDecision::Defer
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
        request: Box<crate::approval::ReviewRequest>,
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
    /// The call's own limits ([`CallOptions::limits`](crate::CallOptions::limits))
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
    /// `invalid_arguments`, `tool_failed`, `rejected`, `approval_pending`,
    /// `out_of_fuel`, `timeout`,
    /// `memory_limit`, `stack_overflow`, `output_too_large`, `output_invalid`,
    /// `circuit_open`, `rate_limited`, `trapped`,
    /// `configuration`, `invalid_limits`, `internal`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::ToolFailed { .. } => "tool_failed",
            Self::Rejected { .. } => "rejected",
            Self::ApprovalPending { .. } => "approval_pending",
            Self::OutOfFuel { .. } => "out_of_fuel",
            Self::Timeout { .. } => "timeout",
            Self::MemoryLimit { .. } => "memory_limit",
            Self::StackOverflow { .. } => "stack_overflow",
            Self::OutputTooLarge { .. } => "output_too_large",
            Self::OutputInvalid { .. } => "output_invalid",
            Self::CircuitOpen { .. } => "circuit_open",
            Self::RateLimited { .. } => "rate_limited",
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
            | Self::OutOfFuel { tool, .. }
            | Self::Timeout { tool, .. }
            | Self::MemoryLimit { tool, .. }
            | Self::StackOverflow { tool }
            | Self::OutputTooLarge { tool, .. }
            | Self::OutputInvalid { tool, .. }
            | Self::CircuitOpen { tool, .. }
            | Self::RateLimited { tool, .. }
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

/// Why one plugin file did not load. The other plugins load regardless.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", crate::text::escape_line(&.path.display().to_string()))]
pub struct LoadError {
    /// The plugin file (the message shows it escaped to one line: a file
    /// name is untrusted text, a pulled plugin's comes from a reference).
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: LoadErrorReason,
}

/// The reasons a plugin fails to load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadErrorReason {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Io(String),
    /// Loading this file hit a bug in corral (a panic, caught); the other
    /// files load regardless.
    #[error(
        "hit a bug in corral while loading ({0}); the other plugins still load; please report it"
    )]
    Internal(String),
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
    /// The plugin must be signed by given keys, and is not.
    #[error("{0}")]
    Signature(String),
    /// The plugin is in the directory's `corral.lock` with another digest, or
    /// the lock file cannot be read.
    #[error("{0}")]
    Locked(String),
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
    /// The component imports something the sandbox does not provide.
    #[error("needs imports corral does not provide: {0}")]
    UnsatisfiedImports(String),
    /// The component exports the `tool` interface of no contract version the
    /// host speaks (0.2.0 or 0.1.0).
    #[error(
        "is a component of another world: {0}; a plugin must target the \
         `corral:tool/plugin@0.2.0` world in wit/corral-tool.wit (or 0.1.0, in wit/v0.1.0)"
    )]
    WrongWorld(String),
    /// `describe` trapped or hit a limit.
    #[error("`describe` failed: {0}")]
    DescribeFailed(String),
    /// A spec broke a resolver rule.
    #[error("tool `{tool}`: {problem}")]
    InvalidSpec {
        /// The offending tool name, as given.
        tool: String,
        /// Which rule it broke and how to fix it.
        problem: String,
    },
    /// Another plugin already provides this tool name (AgentEnsemble: duplicate
    /// names are a resolution error).
    #[error(
        "tool `{tool}` is already provided by {}; rename one of them (a policy's \
         `[presentation]` `rename` or `prefix` does it without rebuilding)",
        .other.display()
    )]
    DuplicateTool {
        /// The tool name.
        tool: String,
        /// The plugin that keeps the name: the first in file-name order at
        /// startup; on reload, the one already serving it.
        other: PathBuf,
    },
    /// `pipelines.json` cannot be read as pipeline definitions.
    #[error("invalid pipelines file: {0}")]
    InvalidPipelines(String),
    /// The plugin's policy file is unreadable or invalid, or refers to tools
    /// the plugin does not provide.
    #[error("policy: {0}")]
    Policy(String),
    /// The policy pins a sha256 and the component's differs.
    #[error(
        "sha256 is {actual} but {} requires {expected}; the file changed: \
         check where it came from, then update the pin",
        .policy.display()
    )]
    IntegrityMismatch {
        /// The pinned sha256.
        expected: String,
        /// The component's sha256.
        actual: String,
        /// The policy file.
        policy: PathBuf,
    },
    /// The plugin's tools close a cycle of `depends-on` (WIT 0.2.0).
    #[error(
        "its tools close a dependency cycle: {}; remove one of these `depends-on` entries",
        .cycle.join(" -> ")
    )]
    DependencyCycle {
        /// The tools of the cycle, the first repeated at the end.
        cycle: Vec<String>,
    },
    /// `groups.toml` cannot be read as group definitions, or a selected
    /// group is not declared.
    #[error("tool groups: {0}")]
    InvalidGroups(String),
    /// `disclosure.toml` cannot be read as facades, or breaks a facade rule
    /// (see [`Facades`](crate::Facades)); the catalog then has no facades.
    #[error("facades: {0}")]
    InvalidDisclosure(String),
    /// A group includes a tool whose grants exceed the group's declared
    /// permissions (Embabel's `ToolGroupPermission`, checked).
    #[error(
        "group `{group}` includes tool `{tool}`, which has permission `{permission}` \
         ({grant}); add \"{permission}\" to the group's `permissions`, or leave the tool \
         out with `exclude`"
    )]
    GroupPermission {
        /// The group.
        group: String,
        /// The tool that exceeds it.
        tool: String,
        /// The permission the group lacks.
        permission: String,
        /// The grant (policy file and entry) that implies it.
        grant: String,
    },
    /// The plugin describes no tools at all.
    #[error("describes no tools; a plugin must provide at least one")]
    NoTools,
    /// `describe` declared more than a cap allows (see
    /// [`DescribeCaps`](crate::DescribeCaps)).
    #[error(
        "declares {found} {what}, more than the cap of {cap}; if that is intended, raise \
         `{knob}` in the plugin's policy (`[describe]`) or the host's describe caps"
    )]
    OverCap {
        /// What was counted.
        what: String,
        /// How many there were.
        found: usize,
        /// The cap.
        cap: usize,
        /// The policy key under `[describe]` that raises it.
        knob: &'static str,
    },
}

/// Why a [`Host`](crate::Host) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The plugin directory cannot be listed.
    #[error("cannot read plugin directory {}: {source}; point the host at an existing directory", .path.display())]
    PluginDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The limits are unusable.
    #[error(transparent)]
    Limits(#[from] LimitsError),
    /// The plugin directory cannot be watched for hot reload.
    #[error("hot reload: {0}")]
    Watch(String),
    /// wasmtime rejected the engine or linker configuration.
    #[error("cannot create the wasm engine: {0}")]
    Engine(String),
}
