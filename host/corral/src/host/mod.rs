//! [`Host`]: the embeddable entry point. It serves one [`Catalog`] at a time
//! (swapped whole on reload), lists the resolved tools, and runs every call
//! through the call pipeline ([`crate::call::stages`]), recording each one.

mod accounting;
mod builder;
mod builtins;
mod call;
mod clock;
pub(crate) mod error;
mod ledger;
mod loading;
mod startup;

pub use ledger::EVIDENCE_FLUSH;

use std::path::Path;
use std::sync::{Arc, RwLock};

use serde_json::Value;
use tokio::sync::watch;
use wasmtime::component::Linker;

pub use builder::HostBuilder;

use crate::call::CallOptions;
use crate::call::compose::plan::{PLAN_TOOL, Plan};
use crate::call::compose::{CallFuture, Caller};
use crate::call::stages::CallEnv;
use crate::catalog::registry::Tool;
use crate::catalog::{self, Catalog, ReloadReport};
use crate::config::context::ContextPolicy;
use crate::host::error::HostError;
use crate::loader::error::LoadError;
use crate::loader::{LoadContext, LoadLimits};
use crate::model::spec::ToolSpec;
use corral_sandbox::CallError;
use corral_sandbox::ComponentCache;
use corral_sandbox::Engine;
use corral_sandbox::Limits;
use corral_sandbox::SandboxState;

/// A loaded set of sandboxed tools.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use corral::{CallOptions, Host};
/// let host = Host::builder().plugin_dir("plugins").build().await?;
/// let out = host
///     .call("word_count", r#"{"text": "one two"}"#, &CallOptions::default())
///     .await?;
/// assert_eq!(out.json().unwrap()["words"], 2);
/// # Ok(()) }
/// ```
///
/// `Host` is `Send + Sync` and cheap to clone (clones share everything); call
/// it from many tasks at once. At most
/// [`PoolConfig::max_concurrent_instances`](crate::PoolConfig::max_concurrent_instances)
/// calls run at once; the rest wait for a slot.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

struct HostInner {
    env: CallEnv,
    engine: Engine,
    linker: Arc<Linker<SandboxState>>,
    cache: ComponentCache,
    plugin_dir: Option<std::path::PathBuf>,
    policy_dir: Option<std::path::PathBuf>,
    load_limits: LoadLimits,
    /// How many instances the pool holds at once.
    slots: usize,
    /// The instance pool's slots (calls and `describe` at load share them)
    /// and the instances made ahead of calls.
    instances: corral_sandbox::Instances,
    catalog: RwLock<Arc<Catalog>>,
    /// Reloads run one at a time.
    reloading: tokio::sync::Mutex<()>,
    /// The generation of the catalog whenever the tool set changes.
    changes: watch::Sender<u64>,
    /// `tool_search`, groups and the selection, for every reload.
    discovery: crate::catalog::discovery::Discovery,
    /// Counts the per-tool runtime states alive.
    states: crate::catalog::state::StateCount,
    /// Where `[[http.credentials]]` find their secrets, on every load.
    secrets: Option<crate::config::secrets::SecretStore>,
    /// Counts finished reloads (whatever they changed): what a call waiting
    /// for a pending plugin wakes on.
    reloads: watch::Sender<u64>,
    /// The signature requirement, on every load.
    trust: crate::loader::signature::Trust,
    /// Tenant quotas: the host's rules and every tenant's buckets (the
    /// quota layer holds the same `Arc`).
    pub(super) quotas: Arc<crate::call::quota::Quotas>,
    /// What each tool attempted (the dispatch stage holds the same `Arc`).
    pub(super) evidence: Arc<crate::evidence::EvidenceBook>,
    /// Where recorded runs go; the update gate replays them on reload.
    pub(super) recordings: Option<Arc<crate::replay::Recordings>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let catalog = self.catalog();
        f.debug_struct("Host")
            .field("plugin_dir", &self.inner.plugin_dir)
            .field("tools", &catalog.tools().count())
            .field("load_errors", &catalog.load_errors().len())
            .field("limits", &self.inner.env.limits)
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
        let loaded = catalog::load(
            &LoadContext {
                engine: &self.inner.engine,
                linker: &self.inner.linker,
                cache: &self.inner.cache,
                plugin_dir: self.inner.plugin_dir.as_deref(),
                policy_dir: self.inner.policy_dir.as_deref(),
                limits: self.inner.load_limits,
                permits: self.inner.instances.permits(),
                secrets: self.inner.secrets.as_ref(),
                defer_uncached: false,
                trust: &self.inner.trust,
                gate: self.inner.recordings.as_deref(),
            },
            &catalog::CatalogInputs {
                discovery: &self.inner.discovery,
                required: &self.inner.env.required,
                states: &self.inner.states,
            },
            Some(&previous),
        )
        .await;
        let (next, kept) = match loaded {
            Ok(loaded) => loaded,
            Err(err) => {
                // Waiters for pending plugins look again, and give up.
                self.inner.reloads.send_modify(|n| *n += 1);
                return Err(err);
            }
        };
        let report = catalog::diff(&previous, &next, kept);
        let next = Arc::new(next);
        *self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = next.clone();
        // No later call takes an instance made ahead for a replaced plugin.
        let served: std::collections::HashSet<usize> = next
            .tools()
            .filter_map(|tool| match tool.provider() {
                crate::catalog::registry::Provider::Plugin(plugin) => {
                    Some(Arc::as_ptr(plugin) as usize)
                }
                _ => None,
            })
            .collect();
        self.inner.instances.retain(|blueprint| {
            served.contains(&(std::ptr::from_ref(blueprint).cast::<()>() as usize))
        });
        self.inner.reloads.send_modify(|n| *n += 1);
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
    /// plugin, a policy, `pipelines.json` or `groups.toml` changes, until the returned
    /// [`Watcher`](crate::Watcher) is dropped. Call it inside a tokio
    /// runtime.
    ///
    /// # Errors
    /// [`HostError::Watch`] without a plugin directory or when it cannot be
    /// watched.
    pub fn watch(&self) -> Result<crate::catalog::watch::Watcher, HostError> {
        let dir = self
            .plugin_dir()
            .ok_or_else(|| HostError::Watch("the host has no plugin directory to watch".into()))?
            .to_path_buf();
        let host = self.clone();
        let policy_dir = self.inner.policy_dir.clone();
        crate::catalog::watch::start(dir, policy_dir, move || {
            let host = host.clone();
            async move {
                match host.reload().await {
                    Ok(report) => tracing::debug!(generation = report.generation, "reloaded"),
                    Err(err) => {
                        tracing::error!("reload failed, still serving the last catalog: {err}");
                    }
                }
            }
        })
    }

    /// The engine and the pool's slots, for a run outside the call path
    /// (a replay, `corral::replay`).
    pub(crate) fn sandbox_parts(&self) -> (&Engine, &Arc<tokio::sync::Semaphore>) {
        (&self.inner.engine, self.inner.instances.permits())
    }

    /// The pool's instances made ahead of calls: counts since the host was
    /// built (README, "Instances made ahead"; the same figures as the
    /// `corral_instances_*` and `corral_prepare_*` metrics).
    pub fn prepared_stats(&self) -> crate::PreparedStats {
        self.inner.instances.stats()
    }

    /// The plugin directory, if the host has one.
    pub fn plugin_dir(&self) -> Option<&Path> {
        self.inner.plugin_dir.as_deref()
    }

    /// The directory policies are read from, when it is not the plugin
    /// directory ([`HostBuilder::policy_dir`](crate::HostBuilder::policy_dir)).
    pub fn policy_dir(&self) -> Option<&Path> {
        self.inner.policy_dir.as_deref()
    }

    /// What the component file at `path` is and offers, without running any
    /// of its code: its world, its imports and whether corral provides
    /// them, and for a component of another world the tools it would expose
    /// and the exports that are not tools ([`Inspection`](crate::Inspection)).
    /// Compiles it with this host's engine and cache; serves nothing.
    ///
    /// # Errors
    /// A [`LoadError`](crate::LoadError) when it is not a component, does not
    /// compile, or its WIT cannot be decoded.
    pub fn inspect(&self, path: &std::path::Path) -> Result<crate::Inspection, crate::LoadError> {
        crate::loader::inspect::inspect(
            &self.inner.engine,
            &self.inner.linker,
            &self.inner.cache,
            path,
            self.inner.load_limits.max_plugin_bytes,
        )
    }

    /// The default limits of every call (before each plugin's policy).
    pub fn limits(&self) -> &Limits {
        &self.inner.env.limits
    }

    /// The limits calls of `tool` run under before any per-call override:
    /// the host's defaults with its plugin's policy applied
    /// ([`limits::effective`](corral_sandbox::effective)). `None` for an
    /// unknown tool, a pipeline or a built-in, whose steps each have their
    /// own.
    pub fn tool_limits(&self, tool: &str) -> Option<Limits> {
        self.tool(tool)?.limits().copied()
    }

    /// Whether calls of `tool` pass the declared approval gate
    /// ([`Tool::requires_approval`], decided when the catalog was built by
    /// [`approval::requires_approval`](crate::call::approval::requires_approval),
    /// the one rule); `false` for an
    /// unknown tool.
    pub fn requires_approval(&self, tool: &str) -> bool {
        self.tool(tool).is_some_and(|t| t.requires_approval())
    }

    /// Whether the host can decide the declared approval gate of `tool` on
    /// its own: a reviewer is configured ([`HostBuilder::reviewer`]), or a
    /// standing approval covers the tool's current build. When it cannot, a
    /// gated call needs the caller's reviewer (an MCP client's user through
    /// elicitation) or fails with a configuration error.
    pub fn decides_gate(&self, tool: &Tool) -> bool {
        let gate = &self.inner.env.gate;
        let (_, sha256) = tool.provider_identity();
        gate.reviewer.is_some() || gate.standing.allows(&tool.spec().name, sha256)
    }

    /// The context policy of the plugin named `plugin`: the host
    /// configuration's ([`HostBuilder::context_policy`]) if set, else the
    /// plugin's policy file's `[context]`, else the host default.
    pub fn context_policy(&self, plugin: &str) -> ContextPolicy {
        let catalog = self.catalog();
        let from_file = catalog
            .tools()
            .filter_map(|t| t.plugin())
            .find(|p| p.name() == plugin)
            .and_then(|p| p.policy().context.as_ref());
        self.inner.env.context.policy_for(plugin, from_file).clone()
    }

    /// The tool manifest (TnsAI, docs/references.md): every tool with its spec,
    /// metadata, resilience, security, dependencies, provider, limits and
    /// grants, as JSON valid against [`MANIFEST_SCHEMA`](crate::MANIFEST_SCHEMA).
    pub fn manifest(&self) -> Value {
        let catalog = self.catalog();
        crate::catalog::manifest::build(&catalog)
    }

    /// The `depends-on` graph of the current catalog's tools.
    pub fn tool_graph(&self) -> crate::catalog::depgraph::ToolGraph {
        self.catalog().tool_graph().clone()
    }

    /// Every tool's health (see [`HealthReport`](crate::HealthReport)), from
    /// its recent calls in this process.
    pub fn health(&self) -> crate::call::health::HealthReport {
        let catalog = self.catalog();
        self.inner.env.health.report(
            catalog
                .tools()
                .map(|t| (t.spec().name.as_str(), &t.state().health)),
        )
    }

    /// The health of one tool, `None` for an unknown tool.
    pub fn health_of(&self, tool: &str) -> Option<crate::call::health::ToolHealth> {
        let tool = self.tool(tool)?;
        Some(tool.state().health.of(&tool.spec().name))
    }

    /// The runtime state the host holds now (see
    /// [`RuntimeStats`](crate::RuntimeStats)): per-tool states alive, cached
    /// results and per-tenant rate-limit budgets. A removed plugin's tool
    /// states stop counting once no catalog or call in flight holds them.
    pub fn runtime_stats(&self) -> crate::catalog::state::RuntimeStats {
        let catalog = self.catalog();
        let (mut cached_results, mut tenant_budgets) = (0, 0);
        let mut limiters_seen = std::collections::BTreeSet::new();
        for tool in catalog.tools() {
            let state = tool.state();
            let (entries, tenants) = state.usage();
            cached_results += entries;
            tenant_budgets += tenants;
            // A plugin-wide limiter is shared: count its tenants once.
            if let Some(shared) = state.plugin_limiter()
                && limiters_seen.insert(Arc::as_ptr(shared) as usize)
            {
                tenant_budgets += shared.tenants();
            }
        }
        crate::catalog::state::RuntimeStats {
            tool_states: self.inner.states.get(),
            cached_results,
            tenant_budgets,
            instances_in_use: self.inner.slots.saturating_sub(
                self.inner.instances.permits().available_permits() + self.inner.instances.held(),
            ),
            instances_ready: self.inner.instances.stats().ready,
            change_subscribers: self.inner.changes.receiver_count(),
        }
    }

    /// A receiver that changes whenever a tool goes `DOWN` or recovers from
    /// it, e.g. to send MCP's `notifications/tools/list_changed` (a `DOWN`
    /// tool's description gains a note).
    pub fn subscribe_health(&self) -> watch::Receiver<u64> {
        self.inner.env.health.subscribe()
    }

    /// Validates plan JSON text against the plan rules and the loaded tools.
    ///
    /// # Errors
    /// [`PlanError`](crate::PlanError) as [`CallError::InvalidArguments`]
    /// naming each problem.
    pub fn validate_plan(&self, plan: &str) -> Result<Plan, CallError> {
        let catalog = self.catalog();
        Plan::parse(plan, &self.inner.env.plan_limits, |t| {
            catalog.tool(t).is_some()
        })
        .map_err(|err| CallError::InvalidArguments {
            tool: PLAN_TOOL.to_string(),
            problems: err.problems,
            code: None,
        })
    }
}

/// Plans and pipelines call their steps through the host: each step takes
/// the whole call path, [`Host::call_value`].
impl Caller for Host {
    fn call_value<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        options: &'a CallOptions,
    ) -> CallFuture<'a> {
        Box::pin(Host::call_value(self, tool, arguments, options))
    }
}
