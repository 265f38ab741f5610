//! The [`Catalog`]: one loaded state of the plugin directory (resolved tools,
//! load errors, the plugins behind them), and how a new one is built from the
//! directory and the previous one.
//!
//! A host serves one catalog at a time and replaces it whole on reload
//! ([`Host::reload`](crate::Host::reload)): each call takes the current catalog
//! when it starts and finishes on it, so a reload never changes a call in
//! flight. Building a catalog happens off the serving path; unchanged plugins
//! (same bytes, same policy text) are reused without compiling or describing
//! them again, and a plugin whose new file or policy fails to load or to
//! resolve keeps its previous version.
//!
//! Duplicate names: at startup the first file in file-name order keeps a
//! name. On reload, plugins served unchanged come first, so a new or changed
//! plugin that claims a name a working plugin serves is the one refused (a
//! changed one keeps serving its previous version).
//!
//! The catalog layer, the second half of loading (the loader's
//! [`Described`] plugins in, a servable catalog out): the [`resolver`]
//! names and checks the tools, the [`registry`] maps names to tools, each
//! with its runtime [`state`], the [`depgraph`] orders their `depends-on`,
//! [`discovery`] selects and presents them, the [`manifest`] reports them,
//! and [`watch`] tells the host when the directory changed.

pub(crate) mod depgraph;
pub(crate) mod discovery;
pub(crate) mod manifest;
pub(crate) mod registry;
pub(crate) mod resolver;
pub(crate) mod state;
pub(crate) mod watch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::call::compose::pipeline;
use crate::call::compose::plan::{PLAN_TOOL, Plan};
use crate::catalog::depgraph::ToolGraph;
use crate::catalog::discovery::ToolGroup;
use crate::catalog::registry::{Builtin, Registry, Tool};
use crate::host::error::HostError;
use crate::loader::error::LoadError;
use crate::loader::{self, Described, LoadContext};
use crate::model::spec::ToolSpec;
use corral_sandbox::ToolMetadata;
use resolver::ResolveEnv;

/// The tools a host serves at one moment.
#[derive(Debug)]
pub struct Catalog {
    generation: u64,
    pub(crate) registry: Registry,
    load_errors: Vec<LoadError>,
    plugins: BTreeMap<PathBuf, Described>,
    graph: ToolGraph,
    groups: Vec<ToolGroup>,
    facades: crate::catalog::discovery::Facades,
    /// `tool_search`'s ranking index, built on its first free-text query.
    search_index: std::sync::OnceLock<crate::catalog::discovery::rank::Index>,
    /// Plugin files not loaded yet: not in the component cache when the host
    /// started serving before compiling; the next load compiles them.
    pending: Vec<PathBuf>,
}

impl Catalog {
    /// Plugin files this catalog does not serve yet because they were still
    /// to be compiled ([`HostBuilder::serve_while_compiling`](crate::HostBuilder::serve_while_compiling)),
    /// sorted; empty once a load compiled them.
    pub fn pending(&self) -> &[PathBuf] {
        &self.pending
    }

    /// The facades of progressive disclosure over this catalog's tools
    /// (empty unless the host enables it,
    /// [`HostBuilder::disclosure`](crate::HostBuilder::disclosure)).
    pub fn facades(&self) -> &crate::catalog::discovery::Facades {
        &self.facades
    }

    /// The ranking index of `tool_search` over this catalog's tools (all
    /// but `tool_search` itself), built once, on first use.
    pub(crate) fn search_index(&self) -> &crate::catalog::discovery::rank::Index {
        self.search_index.get_or_init(|| {
            let tools: Vec<&Tool> = self
                .tools()
                .map(AsRef::as_ref)
                .filter(|t| t.spec().name != crate::model::names::SEARCH_TOOL)
                .collect();
            crate::catalog::discovery::rank::Index::new(&tools)
        })
    }

    /// Starts at 1 and grows by one with every reload.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The `depends-on` graph of the tools (acyclic: a plugin that would
    /// close a cycle does not load).
    pub fn tool_graph(&self) -> &ToolGraph {
        &self.graph
    }

    /// Every tool, sorted by name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.registry.tools()
    }

    /// Every tool's spec, sorted by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.registry.tools().map(|t| t.spec())
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Arc<Tool>> {
        self.registry.get(name)
    }

    /// The version of the plugin at `path` that serves at least one tool of
    /// this catalog, if any.
    fn served_version(&self, path: &Path) -> Option<Described> {
        let described = self.plugins.get(path)?;
        self.registry
            .tools()
            .any(|t| t.plugin().is_some_and(|p| std::ptr::eq(p, &*described.0)))
            .then(|| described.clone())
    }

    /// The tool groups of `groups.toml` that loaded, sorted by name, each
    /// with its tools in this catalog.
    pub fn groups(&self) -> &[ToolGroup] {
        &self.groups
    }

    /// The files that failed to load, with reasons, sorted by path. A file
    /// listed here may still be served in its previous version (see
    /// [`ReloadReport::kept`]).
    pub fn load_errors(&self) -> &[LoadError] {
        &self.load_errors
    }
}

/// What a reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadReport {
    /// The new catalog's generation.
    pub generation: u64,
    /// Tool names served now and not before, sorted.
    pub added: Vec<String>,
    /// Tool names served before and not now, sorted.
    pub removed: Vec<String>,
    /// Tool names served before and now whose spec, plugin build or policy
    /// changed, sorted.
    pub updated: Vec<String>,
    /// Plugin files whose new content failed to load and whose previous
    /// version is still served.
    pub kept: Vec<PathBuf>,
    /// Every load error of the new catalog.
    pub errors: Vec<LoadError>,
}

impl ReloadReport {
    /// Whether the tool set a client sees (names, descriptions, schemas,
    /// metadata) changed: when to send MCP's
    /// `notifications/tools/list_changed`.
    pub fn tools_changed(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.updated.is_empty())
    }
}

/// What building a catalog needs beyond loading its plugins.
pub(crate) struct CatalogInputs<'a> {
    /// `tool_search`, tool groups and the selection of served tools.
    pub discovery: &'a crate::catalog::discovery::Discovery,
    /// Tools the host's configuration gates (the `approval-gated`
    /// permission of tool groups asks the one gate rule with them).
    pub required: &'a std::collections::BTreeSet<String>,
    /// Counts the per-tool runtime states alive.
    pub states: &'a crate::catalog::state::StateCount,
}

/// Builds the next catalog from the plugin directory: loads its plugins
/// (`ctx`), then resolves, selects and indexes their tools (`inputs`).
///
/// # Errors
/// [`HostError::PluginDir`] when the directory cannot be listed.
pub(crate) async fn load(
    ctx: &LoadContext<'_>,
    inputs: &CatalogInputs<'_>,
    previous: Option<&Catalog>,
) -> Result<(Catalog, Vec<PathBuf>), HostError> {
    let started = Instant::now();
    let files = match ctx.plugin_dir {
        Some(dir) => crate::loader::plugin_files(dir)?,
        None => Vec::new(),
    };
    let empty = BTreeMap::new();
    let before = previous.map_or(&empty, |c| &c.plugins);
    let loader::Loaded {
        mut described,
        errors: mut load_errors,
        deferred: pending,
    } = loader::load_files(ctx, files.clone(), before).await;
    // A file that is half-written or invalid never replaces a working version.
    let served = |path: &Path| previous.and_then(|c| c.served_version(path));
    let mut kept = Vec::new();
    let mut kept_errors = Vec::new();
    // The update gate: a new build that changes recorded outputs waits.
    for slot in described.iter_mut() {
        let (Some(recordings), Some(old)) = (ctx.gate, served(slot.0.path())) else {
            continue;
        };
        let held =
            crate::replay::gate_update(recordings, ctx.engine, ctx.permits, &old.0, &slot.0).await;
        if let Some(reason) = held {
            let path = slot.0.path().to_path_buf();
            *slot = old;
            kept.push(path.clone());
            kept_errors.push(crate::LoadError { path, reason });
        }
    }
    load_errors.retain(|err| match served(&err.path) {
        Some(old) if files.contains(&err.path) => {
            described.push(old);
            kept.push(err.path.clone());
            kept_errors.push(err.clone());
            false
        }
        _ => true,
    });
    described.sort_by(|a, b| a.0.path().cmp(b.0.path()));

    // Resolve. A new or changed plugin that fails here (a policy naming a
    // tool it lacks, a name another plugin already serves) also falls back to
    // the version being served, and plugins served unchanged come first, so a
    // newcomer can never take a name away from a working tool.
    let env = ResolveEnv {
        previous: previous.map(|c| &c.registry),
        switches: &ctx.limits.switches,
        required: inputs.required,
        limits: &ctx.limits.call,
        pool: &ctx.limits.pool,
        states: inputs.states,
    };
    let (mut registry, resolve_errors) = loop {
        let mut ordered = described.clone();
        ordered.sort_by_key(|d| !served(d.0.path()).is_some_and(|old| Arc::ptr_eq(&old.0, &d.0)));
        let (registry, errors) = resolver::resolve(ordered, &env);
        let mut reverted = false;
        for err in &errors {
            let Some(old) = served(&err.path) else {
                continue;
            };
            if let Some(slot) = described.iter_mut().find(|d| d.0.path() == err.path)
                && !Arc::ptr_eq(&slot.0, &old.0)
            {
                *slot = old;
                kept.push(err.path.clone());
                kept_errors.push(err.clone());
                reverted = true;
            }
        }
        if !reverted {
            break (registry, errors);
        }
    };
    let plugins: BTreeMap<PathBuf, Described> = described
        .iter()
        .map(|d| (d.0.path().to_path_buf(), d.clone()))
        .collect();
    for err in &kept_errors {
        let sha256 = plugins.get(&err.path).map_or("?", |d| d.0.sha256());
        tracing::error!("{err}; still serving the version with sha256 {sha256}");
    }
    load_errors.extend(resolve_errors);
    let plan = plan_tool_spec();
    let facts = env.facts_of_own(&plan);
    registry.add_builtin(plan, Builtin::Plan, facts);
    let code = code_tool_spec();
    let facts = env.facts_of_own(&code);
    registry.add_builtin(code, Builtin::Code, facts);
    if inputs.discovery.tool_search {
        let search = crate::catalog::discovery::search::spec();
        let facts = env.facts_of_own(&search);
        registry.add_builtin(search, Builtin::Search, facts);
    }
    if let Some(dir) = ctx.plugin_dir {
        match pipeline::read(dir) {
            Ok(pipelines) => {
                let path = dir.join(pipeline::PIPELINES_FILE);
                load_errors.extend(resolver::add_pipelines(
                    &mut registry,
                    &path,
                    pipelines,
                    &ctx.limits.caps,
                    &env,
                ));
            }
            Err(err) => load_errors.push(err),
        }
    }
    let (groups, group_errors) = crate::catalog::discovery::groups::apply(
        ctx.plugin_dir,
        &mut registry,
        &inputs.discovery.selection,
    );
    load_errors.extend(group_errors);
    // `execute_code` describes the tools a script can call: those served
    // now that groups and excludes have chosen them.
    if registry.get(crate::call::code::CODE_TOOL).is_some() {
        let mut code = code_tool_spec();
        code.description = crate::call::code::description(registry.tools().map(|tool| tool.spec()));
        let facts = env.facts_of_own(&code);
        registry.add_builtin(code, Builtin::Code, facts);
    }
    let graph = reject_cycles(&mut registry, &mut load_errors);
    let (facades, facade_errors) = crate::catalog::discovery::disclosure::build(
        inputs.discovery.disclosure,
        ctx.plugin_dir,
        &registry,
    );
    load_errors.extend(facade_errors);
    for err in &load_errors {
        // One line each: a reason may quote a guest's output.
        tracing::error!(
            "plugin not loaded: {}",
            corral_names::text::escape_line(&err.to_string())
        );
    }
    load_errors.extend(kept_errors);
    load_errors.sort_by(|a, b| a.path.cmp(&b.path));
    kept.sort();
    let generation = previous.map_or(1, |c| c.generation + 1);
    tracing::info!(
        generation,
        tools = registry.tools().count(),
        failed = load_errors.len(),
        ms = started.elapsed().as_millis() as u64,
        "plugins loaded"
    );
    for tool in registry.tools() {
        tracing::trace!(
            spec = %serde_json::to_string(tool.spec()).unwrap_or_default(),
            "tool spec"
        );
    }
    Ok((
        Catalog {
            generation,
            registry,
            load_errors,
            plugins,
            graph,
            groups,
            facades,
            search_index: std::sync::OnceLock::new(),
            pending,
        },
        kept,
    ))
}

/// Compares two catalogs tool by tool.
pub(crate) fn diff(old: &Catalog, new: &Catalog, kept: Vec<PathBuf>) -> ReloadReport {
    let mut report = ReloadReport {
        generation: new.generation,
        kept,
        errors: new.load_errors.clone(),
        ..ReloadReport::default()
    };
    for tool in new.tools() {
        match old.tool(&tool.spec().name) {
            None => report.added.push(tool.spec().name.clone()),
            Some(before) => {
                let build = |t: &Tool| {
                    t.plugin()
                        .map(|p| (p.sha256().to_string(), p.policy().clone()))
                };
                if before.spec() != tool.spec() || build(before) != build(tool) {
                    report.updated.push(tool.spec().name.clone());
                }
            }
        }
    }
    for tool in old.tools() {
        if new.tool(&tool.spec().name).is_none() {
            report.removed.push(tool.spec().name.clone());
        }
    }
    report
}

/// Refuses dependency cycles: while the tools' `depends-on` graph has one,
/// the plugin (last in file order) with a tool in it fails to load. Returns
/// the acyclic graph.
fn reject_cycles(registry: &mut Registry, errors: &mut Vec<LoadError>) -> ToolGraph {
    loop {
        let graph = ToolGraph::from_specs(registry.tools().map(|t| t.spec()));
        let Some(cycle) = graph.cycles().into_iter().next() else {
            for (tool, dependency) in graph.missing() {
                tracing::warn!(tool, dependency, "depends on a tool that is not loaded");
            }
            return graph;
        };
        let culprit = cycle
            .iter()
            .filter_map(|name| registry.get(name))
            .filter_map(|tool| tool.plugin().map(|p| p.path().to_path_buf()))
            .max();
        let Some(path) = culprit else {
            return graph;
        };
        registry.remove_plugin(&path);
        errors.push(LoadError {
            path,
            reason: crate::loader::error::LoadErrorReason::DependencyCycle { cycle },
        });
    }
}

/// The built-in `execute_code` spec.
fn code_tool_spec() -> ToolSpec {
    let mut metadata = ToolMetadata::new("builtin");
    metadata.keywords = vec!["code".into(), "script".into(), "javascript".into()];
    metadata.version = env!("CARGO_PKG_VERSION").into();
    ToolSpec {
        name: crate::call::code::CODE_TOOL.to_string(),
        description: crate::call::code::DESCRIPTION.to_string(),
        parameters: crate::call::code::schema(),
        output_schema: None,
        metadata,
    }
}

/// The built-in `execute_tool_plan` spec.
fn plan_tool_spec() -> ToolSpec {
    let mut metadata = ToolMetadata::new("builtin");
    metadata.keywords = vec!["plan".into(), "batch".into(), "parallel".into()];
    metadata.version = env!("CARGO_PKG_VERSION").into();
    ToolSpec {
        name: PLAN_TOOL.to_string(),
        description: Plan::DESCRIPTION.to_string(),
        parameters: Plan::schema(),
        output_schema: None,
        metadata,
    }
}
