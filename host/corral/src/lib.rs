//! corral: a WebAssembly plugin host that runs untrusted LLM tools in a sandbox.
//!
//! A tool is a WebAssembly component targeting the `corral:tool/plugin` world
//! (`wit/corral-tool.wit`). corral loads a directory of them, validates and names
//! their tools, and runs each call in a fresh, deny-by-default sandbox with fuel,
//! an epoch deadline and a memory cap.
//!
//! Everything an embedder needs is re-exported here; the modules are private
//! (as in wasmtime), so the API is this page. `ARCHITECTURE.md` in the
//! repository maps the modules for contributors. In short: the loader
//! compiles and describes plugins, the resolver names their tools, a
//! [`Catalog`] holds one loaded state, and every call goes through the same
//! stages (resolve, validate, effective limits, gate, dispatch, classify,
//! record), whether it comes from [`Host::call`], an MCP server, a plan step
//! or a pipeline step.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let host = corral::Host::builder().plugin_dir("plugins").build().await?;
//! for spec in host.specs() {
//!     println!("{}: {}", spec.name, spec.description);
//! }
//! let out = host
//!     .call("sha256", r#"{"text": "abc"}"#, &corral::CallOptions::default())
//!     .await?;
//! println!("{}", out.text);
//! # Ok(()) }
//! ```

mod approval;
mod audit;
mod call;
mod call_metrics;
mod caps;
mod catalog;
mod compose;
mod context;
mod depgraph;
mod discovery;
mod error;
mod health;
mod host;
mod inspect;
mod loader;
mod lock;
mod manifest;
mod names;
mod plugin;
mod policy;
#[cfg(test)]
mod proptests;
mod registry;
mod resilience;
mod resolver;
mod schema;
mod secrets;
mod signature;
mod spec;
mod stages;
mod watch;

pub use approval::console::ConsoleReviewer;
pub use approval::rules::{RULES_VERSION, RulesError, RulesReviewer};
pub use approval::standing::{StandingApprovals, StandingError};
pub use approval::{
    ApprovalDecision, AutoApprove, DEFAULT_REVIEW_TIMEOUT, DenyAll, Gate, ReviewError,
    ReviewFuture, ReviewRequest, Reviewer, requires_approval,
};
pub use audit::{AuditError, AuditLog, AuditRecord, CallRecord, mask as mask_fields};
pub use call::{CallContext, CallOptions, CallOutput, ProgressSink, ToolResult};
pub use caps::{DescribeCaps, DescribeOverrides};
pub use catalog::{Catalog, ReloadReport};
pub use compose::pipeline::{ErrorStrategy, PIPELINES_FILE, Pipeline, PipelineStep};
pub use compose::plan::execute::{PlanResult, StepResult, StepStatus};
pub use compose::plan::graph::Graph as PlanGraph;
pub use compose::plan::{Plan, PlanError, PlanLimits, Step};
pub use compose::{CallFuture, Caller};
pub use context::ContextPolicy;
pub use corral_sandbox::DEFAULT_MAX_PLUGIN_BYTES;
pub use corral_sandbox::{CacheOutcome, ComponentCache};
pub use corral_sandbox::{CallError, ComponentError};
pub use corral_sandbox::{EPOCH_TICK, Engine};
pub use corral_sandbox::{Import as ComponentImport, Skipped as SkippedExport};
pub use corral_sandbox::{Latency, ResilienceHints, ReturnBehavior, ToolMetadata};
pub use corral_sandbox::{
    LimitOverrides, Limits, LimitsError, PoolConfig, effective as effective_limits,
};
pub use corral_sandbox::{
    MAX_LOG_LINES, MAX_LOG_MESSAGE_BYTES, ResolveFuture, Resolver, SLICE_TICKS, SystemResolver,
    internal_range,
};
pub use depgraph::ToolGraph;
pub use discovery::one_shot::{LOOP_ID_KEY, LOOP_TTL, MAX_LOOPS};
pub use discovery::search::{DEFAULT_LIMIT as SEARCH_DEFAULT_LIMIT, MAX_LIMIT as SEARCH_MAX_LIMIT};
pub use discovery::{
    DISCLOSURE_FILE, DisclosureMode, Facade, Facades, GROUPS_FILE, Permission, Selection, ToolGroup,
};
pub use error::{HostError, LoadError, LoadErrorReason};
pub use health::{HealthReport, HealthStatus, ToolHealth};
pub use host::{Host, HostBuilder};
pub use inspect::{InspectedTool, Inspection};
pub use loader::plugin_files;
pub use lock::{LOCK_FILE, LOCK_VERSION, Lock, LockError, LockedPlugin};
pub use manifest::{MANIFEST_SCHEMA, MANIFEST_VERSION};
pub use names::{MAX_NAME_LEN, PLAN_TOOL, RESERVED_NAMES, SEARCH_TOOL, check_name};
pub use plugin::Plugin;
pub use policy::{
    Credential, DirGrant, EnvGrant, HostPattern, MetadataOverride, POLICY_VERSION, Policy,
    PolicyError, ValuePart, policy_path, policy_path_in, requested_policy_path,
};
pub use registry::Tool;
pub use resilience::{
    AuditConfig, AuditLevel, BreakerConfig, CacheConfig, DEFAULT_MAX_CONTEXT_KEYS,
    HealthThresholds, Per, RateLimitConfig, ResiliencePolicy, ResilienceSwitches, ResilienceTable,
    RetryConfig, RuntimeStats, ToolResilience,
};
pub use secrets::{SecretError, SecretStore};
#[cfg(feature = "signatures")]
pub use signature::{
    BUNDLE_MEDIA_TYPE, OciEvidence, PublicKey, SIGNATURE_ANNOTATION, SIGNATURE_MEDIA_TYPE,
    SignatureError, SigningKey, Trust, TrustedRoot, blob_signature_path, bundle_path, key_bundle,
    oci_evidence_path, payload_digest, simple_signing_payload, verify_file, verifying_key,
};
pub use signature::{Identity, Signed};
pub use spec::ToolSpec;
pub use stages::{Arguments, CALL_LOG_TARGET, DispatchService, Invocation, SPAN_TARGET};
pub use watch::{DEBOUNCE, MAX_RELOAD_DELAY, REWATCH_POLL, Watcher};

/// The rules for untrusted text: which characters guest text may carry,
/// and how it is shown on a terminal (see the module docs).
pub mod untrusted_text {
    pub use corral_names::text::{check, escape, escape_json, escape_line, is_forbidden, truncate};
}

/// Internals the fuzz targets drive directly. Not part of the API: no
/// stability promise.
#[doc(hidden)]
pub mod __fuzz {
    pub use crate::compose::plan::reference::{Output, Reference, find, substitute};
    pub use crate::schema::{compile_parameters, problems as schema_problems};
    #[cfg(feature = "signatures")]
    pub use crate::signature::check_evidence;
    pub use corral_sandbox::__fuzz::value_round_trip;
}
