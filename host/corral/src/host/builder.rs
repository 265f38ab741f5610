//! [`HostBuilder`]: every knob of a [`Host`], with its default, and the
//! one-time work of building one (engine, linker, first catalog, the
//! dispatch service and its layers).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use tower::util::BoxCloneSyncService;

use super::{Host, HostInner};
use crate::call::CallContext;
use crate::call::approval::Reviewer;
use crate::call::approval::gate::Gatekeeper;
use crate::call::approval::standing::StandingApprovals;
use crate::call::audit::AuditLog;
use crate::call::compose::plan::PlanLimits;
use crate::call::stages::{CallEnv, DispatchService, PluginDispatch};
use crate::catalog;
use crate::catalog::discovery::Discovery;
use crate::config::caps::DescribeCaps;
use crate::config::context::{ContextConfig, ContextPolicy};
use crate::config::resilience::ResilienceSwitches;
use crate::host::error::HostError;
use crate::loader::{LoadContext, LoadLimits};
use corral_sandbox as sandbox;
use corral_sandbox::{ComponentCache, Engine, Limits, PoolConfig, Resolver, SystemResolver};

/// Wraps the dispatch service in one layer.
type LayerFn = Arc<dyn Fn(DispatchService) -> DispatchService + Send + Sync>;

/// Configures and builds a [`Host`].
///
/// Defaults: no plugin directory (no tools), [`Limits::default`] for calls,
/// [`Limits::describe_default`] (a 2 000 ms deadline) for `describe` and
/// [`DescribeCaps::default`] for what it declares, [`Limits::DEFAULT_MAX`] as
/// the ceiling of plugin policies,
/// [`PoolConfig::default`], [`PlanLimits::default`], the
/// per-user component cache ([`ComponentCache::user_default`]); for approval
/// gates no reviewer (a gated call fails with a configuration error), standing
/// approvals in memory only, no audit log, a review timeout of
/// [`DEFAULT_REVIEW_TIMEOUT`](crate::call::approval::DEFAULT_REVIEW_TIMEOUT) and no
/// tools marked as requiring approval beyond their specs; for context no
/// host-level pairs and, for every plugin, [`ContextPolicy::default`] (no key
/// crosses); no dispatch layers.
#[derive(Clone)]
pub struct HostBuilder {
    plugin_dir: Option<PathBuf>,
    policy_dir: Option<PathBuf>,
    limits: Limits,
    pool: PoolConfig,
    cache: ComponentCache,
    describe_limits: Limits,
    describe_caps: DescribeCaps,
    switches: ResilienceSwitches,
    pub(super) plan_limits: PlanLimits,
    pub(super) code_limits: crate::call::code::CodeLimits,
    max_limits: Option<Limits>,
    gate: Gatekeeper,
    required: BTreeSet<String>,
    context: ContextConfig,
    layers: Vec<LayerFn>,
    resolver: Arc<dyn Resolver>,
    discovery: Discovery,
    any_component: bool,
    pub(super) max_plugin_bytes: u64,
    pub(super) serve_while_compiling: bool,
    pub(super) trust: crate::loader::signature::Trust,
    secrets: Option<crate::config::secrets::SecretStore>,
    pub(super) clock: crate::call::resilience::clock::Clock,
    pub(super) accounting: super::ledger::Accounting,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuilder")
            .field("plugin_dir", &self.plugin_dir)
            .field("policy_dir", &self.policy_dir)
            .field("limits", &self.limits)
            .field("pool", &self.pool)
            .field("layers", &self.layers.len())
            .finish_non_exhaustive()
    }
}

impl Default for HostBuilder {
    fn default() -> Self {
        Self {
            plugin_dir: None,
            policy_dir: None,
            limits: Limits::default(),
            pool: PoolConfig::default(),
            cache: ComponentCache::user_default(),
            describe_limits: Limits::describe_default(),
            describe_caps: DescribeCaps::default(),
            switches: ResilienceSwitches::default(),
            plan_limits: PlanLimits::default(),
            code_limits: crate::call::code::CodeLimits::default(),
            max_limits: None,
            gate: Gatekeeper::default(),
            required: BTreeSet::new(),
            context: ContextConfig::default(),
            layers: Vec::new(),
            resolver: Arc::new(SystemResolver),
            discovery: Discovery::default(),
            any_component: true,
            max_plugin_bytes: corral_sandbox::DEFAULT_MAX_PLUGIN_BYTES,
            serve_while_compiling: false,
            trust: crate::loader::signature::Trust::default(),
            secrets: None,
            clock: crate::call::resilience::clock::Clock::system(),
            accounting: Default::default(),
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

    /// Reads each plugin's policy (`<stem>.policy.toml`) from `dir` instead
    /// of beside the plugin, e.g. a Kubernetes ConfigMap mounted apart from
    /// a read-only plugin volume. [`Host::watch`](crate::Host::watch)
    /// watches it too, and any change in it reloads (a ConfigMap update
    /// swaps a `..data` link rather than writing the files). A relative
    /// `host` path in such a policy is relative to `dir`. Default: beside
    /// each plugin.
    #[must_use]
    pub fn policy_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.policy_dir = Some(dir.into());
        self
    }

    /// The default limits of every call; a plugin's policy may change them
    /// within [`HostBuilder::max_limits`] (see
    /// [`limits::effective`](corral_sandbox::effective)).
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Limits for each plugin's `describe` at load, independent of the call
    /// limits so that a tight call budget never makes plugins disappear.
    /// A plugin's policy may change the deadline (`[describe] timeout_ms`).
    /// Default: [`Limits::describe_default`], a 2 000 ms deadline.
    #[must_use]
    pub fn describe_limits(mut self, limits: Limits) -> Self {
        self.describe_limits = limits;
        self
    }

    /// Caps on what each plugin's `describe` may declare (tools, description
    /// and schema sizes, total output); a plugin's policy may change them for
    /// that plugin (`[describe]`). Default: [`DescribeCaps::default`].
    #[must_use]
    pub fn describe_caps(mut self, caps: DescribeCaps) -> Self {
        self.describe_caps = caps;
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

    /// The reviewer that decides gated calls (both gates). Default: none, so a
    /// gated call fails with
    /// [`CallError::Configuration`](crate::CallError::Configuration).
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
    /// Default: [`DEFAULT_REVIEW_TIMEOUT`](crate::call::approval::DEFAULT_REVIEW_TIMEOUT)
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
    /// call wins on conflict; see [`ContextPolicy`]).
    #[must_use]
    pub fn context(mut self, context: CallContext) -> Self {
        self.context.host = context;
        self
    }

    /// Which context keys reach the plugin named `plugin` (its file stem).
    /// Wins over the plugin's policy file.
    #[must_use]
    pub fn context_policy(mut self, plugin: impl Into<String>, policy: ContextPolicy) -> Self {
        self.context.plugins.insert(plugin.into(), policy);
        self
    }

    /// The policy of plugins without their own. Default:
    /// [`ContextPolicy::default`], no key crosses.
    #[must_use]
    pub fn default_context_policy(mut self, policy: ContextPolicy) -> Self {
        self.context.default = policy;
        self
    }

    /// Which resilience layers run at all (retry, circuit breaker, rate
    /// limit, cache): a layer switched off here is off whatever plugins'
    /// policies and hints say. Default: all on
    /// ([`ResilienceSwitches::default`]).
    #[must_use]
    pub fn resilience(mut self, switches: ResilienceSwitches) -> Self {
        self.switches = switches;
        self
    }

    /// Resolves the host names of plugins' outbound HTTP requests. The host
    /// checks every address it returns against the internal ranges before
    /// connecting, so a resolver never widens what a policy allows. Default:
    /// [`SystemResolver`], the operating system's.
    #[must_use]
    pub fn resolver(mut self, resolver: impl Resolver + 'static) -> Self {
        self.resolver = Arc::new(resolver);
        self
    }

    /// Wraps the dispatch of every plugin tool's execution in `layer` (a
    /// [`tower::Layer`]): it sees each [`Invocation`](crate::Invocation) after
    /// validation, effective limits and the declared gate, from every entry
    /// point (direct calls, MCP, plan and pipeline steps). The first layer
    /// added is the outermost. Default: none.
    #[must_use]
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: tower::Layer<DispatchService> + Send + Sync + 'static,
        L::Service: tower::Service<
                crate::Invocation,
                Response = crate::CallOutput,
                Error = crate::CallError,
            > + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as tower::Service<crate::Invocation>>::Future: Send + 'static,
    {
        self.layers.push(Arc::new(move |inner| {
            BoxCloneSyncService::new(layer.layer(inner))
        }));
        self
    }

    /// Serves the built-in `tool_search` (TnsAI, "Tool Discovery";
    /// query forms in `ARCHITECTURE.md` and the README): fuzzy search over
    /// the served tools' names, descriptions and keywords, `category:`,
    /// `info:` and `list`. Default: off (the name stays reserved).
    #[must_use]
    pub fn tool_search(mut self, on: bool) -> Self {
        self.discovery.tool_search = on;
        self
    }

    /// Serves only the members of these tool groups (declared in the plugin
    /// directory's `groups.toml`, see [`ToolGroup`](crate::ToolGroup)) and
    /// the built-in tools. A group that is not declared, or that fails its
    /// permission check, serves nothing and is a load error. Default: no
    /// group selection (every tool).
    #[must_use]
    pub fn groups<I: IntoIterator<Item = S>, S: Into<String>>(mut self, groups: I) -> Self {
        self.discovery.selection.groups = groups.into_iter().map(Into::into).collect();
        self
    }

    /// Serves components of other worlds than `corral:tool/plugin` in
    /// any-component mode: each exported function a tool, under the same
    /// sandbox (see `corral::foreign` in `ARCHITECTURE.md`). A plugin's
    /// policy can forbid it for that plugin (`any_component = false`).
    /// Default: on; off, such a component fails to load as being of the
    /// wrong world.
    #[must_use]
    pub fn any_component(mut self, on: bool) -> Self {
        self.any_component = on;
        self
    }

    /// The secret store `[[http.credentials]]` take their secrets from,
    /// read on every load and reload ([`SecretStore`](crate::SecretStore)).
    /// Default: none, so a plugin whose policy names a secret fails to
    /// load, saying which.
    #[must_use]
    pub fn secrets(mut self, store: crate::config::secrets::SecretStore) -> Self {
        self.secrets = Some(store);
        self
    }

    /// Groups the served tools behind facades for progressive disclosure
    /// (Embabel's `UnfoldingTool`): one per plugin, one per category, or
    /// the operator's `disclosure.toml`; see
    /// [`Facades`](crate::Facades). What a client sees is the MCP server's
    /// ([`Catalog::facades`](crate::Catalog::facades) says what to show).
    /// Default: [`DisclosureMode::Off`](crate::DisclosureMode::Off).
    #[must_use]
    pub fn disclosure(mut self, mode: crate::DisclosureMode) -> Self {
        self.discovery.disclosure = mode;
        self
    }

    /// Does not serve tools whose names match `pattern` (applied after the
    /// group selection; built-in tools included). Default: none.
    #[must_use]
    pub fn exclude_tools(mut self, pattern: regex::Regex) -> Self {
        self.discovery.selection.exclude = Some(pattern);
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
    pub async fn build(mut self) -> Result<Host, HostError> {
        let (quotas, evidence, recordings) = self.accounting.start()?;
        self.limits.validate(&self.pool)?;
        self.describe_limits.validate(&self.pool)?;
        let engine = Engine::new(self.pool).map_err(|e| HostError::Engine(format!("{e:#}")))?;
        let linker =
            Arc::new(sandbox::linker(&engine).map_err(|e| HostError::Engine(format!("{e:#}")))?);
        let max = self
            .max_limits
            .unwrap_or(Limits::DEFAULT_MAX.with_memory_bytes(self.pool.max_memory_bytes));
        let load_limits = LoadLimits {
            describe: self.describe_limits,
            caps: self.describe_caps,
            switches: self.switches,
            call: self.limits,
            pool: self.pool,
            any_component: self.any_component,
            max_plugin_bytes: self.max_plugin_bytes,
            max: {
                let mut raised = max;
                raised.fuel = max.fuel.max(self.limits.fuel);
                raised.timeout_ms = max.timeout_ms.max(self.limits.timeout_ms);
                raised.memory_bytes = max.memory_bytes.min(self.pool.max_memory_bytes);
                raised.output_bytes = max.output_bytes.max(self.limits.output_bytes);
                raised
            },
        };
        let instances = corral_sandbox::Instances::new(&engine, self.resolver.clone());
        let permits = instances.permits().clone();
        let discovery = self.discovery;
        let states = crate::catalog::state::StateCount::default();
        self.cache.sweep();
        let (catalog, _) = catalog::load(
            &LoadContext {
                engine: &engine,
                linker: &linker,
                cache: &self.cache,
                plugin_dir: self.plugin_dir.as_deref(),
                policy_dir: self.policy_dir.as_deref(),
                limits: load_limits,
                permits: &permits,
                secrets: self.secrets.as_ref(),
                defer_uncached: self.serve_while_compiling,
                trust: &self.trust,
                gate: None,
            },
            &catalog::CatalogInputs {
                discovery: &discovery,
                required: &self.required,
                states: &states,
            },
            None,
        )
        .await?;
        super::startup::warn_about_gates(&catalog, &self.required, self.gate.reviewer.is_some());
        let gate = Arc::new(self.gate);
        let code_audit = gate.audit.clone();
        // The sandbox, inside the resilience layers, inside the embedder's.
        let mut dispatch: DispatchService = crate::call::resilience::wrap(
            PluginDispatch::new(
                engine.clone(),
                gate.clone(),
                instances.clone(),
                self.resolver.clone(),
                (evidence.clone(), recordings.clone()),
            ),
            gate.audit.clone(),
            quotas.clone(),
            self.clock.clone(),
        );
        for layer in self.layers.iter().rev() {
            dispatch = layer(dispatch);
        }
        let (changes, _) = watch::channel(catalog.generation());
        let host = Host {
            inner: Arc::new(HostInner {
                env: CallEnv {
                    limits: self.limits,
                    plan_limits: self.plan_limits,
                    gate,
                    required: self.required,
                    context: self.context,
                    dispatch,
                    health: Default::default(),
                    loops: Default::default(),
                    code: Arc::new(crate::call::code::CodeEnv::new(
                        engine.clone(),
                        self.cache.clone(),
                        self.code_limits,
                        code_audit,
                    )),
                },
                engine,
                linker,
                cache: self.cache,
                plugin_dir: self.plugin_dir,
                policy_dir: self.policy_dir,
                load_limits,
                slots: self.pool.max_concurrent_instances as usize,
                instances,
                catalog: RwLock::new(Arc::new(catalog)),
                reloading: tokio::sync::Mutex::new(()),
                changes,
                discovery,
                states,
                secrets: self.secrets,
                reloads: watch::channel(0).0,
                trust: self.trust,
                quotas,
                evidence,
                recordings,
            }),
        };
        host.compile_pending_in_background();
        Ok(host)
    }
}
