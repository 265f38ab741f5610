//! The resolver: validates every spec a plugin describes, applies the
//! plugin's policy presentation, compiles its argument schema once, and names
//! each tool exactly once across all plugins.
//!
//! Rules (AgentEnsemble's tool interface and edge-case table, plus MCP's
//! requirement that an input schema describes an object):
//! - a name follows [`names::check_name`](crate::model::names::check_name);
//! - a description is non-empty;
//! - no text of the spec (description, category, keywords, version, any
//!   string in the schema) holds a control character other than newline and
//!   tab, or a bidi control ([`crate::text`]);
//! - the description and schema fit the plugin's [`DescribeCaps`];
//! - `parameters` follows the schema rules of [`crate::model::schema`];
//! - one plugin may not describe the same name twice, and two plugins may not
//!   provide the same name: the plugin resolved later fails to load with an
//!   error naming both files. At startup plugins resolve in file-name order; on
//!   reload the plugins served unchanged resolve first (see
//!   [`catalog`](crate::catalog)), so a newcomer never takes a working name.
//!
//! A plugin with any invalid spec fails to load as a whole, so that no plugin is
//! ever served half-described.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::call::compose::pipeline::Pipeline;
use crate::call::resilience::limiter::Limiter;
use crate::catalog::registry::{Checked, Facts, Provider, Registry, Tool};
use crate::catalog::state::{Identity, StateCount, ToolState, plugin_limiter};
use crate::config::caps::DescribeCaps;
use crate::config::policy::PolicyError;
use crate::config::resilience::{ResilienceSwitches, ToolResilience};
use crate::loader::error::{LoadError, LoadErrorReason};
use crate::loader::plugin::Plugin;
use crate::model::names::check_name;
use crate::model::spec::ToolSpec;
use corral_sandbox::RawSpec;
use corral_sandbox::{Limits, PoolConfig};

/// Validates one spec under `caps` and compiles its schemas.
pub(crate) fn check_spec(raw: RawSpec, caps: &DescribeCaps) -> Result<Checked, LoadErrorReason> {
    let invalid = |problem: String| LoadErrorReason::InvalidSpec {
        tool: corral_names::text::escape(&raw.name).into_owned(),
        problem,
    };
    check_name(&raw.name).map_err(invalid)?;
    caps.check_spec(&raw.name, &raw.description, &raw.parameters)
        .map_err(LoadErrorReason::from)?;
    if raw.description.trim().is_empty() {
        return Err(invalid(
            "the description is empty; say what the tool does and when to use it".into(),
        ));
    }
    let m = &raw.metadata;
    let texts = [
        ("the description", raw.description.as_str()),
        ("the category", m.category.as_str()),
        ("the version", m.version.as_str()),
    ];
    for (field, value) in texts {
        corral_names::text::check(field, value).map_err(invalid)?;
    }
    for keyword in &m.keywords {
        corral_names::text::check("a keyword", keyword).map_err(invalid)?;
    }
    if m.priority > 100 {
        return Err(invalid(format!(
            "the priority is {}; use 0 (lowest) to 100 (highest)",
            m.priority
        )));
    }
    for dependency in &m.depends_on {
        check_name(dependency)
            .map_err(|problem| invalid(format!("depends-on `{dependency}`: {problem}")))?;
    }
    let (schema, validator) =
        crate::model::schema::compile_parameters(&raw.parameters).map_err(invalid)?;
    for (pointer, value) in crate::model::schema::json_strings(&schema) {
        corral_names::text::check(&format!("the parameters schema at `{pointer}`"), value)
            .map_err(invalid)?;
    }
    let (output_schema, output) = match &raw.output_schema {
        None => (None, None),
        Some(text) => {
            if text.len() > caps.max_schema_bytes {
                return Err(crate::config::caps::Over {
                    what: format!("bytes of output schema in tool `{}`", raw.name),
                    found: text.len(),
                    cap: caps.max_schema_bytes,
                    knob: "max_schema_bytes",
                }
                .into());
            }
            let (schema, validator) =
                crate::model::schema::compile_output(text).map_err(invalid)?;
            for (pointer, value) in crate::model::schema::json_strings(&schema) {
                corral_names::text::check(&format!("the output schema at `{pointer}`"), value)
                    .map_err(invalid)?;
            }
            (Some(schema), Some(validator))
        }
    };
    let spec = ToolSpec {
        name: raw.name,
        description: raw.description,
        parameters: schema,
        output_schema,
        metadata: raw.metadata,
    };
    Ok(Checked {
        spec,
        validator,
        output,
    })
}

/// What the resolver needs to decide each tool's facts once, when the
/// catalog is built: the catalog being replaced (whose runtime state may
/// carry over), the host's switches, gates and limits.
pub(crate) struct ResolveEnv<'a> {
    /// The registry being replaced, if any.
    pub previous: Option<&'a Registry>,
    /// Which resilience layers the host runs.
    pub switches: &'a ResilienceSwitches,
    /// Tools the host's configuration gates.
    pub required: &'a BTreeSet<String>,
    /// The host's default limits.
    pub limits: &'a Limits,
    /// The pool every call runs in.
    pub pool: &'a PoolConfig,
    /// Counts the runtime states alive.
    pub states: &'a StateCount,
}

impl ResolveEnv<'_> {
    /// The facts of a tool with `spec` and `identity` (the runtime state
    /// reused from the previous catalog where [`ToolState::carry`] allows).
    pub(crate) fn facts(
        &self,
        spec: &ToolSpec,
        identity: Identity,
        plugin_rate: Option<Arc<Limiter>>,
        limits: Option<Limits>,
    ) -> Facts {
        let previous = self
            .previous
            .and_then(|r| r.get(&spec.name))
            .map(|t| t.state());
        Facts {
            state: ToolState::build(&spec.name, identity, plugin_rate, previous, self.states),
            gated: crate::call::approval::requires_approval(spec, self.required),
            limits,
        }
    }

    /// The facts of a built-in tool or a pipeline: no plugin, no layers.
    pub(crate) fn facts_of_own(&self, spec: &ToolSpec) -> Facts {
        let identity = Identity {
            plugin: None,
            guest_name: spec.name.clone(),
            resilience: ToolResilience::default(),
        };
        self.facts(spec, identity, None, None)
    }
}

/// Resolves described plugins into a registry. `described` must be in the order
/// that decides duplicate names: the first plugin to claim a name keeps it.
pub(crate) fn resolve(
    described: Vec<(Arc<Plugin>, Vec<RawSpec>)>,
    env: &ResolveEnv<'_>,
) -> (Registry, Vec<LoadError>) {
    let mut registry = Registry::default();
    let mut errors = Vec::new();
    for (plugin, raws) in described {
        let fail = |reason| LoadError {
            path: plugin.path().to_path_buf(),
            reason,
        };
        let limits = corral_sandbox::effective(env.limits, &plugin.policy().limits, None);
        if let Err(err) = limits.validate(env.pool) {
            errors.push(fail(LoadErrorReason::Policy(PolicyError::Rejected {
                path: plugin.policy().path.clone(),
                message: format!("[limits]: {err}"),
            })));
            continue;
        }
        let accepted = match resolve_plugin(&plugin, raws, &registry, env.switches) {
            Err(reason) => {
                errors.push(fail(reason));
                continue;
            }
            Ok(accepted) => accepted,
        };
        let mut plugin_rate: Option<Arc<Limiter>> = None;
        for (checked, guest_name, resilience) in accepted {
            let identity = Identity {
                plugin: Some((plugin.path().to_path_buf(), plugin.sha256().to_string())),
                guest_name,
                resilience,
            };
            plugin_rate = plugin_limiter(
                &identity,
                env.previous
                    .into_iter()
                    .flat_map(|r| r.tools())
                    .map(|t| t.state().as_ref()),
                plugin_rate.as_ref(),
            );
            let facts = env.facts(&checked.spec, identity, plugin_rate.clone(), Some(limits));
            registry.insert(Tool::new(checked, Provider::Plugin(plugin.clone()), facts));
        }
    }
    (registry, errors)
}

/// Registers the pipelines of `path` after the plugins: each is checked
/// like a described spec, its steps must call plugin tools, and a name
/// already taken fails that pipeline only.
pub(crate) fn add_pipelines(
    registry: &mut Registry,
    path: &std::path::Path,
    pipelines: Vec<Pipeline>,
    caps: &DescribeCaps,
    env: &ResolveEnv<'_>,
) -> Vec<LoadError> {
    let mut errors = Vec::new();
    for pipeline in pipelines {
        let fail = |reason| LoadError {
            path: path.to_path_buf(),
            reason,
        };
        let raw = RawSpec {
            name: pipeline.name.clone(),
            description: pipeline.description.clone(),
            parameters: pipeline.parameters.to_string(),
            output_schema: None,
            metadata: corral_sandbox::ToolMetadata::new("pipeline"),
        };
        let checked = match check_spec(raw, caps) {
            Ok(checked) => checked,
            Err(reason) => {
                errors.push(fail(reason));
                continue;
            }
        };
        if let Some(existing) = registry.get(&checked.spec.name) {
            errors.push(fail(LoadErrorReason::DuplicateTool {
                tool: checked.spec.name.clone(),
                other: existing
                    .plugin()
                    .map(|p| p.path().to_path_buf())
                    .unwrap_or_else(|| path.to_path_buf()),
            }));
            continue;
        }
        if let Err(problem) =
            pipeline.check_steps(|t| registry.get(t).is_some_and(|tool| tool.plugin().is_some()))
        {
            errors.push(fail(LoadErrorReason::InvalidSpec {
                tool: checked.spec.name.clone(),
                problem,
            }));
            continue;
        }
        let facts = env.facts_of_own(&checked.spec);
        registry.insert(Tool::new(
            checked,
            Provider::Pipeline(Arc::new(pipeline)),
            facts,
        ));
    }
    errors
}

/// How a policy fixes the name `name`, too long once shown: a
/// `[presentation]` `rename` to a name of at most `room` characters (what
/// the policy's prefix leaves), without rebuilding the plugin. The suggested
/// name is the longest start of `name` that fits.
fn rename_hint(name: &str, room: usize) -> String {
    let mut shorter: String = name
        .chars()
        .filter(|c| corral_names::ident::TOOL.allows_char(*c))
        .take(room)
        .collect();
    while shorter.ends_with('_') {
        shorter.pop();
    }
    format!(
        "a policy renames it without rebuilding: `[presentation]` \
         `rename = {{ \"{}\" = \"{shorter}\" }}` (at most {room} characters)",
        corral_names::text::escape(name)
    )
}

/// A plugin's checked specs, each with the name the guest uses for it and
/// its effective resilience.
type Accepted = Vec<(Checked, String, ToolResilience)>;

/// Checks one plugin's specs against the rules, its policy and the names
/// `registry` already serves.
fn resolve_plugin(
    plugin: &Plugin,
    raws: Vec<RawSpec>,
    registry: &Registry,
    switches: &ResilienceSwitches,
) -> Result<Accepted, LoadErrorReason> {
    if raws.is_empty() {
        return Err(LoadErrorReason::NoTools);
    }
    let policy = plugin.policy();
    let declared: Vec<&str> = raws.iter().map(|r| r.name.as_str()).collect();
    if let Some((field, name)) = policy
        .tool_names()
        .find(|(_, name)| !declared.contains(name))
    {
        return Err(LoadErrorReason::Policy(PolicyError::Rejected {
            path: policy.path.clone(),
            message: format!(
                "{field} names `{name}`, which this plugin does not provide (it provides: {})",
                declared.join(", ")
            ),
        }));
    }
    let declared_set: std::collections::BTreeSet<String> =
        declared.iter().map(|d| d.to_string()).collect();
    let mut accepted: Accepted = Vec::new();
    for mut raw in raws {
        // The policy's presentation and approval apply before the rules, so
        // a shown name is checked like any name.
        let guest_name = raw.name.clone();
        raw.name = policy.shown_name(&guest_name);
        if let Some(description) = policy.descriptions.get(&guest_name) {
            raw.description = description.clone();
        }
        if let Some(note) = policy.notes.get(&guest_name) {
            raw.description = format!("{}\n\nNote: {note}", raw.description.trim_end());
        }
        if policy.require_approval.contains(&guest_name) {
            raw.metadata.requires_approval = true;
        }
        if let Some(metadata) = policy.metadata.get(&guest_name) {
            metadata.apply(&mut raw.metadata);
        }
        // A dependency on a tool of the same plugin uses that tool's shown
        // name, so renames and prefixes keep the graph intact.
        let own: Vec<String> = raw
            .metadata
            .depends_on
            .iter()
            .map(|d| {
                if declared_set.contains(d.as_str()) {
                    policy.shown_name(d)
                } else {
                    d.clone()
                }
            })
            .collect();
        raw.metadata.depends_on = own;
        // A name over the limit (derived from a foreign component's WIT, or
        // lengthened by a prefix) gets the rename that fixes it.
        let fixable = check_name(&raw.name).is_err()
            && raw.name.len() > crate::model::names::MAX_NAME_LEN
            && !policy.rename.contains_key(&guest_name);
        let room = crate::model::names::MAX_NAME_LEN
            .saturating_sub(policy.prefix.as_ref().map_or(0, String::len));
        let checked = check_spec(raw, plugin.describe_caps()).map_err(|reason| match reason {
            LoadErrorReason::InvalidSpec { tool, problem } if fixable => {
                LoadErrorReason::InvalidSpec {
                    problem: format!("{problem}; {}", rename_hint(&guest_name, room)),
                    tool,
                }
            }
            other => other,
        })?;
        let resilience = crate::config::resilience::effective(
            &checked.spec.metadata,
            &policy.resilience,
            &guest_name,
            switches,
        )
        .map_err(|problem| {
            LoadErrorReason::Policy(PolicyError::Rejected {
                path: policy.path.clone(),
                message: format!("[resilience.tools.{guest_name}]: {problem}"),
            })
        })?;
        if accepted
            .iter()
            .any(|(c, _, _)| c.spec.name == checked.spec.name)
        {
            return Err(LoadErrorReason::InvalidSpec {
                tool: checked.spec.name,
                problem: "the plugin describes this name twice; rename one".into(),
            });
        }
        accepted.push((checked, guest_name, resilience));
    }
    if let Some(taken) = accepted
        .iter()
        .find_map(|(c, _, _)| registry.get(&c.spec.name))
    {
        return Err(LoadErrorReason::DuplicateTool {
            tool: taken.spec().name.clone(),
            other: taken
                .plugin()
                .map(|p| p.path().to_path_buf())
                .unwrap_or_default(),
        });
    }
    Ok(accepted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(name: &str, description: &str) -> RawSpec {
        RawSpec {
            name: name.into(),
            description: description.into(),
            parameters: r#"{"type":"object"}"#.into(),
            output_schema: None,
            metadata: corral_sandbox::ToolMetadata::new(""),
        }
    }

    #[test]
    fn a_spec_needs_a_valid_name_and_a_description() {
        let caps = DescribeCaps::default();
        assert!(check_spec(raw("t", "d"), &caps).is_ok());
        let blank = check_spec(raw("t", "  "), &caps).unwrap_err().to_string();
        assert!(blank.contains("description"), "{blank}");
        let bad = check_spec(raw("a-b", "d"), &caps).unwrap_err().to_string();
        assert!(bad.contains("'-'"), "{bad}");
    }
}
