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

// The layers, lowest first. Loading a plugin set flows up through
// `config`, `loader` and `catalog`; a call flows down from `host` through
// `call` into the sandbox (the `corral-sandbox` crate). `ARCHITECTURE.md`
// draws both flows.
mod call;
mod catalog;
mod config;
mod evidence;
mod host;
mod loader;
mod model;
#[cfg(test)]
mod proptests;
pub mod replay;

pub use call::approval::console::{ConsoleClient, ConsoleReviewer};
pub use call::approval::rules::{RULES_VERSION, RulesError, RulesReviewer};
pub use call::approval::standing::{StandingApprovals, StandingError};
pub use call::approval::{
    ApprovalDecision, AutoApprove, DEFAULT_REVIEW_TIMEOUT, DenyAll, Gate, ReviewError,
    ReviewFuture, ReviewRequest, Reviewer, requires_approval,
};
pub use call::audit::{AuditError, AuditLog, AuditRecord, CallRecord, mask as mask_fields};
pub use call::client::{Asking, ClientRequests};
pub use call::code::CodeLimits;
pub use call::code::typescript::declarations as typescript_declarations;
pub use call::compose::pipeline::{ErrorStrategy, PIPELINES_FILE, Pipeline, PipelineStep};
pub use call::compose::plan::execute::{PlanResult, StepResult, StepStatus};
pub use call::compose::plan::graph::Graph as PlanGraph;
pub use call::compose::plan::{Plan, PlanError, PlanLimits, Step};
pub use call::compose::{CallFuture, Caller};
pub use call::health::{HealthReport, HealthStatus, ToolHealth};
pub use call::quota::{QuotaStatus, Quotas, RETRY_STORE, TenantUsage, Used as TenantUsed};
pub use call::resilience::DEFAULT_MAX_CONTEXT_KEYS;
pub use call::resilience::clock::Clock;
pub use call::stages::one_shot::{LOOP_ID_KEY, LOOP_TTL, MAX_LOOPS};
pub use call::stages::{Arguments, CALL_LOG_TARGET, DispatchService, Invocation, SPAN_TARGET};
pub use call::tenant::{TENANT_CONTEXT_KEY, Tenant, TenantSource};
pub use call::{CallContext, CallOptions, CallOutput, ProgressSink, ToolResult};
pub use catalog::depgraph::ToolGraph;
pub use catalog::discovery::search::{
    DEFAULT_LIMIT as SEARCH_DEFAULT_LIMIT, MAX_LIMIT as SEARCH_MAX_LIMIT,
};
pub use catalog::discovery::{
    DISCLOSURE_FILE, DisclosureMode, Facade, Facades, GROUPS_FILE, Permission, Selection, ToolGroup,
};
pub use catalog::manifest::{MANIFEST_SCHEMA, MANIFEST_VERSION};
pub use catalog::registry::Tool;
pub use catalog::state::RuntimeStats;
pub use catalog::watch::{DEBOUNCE, MAX_RELOAD_DELAY, REWATCH_POLL, Watcher};
pub use catalog::{Catalog, ReloadReport};
pub use config::caps::{DescribeCaps, DescribeOverrides};
pub use config::context::ContextPolicy;
pub use config::lock::{LOCK_FILE, LOCK_VERSION, Lock, LockError, LockedPlugin};
pub use config::policy::{
    Credential, DirGrant, EnvGrant, HostPattern, MAX_SAMPLING_CALLS, MAX_SAMPLING_TOKENS,
    MetadataOverride, POLICY_VERSION, Policy, PolicyError, RecordPolicy, SLOW_DEADLINE, TaskMode,
    TaskPolicy, ValuePart, policy_path, policy_path_in, requested_policy_path,
};
pub use config::quota::{
    DEFAULT_MAX_TENANTS, MAX_WINDOW, MIN_WINDOW, Quota, QuotaFileError, QuotaKind, QuotaRules,
    QuotaSet,
};
pub use config::resilience::{
    AuditConfig, AuditLevel, BreakerConfig, CacheConfig, HealthThresholds, Per, RateLimitConfig,
    ResiliencePolicy, ResilienceSwitches, ResilienceTable, RetryConfig, ToolResilience,
};
pub use config::secrets::{SecretError, SecretStore};
/// The leak scan of a plugin's secrets, for scanning text outside a call (a
/// recording, a log) the way the host scans a call's.
pub use corral_sandbox::Redactor;
pub use corral_sandbox::tape;
pub use corral_sandbox::{
    Annotations, EmbeddedResource, MAX_PARTS, Media, OutputPart, PartContent, ResourceContents,
    ResourceLink, Role,
};
pub use corral_sandbox::{
    Attempts, Denial, FileAttempt, FileOp, HttpAttempt, MAX_DISTINCT as MAX_DISTINCT_ATTEMPTS,
    Usage,
};
pub use corral_sandbox::{
    CacheOutcome, CallError, ComponentCache, ComponentError, DEFAULT_MAX_PLUGIN_BYTES, EPOCH_TICK,
    Engine, Import as ComponentImport, Latency, LimitOverrides, Limits, LimitsError, MAX_LOG_LINES,
    MAX_LOG_MESSAGE_BYTES, PoolConfig, ResilienceHints, ResolveFuture, Resolver, ReturnBehavior,
    SLICE_TICKS, Skipped as SkippedExport, SystemResolver, ToolMetadata,
    effective as effective_limits, internal_range,
};
pub use corral_sandbox::{
    ClientAnswer, ClientFuture, ClientFutures, ClientGrants, ClientRefusal, ClientRequest,
    Elicitation, ModelPreferences, Root as ClientRoot, Sampled, SamplingContent, SamplingGrant,
    SamplingMessage,
};
pub use corral_sandbox::{
    Journal, JournalAnswer, JournalEntry, NOT_DETERMINISTIC, SCRIPT_INSTANCES, ScriptOrigin,
};
pub use corral_sandbox::{MIN_GAP, OFF_PATH_DROP, PreparedStats};
pub use evidence::suggest::Generalise;
pub use evidence::unused::Verdict as UnusedVerdict;
pub use evidence::{
    EVIDENCE_VERSION, EvidenceBook, EvidenceError, FileSeen, HEADROOM, HttpSeen, MAX_ENTRIES,
    MAX_EXAMPLES, MIN_FUEL, MIN_TIMEOUT_MS, Peaks, PluginEvidence, Seen, Suggestion, ToolEvidence,
    Unused, UnusedGrant, evidence_path, read_evidence, suggest as suggest_policy,
    unused as unused_grants,
};
pub use host::error::HostError;
pub use host::{EVIDENCE_FLUSH, Host, HostBuilder};
pub use loader::error::{LoadError, LoadErrorReason};
pub use loader::inspect::{InspectedTool, Inspection};
pub use loader::plugin::Plugin;
pub use loader::plugin_files;
#[cfg(feature = "signatures")]
pub use loader::signature::{
    BUNDLE_MEDIA_TYPE, OciEvidence, PublicKey, Rejection as SignatureRejection,
    SIGNATURE_ANNOTATION, SIGNATURE_MEDIA_TYPE, SigningKey, Trust, TrustedRoot,
    blob_signature_path, bundle_path, key_bundle, oci_evidence_path, payload_digest,
    simple_signing_payload, verify_file, verifying_key,
};
pub use loader::signature::{Identity, SignatureError, Signed};
pub use model::names::{
    CODE_TOOL, MAX_NAME_LEN, PLAN_TOOL, RESERVED_NAMES, SEARCH_TOOL, check_name,
};
pub use model::spec::ToolSpec;

/// The rules for untrusted text: which characters guest text may carry,
/// and how it is shown on a terminal (see the module docs).
pub mod untrusted_text {
    pub use corral_names::text::{check, escape, escape_json, escape_line, is_forbidden, truncate};
}

/// The identifier rules (tool names, secret names, step ids, prefixes,
/// environment variables, `corral new` projects): one family of
/// [`Rule`](identifiers::Rule)s over the tool-name characters, each with its
/// own length and words (see the module docs of `corral-names`).
pub mod identifiers {
    pub use corral_names::ident::{
        ENV_VAR, FIELD, First, PREFIX, PROJECT, Rule, SECRET, STEP_ID, TOOL,
    };
}

/// Internals the fuzz targets drive directly. Not part of the API: no
/// stability promise.
#[doc(hidden)]
pub mod __fuzz {
    pub use crate::call::compose::plan::reference::{Output, Reference, find, substitute};
    #[cfg(feature = "signatures")]
    pub use crate::loader::signature::check_evidence;
    pub use crate::model::schema::{compile_parameters, problems as schema_problems};
    pub use corral_sandbox::__fuzz::value_round_trip;
}
