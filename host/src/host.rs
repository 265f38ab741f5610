//! [`Host`]: the embeddable entry point. It loads a plugin directory, lists the
//! resolved tools, and runs calls: parse, validate against the schema, wait for
//! a pool slot, run in a fresh sandbox, classify the outcome, log it.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{Semaphore, watch};
use wasmtime::component::Linker;

use crate::approval::gate::{Gatekeeper, Verdict};
use crate::approval::standing::StandingApprovals;
use crate::approval::{Gate, ReviewRequest, Reviewer};
use crate::audit::AuditLog;
use crate::cache::ComponentCache;
use crate::call::{CallContext, CallOptions, CallOutput};
use crate::catalog::{self, Catalog, LoadContext, ReloadReport};
use crate::context::{self, ContextPolicy};
use crate::engine::Engine;
use crate::error::{CallError, HostError, LoadError};
use crate::limits::{Limits, PoolConfig};
use crate::loader::{LoadLimits, Plugin};
use crate::pipeline::{self, ErrorStrategy, Pipeline};
use crate::plan::reference::Output;
use crate::plan::{self, PLAN_TOOL, Plan, PlanLimits};
use crate::resolver::{Provider, Tool};
use crate::sandbox::{self, ApprovalSetup, Op, OpResult, RunSetup, SandboxState};
use crate::spec::{ReturnBehavior, ToolSpec};

/// Longest rendering of input or output in the per-call INFO log line, in
/// characters (reference 000's "truncated input/output").
const LOG_PREVIEW_CHARS: usize = 200;

/// The `tracing` target of the per-call log lines (reference 000's logging
/// table): INFO `tool(input) -> output` with `ms` (milliseconds) and `fuel`
/// (fuel units) on success, WARN on a tool error, ERROR on a configuration
/// error, DEBUG the full input and output. Filter it by name, e.g.
/// `RUST_LOG=corral::call=info`; the CLI turns it off at its default verbosity
/// for commands that print each call's outcome themselves.
pub const CALL_LOG_TARGET: &str = "corral::call";

/// Configures and builds a [`Host`].
///
/// Defaults: no plugin directory (no tools), [`Limits::default`] for calls and
/// for `describe`, [`Limits::DEFAULT_MAX`] as the ceiling of plugin policies,
/// [`PoolConfig::default`], [`PlanLimits::default`], the
/// per-user component cache ([`ComponentCache::user_default`]); for approval
/// gates no reviewer (a gated call fails with a configuration error), standing
/// approvals in memory only, no audit log, a review timeout of
/// [`DEFAULT_REVIEW_TIMEOUT`](crate::approval::DEFAULT_REVIEW_TIMEOUT) and no tools marked as requiring approval beyond
/// their specs; for context no host-level pairs and, for every plugin,
/// [`ContextPolicy::default`] (no key crosses).
#[derive(Debug, Clone)]
pub struct HostBuilder {
    plugin_dir: Option<PathBuf>,
    limits: Limits,
    pool: PoolConfig,
    cache: ComponentCache,
    describe_limits: Limits,
    plan_limits: PlanLimits,
    max_limits: Option<Limits>,
    gate: Gatekeeper,
    required: BTreeSet<String>,
    context: CallContext,
    context_policies: HashMap<String, ContextPolicy>,
    default_context_policy: ContextPolicy,
}

impl Default for HostBuilder {
    fn default() -> Self {
        Self {
            plugin_dir: None,
            limits: Limits::default(),
            pool: PoolConfig::default(),
            cache: ComponentCache::user_default(),
            describe_limits: Limits::default(),
            plan_limits: PlanLimits::default(),
            max_limits: None,
            gate: Gatekeeper::default(),
            required: BTreeSet::new(),
            context: CallContext::new(),
            context_policies: HashMap::new(),
            default_context_policy: ContextPolicy::default(),
        }
    }
}

impl HostBuilder {
    /// Loads every `*.wasm` directly inside `dir` (not recursive).
    #[must_use]
    pub fn plugin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plugin_dir = Some(dir.into());
        self
    }

    /// Limits for every call.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Limits for each plugin's `describe` at load, independent of the call
    /// limits so that a tight call budget never makes plugins disappear.
    /// Default: [`Limits::default`].
    #[must_use]
    pub fn describe_limits(mut self, limits: Limits) -> Self {
        self.describe_limits = limits;
        self
    }

    /// Sizing of the instance pool.
    #[must_use]
    pub fn pool(mut self, pool: PoolConfig) -> Self {
        self.pool = pool;
        self
    }

    /// Where precompiled components are cached.
    #[must_use]
    pub fn cache(mut self, cache: ComponentCache) -> Self {
        self.cache = cache;
        self
    }

    /// The most a plugin's policy may raise each limit to. Default:
    /// [`Limits::DEFAULT_MAX`] with the memory cap of the pool; never below
    /// the call limits ([`HostBuilder::limits`]). A policy above it keeps its
    /// plugin from loading.
    #[must_use]
    pub fn max_limits(mut self, limits: Limits) -> Self {
        self.max_limits = Some(limits);
        self
    }

    /// Limits of `execute_tool_plan` plans. Default: [`PlanLimits::default`].
    #[must_use]
    pub fn plan_limits(mut self, limits: PlanLimits) -> Self {
        self.plan_limits = limits;
        self
    }

    /// The reviewer that decides gated calls (both gates). Default: none, so a
    /// gated call fails with
    /// [`CallError::Configuration`].
    #[must_use]
    pub fn reviewer(mut self, reviewer: impl Reviewer + 'static) -> Self {
        self.gate.reviewer = Some(Arc::new(reviewer));
        self
    }

    /// Like [`HostBuilder::reviewer`], for a reviewer already shared.
    #[must_use]
    pub fn reviewer_arc(mut self, reviewer: Arc<dyn Reviewer>) -> Self {
        self.gate.reviewer = Some(reviewer);
        self
    }

    /// Where "always allow" decisions are kept. Default: in memory for the
    /// life of the host ([`StandingApprovals::in_memory`]).
    #[must_use]
    pub fn standing_approvals(mut self, standing: StandingApprovals) -> Self {
        self.gate.standing = Arc::new(standing);
        self
    }

    /// Appends every gated call and decision to `log`. Default: no audit log.
    #[must_use]
    pub fn audit_log(mut self, log: AuditLog) -> Self {
        self.gate.audit = Some(Arc::new(log));
        self
    }

    /// How long a reviewer may take before the decision becomes deny.
    /// Default: [`DEFAULT_REVIEW_TIMEOUT`](crate::approval::DEFAULT_REVIEW_TIMEOUT)
    /// (120 000 ms).
    #[must_use]
    pub fn review_timeout(mut self, timeout: Duration) -> Self {
        self.gate.timeout = timeout;
        self
    }

    /// Marks `tool` as requiring approval, whatever its spec says (the
    /// configuration side of the declared gate). A name that matches no tool
    /// is logged at WARN when the host is built.
    #[must_use]
    pub fn require_approval(mut self, tool: impl Into<String>) -> Self {
        self.required.insert(tool.into());
        self
    }

    /// Process-level context, merged under every call's own context (the
    /// call wins on conflict; see [`crate::context`]).
    #[must_use]
    pub fn context(mut self, context: CallContext) -> Self {
        self.context = context;
        self
    }

    /// Which context keys reach the plugin named `plugin` (its file stem).
    #[must_use]
    pub fn context_policy(mut self, plugin: impl Into<String>, policy: ContextPolicy) -> Self {
        self.context_policies.insert(plugin.into(), policy);
        self
    }

    /// The policy of plugins without their own. Default:
    /// [`ContextPolicy::default`], no key crosses.
    #[must_use]
    pub fn default_context_policy(mut self, policy: ContextPolicy) -> Self {
        self.default_context_policy = policy;
        self
    }

    /// Creates the engine, loads and resolves the plugins.
    ///
    /// A plugin that fails to load does not fail the build: it is reported by
    /// [`Host::load_errors`] and logged at ERROR.
    ///
    /// # Errors
    /// [`HostError::Limits`] for unusable limits, [`HostError::Engine`] when
    /// wasmtime rejects the configuration, [`HostError::PluginDir`] when the
    /// plugin directory cannot be listed.
    pub async fn build(self) -> Result<Host, HostError> {
        self.limits.validate(&self.pool)?;
        self.describe_limits.validate(&self.pool)?;
        let engine = Engine::new(self.pool).map_err(|e| HostError::Engine(format!("{e:#}")))?;
        let linker =
            Arc::new(sandbox::linker(&engine).map_err(|e| HostError::Engine(format!("{e:#}")))?);
        let max = self.max_limits.unwrap_or(Limits {
            memory_bytes: self.pool.max_memory_bytes,
            ..Limits::DEFAULT_MAX
        });
        let load_limits = LoadLimits {
            describe: self.describe_limits,
            call: self.limits,
            max: Limits {
                fuel: max.fuel.max(self.limits.fuel),
                timeout_ms: max.timeout_ms.max(self.limits.timeout_ms),
                memory_bytes: max.memory_bytes.min(self.pool.max_memory_bytes),
                output_bytes: max.output_bytes.max(self.limits.output_bytes),
                ..max
            },
        };
        let (catalog, _) = catalog::load(
            &LoadContext {
                engine: &engine,
                linker: &linker,
                cache: &self.cache,
                plugin_dir: self.plugin_dir.as_deref(),
                limits: load_limits,
            },
            None,
        )
        .await?;
        for name in &self.required {
            if catalog.tool(name).is_none() {
                tracing::warn!(
                    tool = name,
                    "marked as requiring approval, but no loaded tool has this name"
                );
            }
        }
        if self.gate.reviewer.is_none() {
            let gated: Vec<&str> = catalog
                .tools()
                .filter(|t| {
                    t.spec().metadata.requires_approval || self.required.contains(&t.spec().name)
                })
                .map(|t| t.spec().name.as_str())
                .collect();
            if !gated.is_empty() {
                tracing::warn!(
                    "tools requiring approval with no reviewer configured (their calls will \
                     fail until one is): {}",
                    gated.join(", ")
                );
            }
        }
        let (changes, _) = watch::channel(catalog.generation());
        Ok(Host {
            inner: Arc::new(HostInner {
                permits: Arc::new(Semaphore::new(self.pool.max_concurrent_instances as usize)),
                engine,
                linker,
                cache: self.cache,
                plugin_dir: self.plugin_dir,
                load_limits,
                catalog: RwLock::new(Arc::new(catalog)),
                reloading: tokio::sync::Mutex::new(()),
                changes,
                limits: self.limits,
                plan_limits: self.plan_limits,
                gate: Arc::new(self.gate),
                required: self.required,
                context: self.context,
                context_policies: self.context_policies,
                default_context_policy: self.default_context_policy,
            }),
        })
    }
}

/// A loaded set of sandboxed tools.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use corral::{CallOptions, Host};
/// let host = Host::builder().plugin_dir("plugins").build().await?;
/// let out = host
///     .call("word_count", r#"{"text": "one two"}"#, &CallOptions::default())
///     .await?;
/// assert_eq!(out.json.unwrap()["words"], 2);
/// # Ok(()) }
/// ```
///
/// `Host` is `Send + Sync` and cheap to clone (clones share everything); call
/// it from many tasks at once. At most [`PoolConfig::max_concurrent_instances`]
/// calls run at once; the rest wait for a slot.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

struct HostInner {
    plan_limits: PlanLimits,
    engine: Engine,
    linker: Arc<Linker<SandboxState>>,
    cache: ComponentCache,
    plugin_dir: Option<PathBuf>,
    load_limits: LoadLimits,
    /// The catalog being served; replaced whole by a reload.
    catalog: RwLock<Arc<Catalog>>,
    /// One reload at a time.
    reloading: tokio::sync::Mutex<()>,
    /// The generation of the last catalog whose tool set changed.
    changes: watch::Sender<u64>,
    limits: Limits,
    gate: Arc<Gatekeeper>,
    required: BTreeSet<String>,
    context: CallContext,
    context_policies: HashMap<String, ContextPolicy>,
    default_context_policy: ContextPolicy,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let catalog = self.catalog();
        f.debug_struct("Host")
            .field("generation", &catalog.generation())
            .field("tools", &catalog.tools().count())
            .field("load_errors", &catalog.load_errors().len())
            .field("limits", &self.inner.limits)
            .finish()
    }
}

impl Host {
    /// A builder with every default (see [`HostBuilder`]).
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// The catalog being served now. Hold on to it to see one consistent
    /// state across several lookups; a reload does not change it.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner
            .catalog
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Every tool, sorted by name (from the current catalog).
    pub fn tools(&self) -> Vec<Arc<Tool>> {
        self.catalog().tools().cloned().collect()
    }

    /// Every tool's spec, sorted by name (from the current catalog).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.catalog().specs().cloned().collect()
    }

    /// The tool called `name` in the current catalog.
    pub fn tool(&self, name: &str) -> Option<Arc<Tool>> {
        self.catalog().tool(name).cloned()
    }

    /// The files that failed to load, with reasons, sorted by path.
    pub fn load_errors(&self) -> Vec<LoadError> {
        self.catalog().load_errors().to_vec()
    }

    /// Reloads the plugin directory: new and changed plugins (and policies)
    /// are compiled and described off the serving path, then the whole
    /// catalog is swapped in at once. Calls in flight finish on the catalog
    /// they started with. A plugin whose new file fails to load keeps serving
    /// its previous version. When the tool set changed, subscribers
    /// ([`Host::subscribe`]) are told the new generation.
    ///
    /// # Errors
    /// [`HostError::PluginDir`] when the directory cannot be listed; the
    /// current catalog stays in service.
    pub async fn reload(&self) -> Result<ReloadReport, HostError> {
        let _one_at_a_time = self.inner.reloading.lock().await;
        let previous = self.catalog();
        let (next, kept) = catalog::load(
            &LoadContext {
                engine: &self.inner.engine,
                linker: &self.inner.linker,
                cache: &self.inner.cache,
                plugin_dir: self.inner.plugin_dir.as_deref(),
                limits: self.inner.load_limits,
            },
            Some(&previous),
        )
        .await?;
        let report = catalog::diff(&previous, &next, kept);
        *self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(next);
        if report.tools_changed() {
            tracing::info!(
                generation = report.generation,
                added = ?report.added,
                removed = ?report.removed,
                updated = ?report.updated,
                "tool set changed"
            );
            self.inner.changes.send_replace(report.generation);
        }
        Ok(report)
    }

    /// A receiver that sees the catalog generation each time the tool set
    /// changes (tools added, removed or updated), e.g. to send MCP's
    /// `notifications/tools/list_changed`.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Watches the plugin directory and reloads ([`Host::reload`]) when a
    /// plugin, a policy or `pipelines.json` changes, until the returned
    /// [`Watcher`](crate::watch::Watcher) is dropped. Call it inside a tokio
    /// runtime.
    ///
    /// # Errors
    /// [`HostError::Watch`] without a plugin directory or when it cannot be
    /// watched.
    pub fn watch(&self) -> Result<crate::watch::Watcher, HostError> {
        crate::watch::start(self)
    }

    /// The plugin directory, if the host has one.
    pub fn plugin_dir(&self) -> Option<&Path> {
        self.inner.plugin_dir.as_deref()
    }

    /// The default limits of every call.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Whether calls of `tool` pass the declared approval gate: its spec says
    /// `requires-approval` or the host configuration marks it.
    pub fn requires_approval(&self, tool: &str) -> bool {
        self.inner.required.contains(tool)
            || self
                .tool(tool)
                .is_some_and(|t| t.spec().metadata.requires_approval)
    }

    /// The context policy of the plugin named `plugin`: the host
    /// configuration's ([`HostBuilder::context_policy`]) if set, else the
    /// plugin's policy file's `[context]`, else the host default.
    pub fn context_policy(&self, plugin: &str) -> ContextPolicy {
        let catalog = self.catalog();
        let loaded = catalog
            .tools()
            .filter_map(|t| t.plugin())
            .find(|p| p.name() == plugin);
        self.policy_for(plugin, loaded).clone()
    }

    /// The one precedence rule of context policies: host configuration, then
    /// the plugin's policy file, then the host default.
    fn policy_for<'a>(&'a self, name: &str, plugin: Option<&'a Plugin>) -> &'a ContextPolicy {
        self.inner
            .context_policies
            .get(name)
            .or(plugin.and_then(|p| p.policy().context.as_ref()))
            .unwrap_or(&self.inner.default_context_policy)
    }

    /// Calls `name` with `arguments` (JSON text of an object).
    ///
    /// Order: look up the tool, parse and validate the arguments against its
    /// schema (no guest code runs for invalid arguments), wait for a pool slot
    /// (and, for tools that are not parallelizable, for the tool's previous
    /// call), run in a fresh sandbox under every limit, check the output size.
    ///
    /// # Errors
    /// One [`CallError`] class per way a call can fail; see its variants.
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        options: &CallOptions,
    ) -> Result<CallOutput, CallError> {
        let started = Instant::now();
        let result = self.call_inner(name, arguments, options, started).await;
        // Milliseconds to one decimal place: log lines stay readable.
        let ms = (started.elapsed().as_secs_f64() * 1e4).round() / 10.0;
        record_metrics(name, &result, started.elapsed());
        let input = preview(arguments);
        match &result {
            Ok(out) => {
                tracing::info!(
                    target: CALL_LOG_TARGET,
                    tool = name,
                    ms,
                    fuel = out.fuel_consumed,
                    "{name}({input}) -> {}",
                    preview(&out.text)
                );
                tracing::debug!(
                    target: CALL_LOG_TARGET,
                    tool = name,
                    "full input: {arguments}\nfull output: {}",
                    out.text
                );
            }
            Err(err @ CallError::Configuration { .. }) => {
                tracing::error!(
                    target: CALL_LOG_TARGET,
                    tool = name,
                    ms,
                    kind = err.kind(),
                    "{name}({input}) -> {}",
                    err.llm_text()
                );
            }
            Err(err) => {
                tracing::warn!(
                    target: CALL_LOG_TARGET,
                    tool = name,
                    ms,
                    kind = err.kind(),
                    "{name}({input}) -> {}",
                    err.llm_text()
                );
                tracing::debug!(target: CALL_LOG_TARGET, tool = name, "full input: {arguments}");
            }
        }
        result
    }

    /// Validates plan JSON text against the plan rules and the loaded tools.
    ///
    /// # Errors
    /// [`PlanError`](crate::plan::PlanError) as
    /// [`CallError::InvalidArguments`] naming each problem.
    pub fn validate_plan(&self, plan: &str) -> Result<Plan, CallError> {
        let catalog = self.catalog();
        Plan::parse(plan, &self.inner.plan_limits, |t| catalog.tool(t).is_some()).map_err(|err| {
            CallError::InvalidArguments {
                tool: PLAN_TOOL.to_string(),
                problems: err.problems,
                code: None,
            }
        })
    }

    /// Runs a validated plan (see [`plan::execute`]).
    ///
    /// Boxed because a plan's steps are calls: the explicit `Send` future
    /// breaks the `call -> plan -> call` type cycle.
    pub fn run_plan<'a>(
        &'a self,
        plan: &'a Plan,
        options: &'a CallOptions,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = plan::PlanResult> + Send + 'a>> {
        Box::pin(plan::execute::run(
            self,
            plan,
            &self.inner.plan_limits,
            options,
        ))
    }

    /// Runs a pipeline's steps in order (see [`pipeline`]). Boxed for the same
    /// reason as [`Host::run_plan`]: its steps are calls.
    fn run_pipeline<'a>(
        &'a self,
        name: &'a str,
        pipeline: &'a Pipeline,
        input: &'a Value,
        options: &'a CallOptions,
        started: Instant,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<CallOutput, CallError>> + Send + 'a>,
    > {
        Box::pin(async move {
            let mut prev: Option<Output> = None;
            let mut last: Result<CallOutput, CallError> = Err(CallError::Internal {
                tool: name.to_string(),
                message: "the pipeline has no steps".into(),
            });
            let mut fuel = 0;
            for (i, step) in pipeline.steps.iter().enumerate() {
                let arguments = pipeline::step_arguments(step, i, input, prev.as_ref());
                last = self.call(&step.tool, &arguments.to_string(), options).await;
                let is_last = i + 1 == pipeline.steps.len();
                match &last {
                    Ok(out) => {
                        fuel += out.fuel_consumed;
                        if !is_last {
                            prev = Some(pipeline::adapt(step, Output::from_text(&out.text)));
                        }
                    }
                    Err(err) => {
                        if pipeline.error_strategy == ErrorStrategy::FailFast || is_last {
                            return Err(pipeline::step_error(name, i, &step.tool, err.clone()));
                        }
                        prev = Some(Output::Text(err.llm_text()));
                    }
                }
            }
            last.map(|out| CallOutput {
                tool: name.to_string(),
                // Pipelines are declared to_llm, whatever their last step says.
                return_behavior: ReturnBehavior::ToLlm,
                duration: started.elapsed(),
                fuel_consumed: fuel,
                ..out
            })
        })
    }

    async fn run_builtin(
        &self,
        name: &str,
        arguments: &str,
        options: &CallOptions,
        started: Instant,
    ) -> Result<CallOutput, CallError> {
        debug_assert_eq!(name, PLAN_TOOL);
        let plan = self.validate_plan(arguments)?;
        let result = self.run_plan(&plan, options).await;
        let json = result.to_json();
        Ok(CallOutput {
            tool: name.to_string(),
            text: json.to_string(),
            json: Some(json),
            return_behavior: ReturnBehavior::ToLlm,
            duration: started.elapsed(),
            fuel_consumed: result.fuel_consumed(),
        })
    }

    async fn call_inner(
        &self,
        name: &str,
        arguments: &str,
        options: &CallOptions,
        started: Instant,
    ) -> Result<CallOutput, CallError> {
        let catalog = self.catalog();
        let tool = catalog
            .tool(name)
            .cloned()
            .ok_or_else(|| CallError::UnknownTool {
                name: name.to_string(),
                suggestion: catalog.registry.suggest(name),
            })?;
        drop(catalog);
        let invalid = |problems: Vec<String>| CallError::InvalidArguments {
            tool: name.to_string(),
            problems,
            code: None,
        };
        let mut value: Value = serde_json::from_str(arguments)
            .map_err(|err| invalid(vec![format!("the arguments are not valid JSON: {err}")]))?;
        if !value.is_object() {
            return Err(invalid(vec![
                "the arguments must be a JSON object, e.g. {\"text\": \"...\"}".into(),
            ]));
        }
        tool.validate_arguments(&value).map_err(invalid)?;
        let (plugin_name, plugin_sha256) = match tool.provider() {
            Provider::Plugin(plugin) => (plugin.name().to_string(), plugin.sha256().to_string()),
            Provider::Pipeline(_) => ("pipelines".to_string(), String::new()),
            Provider::Builtin => ("corral".to_string(), String::new()),
        };
        // The declared gate: before any pool slot is taken or guest code runs.
        let edited;
        let gated = self.inner.required.contains(name) || tool.spec().metadata.requires_approval;
        let arguments = if gated {
            let request = ReviewRequest {
                gate: Gate::Declared,
                tool: name.to_string(),
                plugin: plugin_name,
                plugin_sha256: plugin_sha256.clone(),
                description: tool.spec().description.clone(),
                arguments: value.clone(),
                timeout: self.inner.gate.timeout,
            };
            match self
                .inner
                .gate
                .review(request, Some(tool.validator()), options.reviewer.as_ref())
                .await?
            {
                Verdict::Reject(reason) => {
                    return Err(CallError::Rejected {
                        tool: name.to_string(),
                        reason,
                    });
                }
                Verdict::Proceed { edited: None } => arguments,
                Verdict::Proceed {
                    edited: Some(revised),
                } => {
                    value = serde_json::from_str(&revised).map_err(|err| CallError::Internal {
                        tool: name.to_string(),
                        message: format!("checked edit no longer parses: {err}"),
                    })?;
                    edited = revised;
                    edited.as_str()
                }
            }
        } else {
            arguments
        };
        let plugin = match tool.provider() {
            Provider::Plugin(plugin) => plugin,
            Provider::Builtin => return self.run_builtin(name, arguments, options, started).await,
            Provider::Pipeline(pipeline) => {
                return self
                    .run_pipeline(name, pipeline.as_ref(), &value, options, started)
                    .await;
            }
        };

        let limits = options.limits.unwrap_or(*plugin.limits());
        limits
            .validate(self.inner.engine.pool())
            .map_err(|err| CallError::Internal {
                tool: name.to_string(),
                message: err.to_string(),
            })?;
        let _slot = self
            .inner
            .permits
            .acquire()
            .await
            .map_err(|_| CallError::Internal {
                tool: name.to_string(),
                message: "the host is shutting down".into(),
            })?;
        let _serial = if tool.spec().metadata.parallelizable {
            None
        } else {
            Some(tool.serial.lock().await)
        };

        let setup = RunSetup {
            engine: &self.inner.engine,
            pre: plugin.pre(),
            limits: &limits,
            plugin: plugin.name_arc(),
            tool: Arc::from(name),
            grants: plugin.grants(),
            approval: ApprovalSetup {
                gate: self.inner.gate.clone(),
                plugin_sha256,
                arguments: value,
                validator: Some(tool.validator().clone()),
                reviewer: options.reviewer.clone(),
            },
            progress: options.progress.clone(),
        };
        let (context, withheld) = context::effective(
            &self.inner.context,
            &options.context,
            self.policy_for(plugin.name(), Some(plugin)),
        );
        if !withheld.is_empty() {
            tracing::debug!(
                tool = name,
                plugin = plugin.name(),
                "context keys withheld by the plugin's policy: {}",
                withheld.join(", ")
            );
        }
        let op = Op::Call {
            // The guest knows the tool by its own name, whatever the policy shows.
            name: tool.guest_name(),
            arguments,
            context,
        };
        let (result, report) = sandbox::run(setup, op).await;
        log_stdio(name, "stdout", &report.stdout);
        log_stdio(name, "stderr", &report.stderr);

        let returned = match result {
            Ok(OpResult::Call(returned)) => returned,
            Ok(OpResult::Describe(_)) => unreachable!("a call returns a call result"),
            Err(failure) => return Err(failure.into_call_error(name, &limits)),
        };
        // A denied or undecidable approval request fails the call whatever the
        // guest returned afterwards: the model never sees the output of an
        // action a reviewer stopped.
        if let Some(err) = report.config_error {
            return Err(err);
        }
        if let Some(reason) = report.rejected {
            return Err(CallError::Rejected {
                tool: name.to_string(),
                reason,
            });
        }
        use crate::bindings::corral::tool::types::ToolError as WitError;
        match returned {
            Ok(text) => {
                if text.len() > limits.output_bytes {
                    return Err(CallError::OutputTooLarge {
                        tool: name.to_string(),
                        bytes: text.len(),
                        limit_bytes: limits.output_bytes,
                    });
                }
                let json = serde_json::from_str(&text).ok();
                Ok(CallOutput {
                    tool: name.to_string(),
                    text,
                    json,
                    return_behavior: tool.spec().metadata.return_behavior,
                    duration: started.elapsed(),
                    fuel_consumed: report.fuel_consumed,
                })
            }
            Err(WitError::InvalidArguments(info)) => Err(CallError::InvalidArguments {
                tool: name.to_string(),
                problems: vec![info.message],
                code: info.code,
            }),
            Err(WitError::ExecutionFailed(info)) => Err(CallError::ToolFailed {
                tool: name.to_string(),
                message: info.message,
                code: info.code,
            }),
        }
    }
}

/// Records one call in the `metrics` facade (a no-op unless the process
/// installed a recorder, as `corral serve` does for `/metrics`):
/// `corral_calls_total{tool}`, `corral_call_errors_total{tool, kind}`,
/// `corral_call_duration_seconds{tool}` (histogram) and
/// `corral_fuel_consumed_total{tool}` (fuel units).
fn record_metrics(tool: &str, result: &Result<CallOutput, CallError>, took: Duration) {
    let tool = tool.to_string();
    metrics::counter!("corral_calls_total", "tool" => tool.clone()).increment(1);
    metrics::histogram!("corral_call_duration_seconds", "tool" => tool.clone())
        .record(took.as_secs_f64());
    match result {
        Ok(out) => metrics::counter!("corral_fuel_consumed_total", "tool" => tool)
            .increment(out.fuel_consumed),
        Err(err) => metrics::counter!(
            "corral_call_errors_total",
            "tool" => tool,
            "kind" => err.kind()
        )
        .increment(1),
    }
}

/// Logs what a guest printed, noting how much was discarded.
fn log_stdio(tool: &str, stream: &str, (text, discarded): &(String, u64)) {
    if text.is_empty() && *discarded == 0 {
        return;
    }
    if *discarded > 0 {
        tracing::warn!(
            tool,
            stream,
            discarded,
            "guest output truncated; {discarded} bytes discarded"
        );
    }
    tracing::debug!(tool, stream, "{}", text.trim_end());
}

/// The first [`LOG_PREVIEW_CHARS`] characters of `text`, on one line.
fn preview(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(LOG_PREVIEW_CHARS)
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if text.chars().count() > LOG_PREVIEW_CHARS {
        out.push('…');
    }
    out
}

/// The plugin directory that holds the bundled sample tools, as built by
/// `scripts/build-guests.sh`: `<repository>/plugins`.
pub fn bundled_plugin_dir() -> PathBuf {
    let host_crate = Path::new(env!("CARGO_MANIFEST_DIR"));
    host_crate.parent().unwrap_or(host_crate).join("plugins")
}
