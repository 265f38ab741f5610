//! corral-sandbox: where guest code runs. The wasmtime engine and its
//! component cache, the contract bindings, one fresh deny-by-default store
//! per call with fuel, an epoch deadline, a wall-clock timer and a memory
//! cap ([`run`]), the host imports of every contract version, outbound HTTP
//! under the plugin's grants, the leak scan of host-side secrets, and
//! any-component mode (a component of another world served as tools,
//! [`Foreign`]), and code mode's runner ([`RunnerPre`], whose tool calls
//! come back through [`ToolCalls`]).
//!
//! This is an internal crate of corral: its API serves the `corral` library,
//! which re-exports what embedders use (as `wasmtime` re-exports its
//! internal crates). Nothing here knows a reviewer, a catalog or a policy
//! file: approvals come in through [`ApprovalHook`], a script's tool calls
//! go out through [`ToolCalls`], grants come in as [`Grants`].
//! A [`wasmtime::Store`] is created in one place only, inside [`run`], which
//! is why this crate is the only one that links guests and runs them.

mod attempts;
mod bindings;
mod cache;
mod client;
mod engine;
mod error;
mod files;
mod grants;
mod limits;
mod parts;
mod redact;
mod review;
mod sandbox;
mod script;
mod spec;
pub mod tape;
mod trace;

pub use attempts::{
    Attempts, Denial, FileAttempt, FileOp, HttpAttempt, MAX_DISTINCT, MAX_ORIGIN_BYTES,
    MAX_PATH_BYTES, Usage, origin,
};
pub use cache::{CacheOutcome, ComponentCache, PluginFile, compile, compile_cached};
pub use client::{
    ClientAnswer, ClientFuture, ClientFutures, ClientGrants, ClientHook, ClientRefusal,
    ClientRequest, Elicitation, MAX_KEY_BYTES, ModelPreferences, Root, Sampled, SamplingContent,
    SamplingGrant, SamplingMessage, elicitation_schema_problem, key_problem,
};
pub use engine::{EPOCH_TICK, Engine, SCRIPT_INSTANCES};
pub use error::{CallError, ComponentError};
pub use files::{DEFAULT_MAX_PLUGIN_BYTES, read_plugin};
pub use grants::{DirGrant, EnvGrant, Grants, HostPattern, Injected, env_name, guest_path};
pub use limits::{LimitOverrides, Limits, LimitsError, PoolConfig, effective, tighten};
pub use parts::{
    Annotations, Checked, EmbeddedResource, GuestOutput, MAX_MIME_CHARS, MAX_PARTS, MAX_URI_BYTES,
    Media, OutputPart, PartContent, PartsError, ResourceContents, ResourceLink, Role,
    check as check_parts,
};
pub use redact::{Leaks, Redactor};
pub use review::{Gate, ReviewRequest, ScriptOrigin};
pub use sandbox::any::{Foreign, Import, Skipped, import, missing_imports, sidecar_stamp};
pub use sandbox::code::{RUNNER_WASM, RUNNER_WORLD, ToolFuture};
pub use sandbox::http::{ResolveFuture, Resolver, SystemResolver, internal_range};
pub use sandbox::{
    ApprovalHook, ConsoleLevel, ErrorInfo, Failure, GuestError, HookDecision, HookFuture,
    MAX_LOG_LINES, MAX_LOG_MESSAGE_BYTES, Op, OpResult, PluginPre, ProgressSink, ReviewPause,
    RunReport, RunSetup, RunnerPre, SLICE_TICKS, SandboxState, ScriptError, ToolCalls, linker, run,
};
pub use sandbox::{Blueprint, Instances, MIN_GAP, OFF_PATH_DROP, PreparedStats, Slot, Want};
pub use script::{
    Journal, JournalAnswer, JournalEntry, NOT_DETERMINISTIC, ToolFailure, ToolOutput,
};
pub use spec::{Latency, RawSpec, ResilienceHints, ReturnBehavior, ToolMetadata};
pub use trace::SPAN_TARGET;

/// Internals the fuzz targets and property tests drive directly. Not part
/// of the API: no stability promise.
#[doc(hidden)]
pub mod __fuzz {
    pub use crate::sandbox::any::value::round_trip as value_round_trip;
}
