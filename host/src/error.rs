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
pub enum CallError {
    /// No loaded tool has this name.
    #[error("unknown tool `{name}`{}; run `corral list` to see the available tools",
        .suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownTool {
        /// The requested name.
        name: String,
        /// A loaded tool with a similar name, if any.
        suggestion: Option<String>,
    },
    /// The arguments are unusable: not a JSON object, a schema violation found by
    /// the host before any guest code ran, or the tool's own `invalid-arguments`
    /// error (reference 002's `ToolArgumentsException`). Fix the arguments and
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
    /// The tool reported `execution-failed` (reference 002's
    /// `ToolExecutionException`).
    #[error("tool `{tool}` failed: {message}")]
    ToolFailed {
        /// The tool.
        tool: String,
        /// The tool's message.
        message: String,
        /// The tool's error code, if any.
        code: Option<i32>,
    },
    /// A reviewer answered the tool's approval request with exit-early.
    #[error("Rejected by reviewer: {reason}")]
    Rejected {
        /// The tool.
        tool: String,
        /// The reviewer's reason.
        reason: String,
    },
    /// The call used up its fuel budget.
    #[error(
        "tool `{tool}` ran out of fuel after {budget} units and was stopped; \
         give it a smaller input or raise the fuel limit (--fuel)"
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
         give it a smaller input or raise the timeout (--timeout-ms)"
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
         give it a smaller input or raise the memory limit (--memory-mib)",
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
    /// terminal), or the audit log cannot be written (reference 000's
    /// configuration error). Logged at ERROR; fix the configuration, not the
    /// arguments.
    #[error("configuration error for tool `{tool}`: {message}")]
    Configuration {
        /// The tool.
        tool: String,
        /// What is missing and how to fix it.
        message: String,
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
    /// `invalid_arguments`, `tool_failed`, `rejected`, `out_of_fuel`, `timeout`,
    /// `memory_limit`, `stack_overflow`, `output_too_large`, `trapped`,
    /// `configuration`, `internal`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::ToolFailed { .. } => "tool_failed",
            Self::Rejected { .. } => "rejected",
            Self::OutOfFuel { .. } => "out_of_fuel",
            Self::Timeout { .. } => "timeout",
            Self::MemoryLimit { .. } => "memory_limit",
            Self::StackOverflow { .. } => "stack_overflow",
            Self::OutputTooLarge { .. } => "output_too_large",
            Self::Trapped { .. } => "trapped",
            Self::Configuration { .. } => "configuration",
            Self::Internal { .. } => "internal",
        }
    }

    /// The text a model sees for this failure, per reference 000's contract:
    /// `Error: <message>`.
    pub fn llm_text(&self) -> String {
        format!("Error: {self}")
    }
}

/// Why one plugin file did not load. The other plugins load regardless.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", .path.display())]
pub struct LoadError {
    /// The plugin file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: LoadErrorReason,
}

/// The reasons a plugin fails to load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadErrorReason {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Io(String),
    /// The file does not start with the wasm magic bytes.
    #[error("not a WebAssembly file (no `\\0asm` header); remove it from the plugin directory")]
    NotWasm,
    /// A core module where a component is expected.
    #[error(
        "is a core WebAssembly module, not a component; build it for `wasm32-wasip2` \
         or wrap it with `wasm-tools component new`"
    )]
    CoreModule,
    /// The bytes do not decode or validate as a component.
    #[error("is not a valid component ({0}); the file may be truncated or corrupt, rebuild it")]
    InvalidComponent(String),
    /// The component imports something the sandbox does not provide.
    #[error("needs imports corral does not provide: {0}")]
    UnsatisfiedImports(String),
    /// The component does not export the `corral:tool/tool@0.1.0` interface.
    #[error(
        "is a component of another world: {0}; a plugin must target the \
         `corral:tool/plugin@0.1.0` world in wit/corral-tool.wit"
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
    /// Another plugin already provides this tool name (reference 000: duplicate
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
    /// The plugin describes no tools at all.
    #[error("describes no tools; a plugin must provide at least one")]
    NoTools,
}

/// Why a [`Host`](crate::Host) could not be built.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The plugin directory cannot be listed.
    #[error("cannot read plugin directory {}: {source}; pass an existing directory with --plugins", .path.display())]
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
