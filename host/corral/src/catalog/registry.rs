//! The [`Registry`]: every tool a catalog serves, by name, each a [`Tool`]
//! with its validated spec, its compiled argument validator and what runs it
//! (a plugin, a pipeline or a built-in). The resolver fills it; the call path
//! reads it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::call::compose::pipeline::Pipeline;
use crate::catalog::state::ToolState;
use crate::loader::plugin::Plugin;
use crate::model::spec::ToolSpec;
use corral_sandbox::Limits;

/// A spec that passed every resolver rule, with its compiled schemas.
#[derive(Debug)]
pub(crate) struct Checked {
    pub spec: ToolSpec,
    pub validator: jsonschema::Validator,
    /// The result schema's validator, when the tool declares one.
    pub output: Option<jsonschema::Validator>,
}

/// One resolved tool: its spec, the plugin that provides it (none for a
/// built-in such as `execute_tool_plan`), and the compiled validator for its
/// arguments.
pub struct Tool {
    spec: ToolSpec,
    provider: Provider,
    validator: jsonschema::Validator,
    /// Validates successful results, when the tool declares an output schema.
    output: Option<jsonschema::Validator>,
    /// Runtime state (caches, limiters, circuit, health window, serial
    /// lock) and the effective resilience settings it was built for.
    state: Arc<ToolState>,
    /// Whether calls pass the declared approval gate, decided once when the
    /// catalog is built ([`approval::requires_approval`](crate::call::approval::requires_approval)).
    gated: bool,
    /// A plugin tool's limits before any per-call override
    /// ([`limits::effective`](corral_sandbox::effective)), checked against the
    /// pool when the catalog is built; `None` for pipelines and built-ins.
    limits: Option<Limits>,
}

/// What runs when a tool is called.
pub(crate) enum Provider {
    /// A plugin's component.
    Plugin(Arc<Plugin>),
    /// A tool built into corral.
    Builtin(Builtin),
    /// A pipeline from `pipelines.json`.
    Pipeline(Arc<Pipeline>),
}

/// Which built-in tool (their names are [`RESERVED_NAMES`](crate::model::names::RESERVED_NAMES)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    /// `execute_tool_plan`.
    Plan,
    /// `tool_search`.
    Search,
    /// `execute_code`.
    Code,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.spec.name)
            .field("plugin", &self.plugin().map(|p| p.path()))
            .finish()
    }
}

impl Tool {
    /// A resolved tool; the name in `spec` is what models see, the guest
    /// name in `facts.state` what the guest receives.
    pub(crate) fn new(checked: Checked, provider: Provider, facts: Facts) -> Self {
        Self {
            spec: checked.spec,
            provider,
            validator: checked.validator,
            output: checked.output,
            state: facts.state,
            gated: facts.gated,
            limits: facts.limits,
        }
    }

    /// The tool's effective resilience configuration (retry, circuit
    /// breaker, rate limits, cache, health thresholds, audit).
    pub fn resilience(&self) -> &crate::config::resilience::ToolResilience {
        &self.state.identity().resilience
    }

    /// Whether calls of the tool pass the declared approval gate: its spec
    /// or policy asks for approval, or the host's configuration does
    /// ([`approval::requires_approval`](crate::call::approval::requires_approval),
    /// decided once when the catalog was built).
    pub fn requires_approval(&self) -> bool {
        self.gated
    }

    /// Whether a call of the tool may change anything outside its sandbox:
    /// its plugin's policy grants a writable directory or outbound HTTP.
    /// Pipelines and built-in tools count as yes (their steps may). MCP's
    /// `readOnlyHint` and [`safe_to_rerun`](Self::safe_to_rerun) read it.
    pub fn reaches_outside(&self) -> bool {
        match self.plugin() {
            Some(plugin) => {
                let policy = plugin.policy();
                policy.filesystem.iter().any(|d| d.writable) || !policy.http_allow.is_empty()
            }
            None => true,
        }
    }

    /// What the tool's guest may ask its MCP client (its plugin's
    /// `[client]`); nothing for a pipeline or a built-in.
    pub fn client_grants(&self) -> corral_sandbox::ClientGrants {
        self.plugin()
            .map(|plugin| plugin.policy().client)
            .unwrap_or_default()
    }

    /// Whether the tool cannot work without its client's sampling (its
    /// plugin's `[client] sampling.required_by` names it): an MCP client
    /// that cannot sample is refused before the call.
    pub fn requires_sampling(&self) -> bool {
        self.plugin().is_some_and(|plugin| {
            plugin
                .policy()
                .sampling_required_by
                .contains(self.guest_name())
        })
    }

    /// Whether running a call of the tool again, after a run that was cut
    /// short, repeats nothing that matters: the tool is idempotent (its
    /// metadata), or it cannot change anything outside its sandbox
    /// ([`reaches_outside`](Self::reaches_outside)). A deferred review of a
    /// guest's mid-call `request-approval` abandons the run and answers on a
    /// retry, which is allowed only for such tools
    /// ([`ApprovalDecision::Defer`](crate::ApprovalDecision::Defer)).
    pub fn safe_to_rerun(&self) -> bool {
        self.spec.metadata.idempotent || !self.reaches_outside()
    }

    /// The limits a call of this plugin tool runs under before any per-call
    /// override: the host's defaults with the plugin's policy applied
    /// ([`limits::effective`](corral_sandbox::effective)), computed once
    /// when the catalog was built. `None` for a pipeline or a built-in,
    /// whose steps each have their own.
    pub fn limits(&self) -> Option<&Limits> {
        self.limits.as_ref()
    }

    /// When a call of the tool becomes an MCP task (SEP-2663): its plugin's
    /// `[tasks]` mode for it ([`TaskMode`](crate::TaskMode)), `when_slow`
    /// for pipelines and built-ins.
    pub fn task_mode(&self) -> crate::TaskMode {
        self.plugin().map_or(crate::TaskMode::WhenSlow, |p| {
            p.policy().tasks.mode_of(self.guest_name())
        })
    }

    /// Whether a call of the tool becomes an MCP task for a client that
    /// takes them: modes `required`, `always` and `after_input` (after its
    /// first call's input, see [`TaskMode::AfterInput`](crate::TaskMode::AfterInput));
    /// under `when_slow`, a tool
    /// whose latency is `slow`, `execute_tool_plan`, `execute_code` and
    /// pipelines (their steps add up), and a deadline over
    /// [`SLOW_DEADLINE`](crate::SLOW_DEADLINE).
    pub fn prefers_task(&self) -> bool {
        use crate::TaskMode;
        match self.task_mode() {
            TaskMode::Required | TaskMode::Always | TaskMode::AfterInput => true,
            TaskMode::Never => false,
            _ => {
                self.spec.metadata.latency == corral_sandbox::Latency::Slow
                    || matches!(
                        self.provider,
                        Provider::Builtin(Builtin::Plan | Builtin::Code) | Provider::Pipeline(_)
                    )
                    || self
                        .limits
                        .as_ref()
                        .is_some_and(|l| l.timeout() > crate::SLOW_DEADLINE)
            }
        }
    }

    /// The tool's runtime state.
    pub(crate) fn state(&self) -> &Arc<ToolState> {
        &self.state
    }

    /// The result schema's validator, when the tool declares one.
    pub(crate) fn output_validator(&self) -> Option<&jsonschema::Validator> {
        self.output.as_ref()
    }

    /// The validated spec.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The plugin that provides the tool; `None` for a built-in tool or a
    /// pipeline.
    pub fn plugin(&self) -> Option<&Plugin> {
        match &self.provider {
            Provider::Plugin(plugin) => Some(plugin),
            _ => None,
        }
    }

    /// The pipeline behind the tool, if it is one.
    pub fn pipeline(&self) -> Option<&Pipeline> {
        match &self.provider {
            Provider::Pipeline(pipeline) => Some(pipeline),
            _ => None,
        }
    }

    /// The name the plugin declares for this tool; differs from
    /// `spec().name` when the plugin's policy renames or prefixes it.
    pub fn guest_name(&self) -> &str {
        &self.state.identity().guest_name
    }

    /// Who provides the tool, for reviewers and the audit log: the plugin's
    /// file stem and sha256, `pipelines` for a pipeline, `corral` for a
    /// built-in (both with an empty sha256).
    pub fn provider_identity(&self) -> (&str, &str) {
        match &self.provider {
            Provider::Plugin(plugin) => (plugin.name(), plugin.sha256()),
            Provider::Pipeline(_) => ("pipelines", ""),
            Provider::Builtin(_) => ("corral", ""),
        }
    }

    pub(crate) fn provider(&self) -> &Provider {
        &self.provider
    }

    pub(crate) fn validator(&self) -> &jsonschema::Validator {
        &self.validator
    }

    /// Checks `arguments` against the tool's schema.
    ///
    /// # Errors
    /// Every violation, each as "`<json pointer>`: `<problem>`" (the root is shown
    /// as `(root)`).
    pub fn validate_arguments(&self, arguments: &Value) -> Result<(), Vec<String>> {
        crate::model::schema::problems(&self.validator, arguments)
    }
}

/// What the catalog decides once about a tool, beside its spec.
pub(crate) struct Facts {
    /// Its runtime state (which also holds its guest name and effective
    /// resilience settings).
    pub state: Arc<ToolState>,
    /// Whether it is gated.
    pub gated: bool,
    /// A plugin tool's effective limits.
    pub limits: Option<Limits>,
}

/// Every tool the host serves, by name.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    tools: BTreeMap<String, Arc<Tool>>,
}

impl Registry {
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }

    pub(crate) fn tools(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.tools.values()
    }

    /// Registers a built-in tool. Its name must be one of
    /// [`RESERVED_NAMES`](crate::model::names::RESERVED_NAMES), which no plugin can
    /// take.
    pub(crate) fn add_builtin(&mut self, spec: ToolSpec, builtin: Builtin, facts: Facts) {
        debug_assert!(crate::model::names::RESERVED_NAMES.contains(&spec.name.as_str()));
        let validator = jsonschema::validator_for(&spec.parameters)
            .expect("built-in tool schemas are valid JSON Schema");
        let checked = Checked {
            spec,
            validator,
            output: None,
        };
        let tool = Tool::new(checked, Provider::Builtin(builtin), facts);
        self.tools.insert(tool.spec.name.clone(), Arc::new(tool));
    }

    /// Removes every tool of the plugin at `path`.
    pub(crate) fn remove_plugin(&mut self, path: &std::path::Path) {
        self.tools
            .retain(|_, tool| tool.plugin().is_none_or(|p| p.path() != path));
    }

    /// Keeps only the tools `keep` accepts.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Tool) -> bool) {
        self.tools.retain(|_, tool| keep(tool));
    }

    /// The loaded name closest to `name`, for "did you mean" hints.
    pub(crate) fn suggest(&self, name: &str) -> Option<String> {
        crate::model::names::suggest(name, self.tools.keys().map(String::as_str))
    }

    /// Adds a resolved tool; the resolver has checked that the name is free.
    pub(crate) fn insert(&mut self, tool: Tool) {
        let previous = self.tools.insert(tool.spec.name.clone(), Arc::new(tool));
        debug_assert!(previous.is_none(), "the resolver checks names first");
    }
}
