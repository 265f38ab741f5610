//! The resolver: validates every spec a plugin describes, compiles its argument
//! schema once, and names each tool exactly once across all plugins.
//!
//! Rules (reference 000's tool interface and edge-case table, plus MCP's
//! requirement that an input schema describes an object):
//! - a name is non-blank, only `[A-Za-z0-9_]`, at most [`MAX_NAME_LEN`] characters,
//!   and not one of [`RESERVED_NAMES`];
//! - a description is non-empty;
//! - `parameters` is JSON, a valid JSON Schema, and describes an object; an
//!   object schema without `properties` gets an empty `"properties": {}` (a tool
//!   with no parameters), which some MCP clients require;
//! - one plugin may not describe the same name twice, and two plugins may not
//!   provide the same name: the plugin resolved later fails to load with an
//!   error naming both files. At startup plugins resolve in file-name order; on
//!   reload the plugins served unchanged resolve first (see
//!   [`catalog`](crate::catalog)), so a newcomer never takes a working name.
//!
//! A plugin with any invalid spec fails to load as a whole, so that no plugin is
//! ever served half-described.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{LoadError, LoadErrorReason};
use crate::loader::Plugin;
use crate::pipeline::Pipeline;
use crate::spec::{RawSpec, ToolSpec};

/// Longest tool name accepted.
pub const MAX_NAME_LEN: usize = 64;

/// Names the host reserves for its own built-in tools.
pub const RESERVED_NAMES: &[&str] = &["execute_tool_plan"];

/// One resolved tool: its spec, the plugin that provides it (none for a
/// built-in such as `execute_tool_plan`), and the compiled validator for its
/// arguments.
pub struct Tool {
    spec: ToolSpec,
    /// The name the plugin itself uses for the tool (before a policy's prefix
    /// and renames); what the guest's `call` receives.
    guest_name: String,
    provider: Provider,
    validator: Arc<jsonschema::Validator>,
    /// Held during a call when the tool is not parallelizable. Shared with
    /// the tool of the same name in the previous catalog, so a call started
    /// before a reload and one started after it never overlap.
    pub(crate) serial: Arc<tokio::sync::Mutex<()>>,
}

/// What runs when a tool is called.
pub(crate) enum Provider {
    /// A plugin's component.
    Plugin(Arc<Plugin>),
    /// A tool built into corral (`execute_tool_plan`).
    Builtin,
    /// A pipeline from `pipelines.json`.
    Pipeline(Arc<Pipeline>),
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
        &self.guest_name
    }

    pub(crate) fn provider(&self) -> &Provider {
        &self.provider
    }

    pub(crate) fn validator(&self) -> &Arc<jsonschema::Validator> {
        &self.validator
    }

    /// Checks `arguments` against the tool's schema.
    ///
    /// # Errors
    /// Every violation, each as "`<json pointer>`: `<problem>`" (the root is shown
    /// as `(root)`).
    pub fn validate_arguments(&self, arguments: &Value) -> Result<(), Vec<String>> {
        schema_problems(&self.validator, arguments)
    }
}

/// Checks `value` against `validator`.
///
/// # Errors
/// Every violation, each as "`<json pointer>`: `<problem>`" (the root is shown
/// as `(root)`).
pub(crate) fn schema_problems(
    validator: &jsonschema::Validator,
    value: &Value,
) -> Result<(), Vec<String>> {
    let problems: Vec<String> = validator
        .iter_errors(value)
        .map(|err| {
            let path = err.instance_path().to_string();
            let path = if path.is_empty() {
                "(root)".to_string()
            } else {
                path
            };
            format!("`{path}`: {err}")
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
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

    /// Registers the pipelines of `path` after the plugins: each is checked
    /// like a described spec, its steps must call plugin tools, and a name
    /// already taken fails that pipeline only.
    pub(crate) fn add_pipelines(
        &mut self,
        path: &std::path::Path,
        pipelines: Vec<Pipeline>,
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
                metadata: crate::spec::ToolMetadata {
                    category: "pipeline".into(),
                    keywords: Vec::new(),
                    version: String::new(),
                    idempotent: false,
                    parallelizable: true,
                    latency: crate::spec::Latency::Medium,
                    requires_approval: false,
                    return_behavior: crate::spec::ReturnBehavior::ToLlm,
                },
            };
            let (spec, validator) = match check_spec(raw) {
                Ok(checked) => checked,
                Err(reason) => {
                    errors.push(fail(reason));
                    continue;
                }
            };
            if let Some(existing) = self.tools.get(&spec.name) {
                errors.push(fail(LoadErrorReason::DuplicateTool {
                    tool: spec.name.clone(),
                    other: existing
                        .plugin()
                        .map(|p| p.path().to_path_buf())
                        .unwrap_or_else(|| path.to_path_buf()),
                }));
                continue;
            }
            let tools = &self.tools;
            if let Err(problem) =
                pipeline.check_steps(|t| tools.get(t).is_some_and(|tool| tool.plugin().is_some()))
            {
                errors.push(fail(LoadErrorReason::InvalidSpec {
                    tool: spec.name.clone(),
                    problem,
                }));
                continue;
            }
            self.tools.insert(
                spec.name.clone(),
                Arc::new(Tool {
                    guest_name: spec.name.clone(),
                    spec,
                    provider: Provider::Pipeline(Arc::new(pipeline)),
                    validator: Arc::new(validator),
                    serial: Arc::default(),
                }),
            );
        }
        errors
    }

    /// Registers a built-in tool. Its name must be one of [`RESERVED_NAMES`],
    /// which no plugin can take.
    pub(crate) fn add_builtin(&mut self, spec: ToolSpec) {
        debug_assert!(RESERVED_NAMES.contains(&spec.name.as_str()));
        let validator = jsonschema::validator_for(&spec.parameters)
            .expect("built-in tool schemas are valid JSON Schema");
        self.tools.insert(
            spec.name.clone(),
            Arc::new(Tool {
                guest_name: spec.name.clone(),
                spec,
                provider: Provider::Builtin,
                validator: Arc::new(validator),
                serial: Arc::default(),
            }),
        );
    }

    /// The loaded name closest to `name`, for "did you mean" hints.
    pub(crate) fn suggest(&self, name: &str) -> Option<String> {
        let wanted = name.to_ascii_lowercase();
        self.tools
            .keys()
            .map(|k| (edit_distance(&wanted, &k.to_ascii_lowercase()), k))
            .filter(|(d, k)| *d <= 2.max(k.len() / 3))
            .min()
            .map(|(_, k)| k.clone())
    }
}

/// Checks a tool name against the naming rule.
///
/// # Errors
/// A message saying which rule the name breaks.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("the name is blank; give the tool a name of [A-Za-z0-9_]".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "the name is {} characters long; use at most {MAX_NAME_LEN}",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return Err(format!(
            "the name contains {bad:?}; use only letters, digits and underscores"
        ));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err("the name is reserved for a corral built-in tool; rename it".into());
    }
    Ok(())
}

/// Validates one spec and compiles its schema.
fn check_spec(raw: RawSpec) -> Result<(ToolSpec, jsonschema::Validator), LoadErrorReason> {
    let invalid = |problem: String| LoadErrorReason::InvalidSpec {
        tool: raw.name.clone(),
        problem,
    };
    check_name(&raw.name).map_err(invalid)?;
    if raw.description.trim().is_empty() {
        return Err(invalid(
            "the description is empty; say what the tool does and when to use it".into(),
        ));
    }
    let mut schema: Value = serde_json::from_str(&raw.parameters)
        .map_err(|err| invalid(format!("the parameters schema is not JSON: {err}")))?;
    if let Err(err) = jsonschema::meta::validate(&schema) {
        return Err(invalid(format!(
            "the parameters schema is not a valid JSON Schema: {err} (at `{}`)",
            err.instance_path()
        )));
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(invalid(
            "the parameters schema must describe an object (`\"type\": \"object\"`): \
             arguments are always a JSON object"
                .into(),
        ));
    }
    if let Some(object) = schema.as_object_mut() {
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    let validator = jsonschema::validator_for(&schema)
        .map_err(|err| invalid(format!("the parameters schema does not compile: {err}")))?;
    let spec = ToolSpec {
        name: raw.name,
        description: raw.description,
        parameters: schema,
        metadata: raw.metadata,
    };
    Ok((spec, validator))
}

/// Resolves described plugins into a registry. `described` must be in the order
/// that decides duplicate names: the first plugin to claim a name keeps it.
/// A tool whose name `previous` also serves shares that tool's serial lock.
pub(crate) fn resolve(
    described: Vec<(Arc<Plugin>, Vec<RawSpec>)>,
    previous: Option<&Registry>,
) -> (Registry, Vec<LoadError>) {
    let mut registry = Registry::default();
    let mut errors = Vec::new();
    'plugins: for (plugin, raws) in described {
        let fail = |reason| LoadError {
            path: plugin.path().to_path_buf(),
            reason,
        };
        if raws.is_empty() {
            errors.push(fail(LoadErrorReason::NoTools));
            continue;
        }
        let policy = plugin.policy();
        let declared: Vec<&str> = raws.iter().map(|r| r.name.as_str()).collect();
        if let Some((field, name)) = policy
            .tool_names()
            .find(|(_, name)| !declared.contains(name))
        {
            errors.push(fail(LoadErrorReason::Policy(format!(
                "{}: {field} names `{name}`, which this plugin does not provide \
                 (it provides: {})",
                policy.path.display(),
                declared.join(", ")
            ))));
            continue;
        }
        let mut accepted: Vec<(ToolSpec, jsonschema::Validator, String)> = Vec::new();
        for mut raw in raws {
            // The policy's presentation and approval apply before the rules, so
            // a shown name is checked like any name.
            let guest_name = raw.name.clone();
            raw.name = policy.shown_name(&guest_name);
            if let Some(note) = policy.notes.get(&guest_name) {
                raw.description = format!("{}\n\nNote: {note}", raw.description.trim_end());
            }
            if policy.require_approval.contains(&guest_name) {
                raw.metadata.requires_approval = true;
            }
            match check_spec(raw) {
                Ok((spec, validator)) => {
                    let checked = (spec, validator, guest_name);
                    if accepted.iter().any(|(s, _, _)| s.name == checked.0.name) {
                        errors.push(fail(LoadErrorReason::InvalidSpec {
                            tool: checked.0.name,
                            problem: "the plugin describes this name twice; rename one".into(),
                        }));
                        continue 'plugins;
                    }
                    accepted.push(checked);
                }
                Err(reason) => {
                    errors.push(fail(reason));
                    continue 'plugins;
                }
            }
        }
        if let Some((spec, _, _)) = accepted
            .iter()
            .find(|(s, _, _)| registry.tools.contains_key(&s.name))
        {
            let other = registry.tools[&spec.name]
                .plugin()
                .map(|p| p.path().to_path_buf())
                .unwrap_or_default();
            errors.push(fail(LoadErrorReason::DuplicateTool {
                tool: spec.name.clone(),
                other,
            }));
            continue;
        }
        for (spec, validator, guest_name) in accepted {
            let serial = previous
                .and_then(|r| r.get(&spec.name))
                .map_or_else(Arc::default, |t| t.serial.clone());
            match registry.tools.entry(spec.name.clone()) {
                Entry::Vacant(slot) => {
                    slot.insert(Arc::new(Tool {
                        guest_name,
                        spec,
                        provider: Provider::Plugin(plugin.clone()),
                        validator: Arc::new(validator),
                        serial,
                    }));
                }
                Entry::Occupied(_) => unreachable!("checked for duplicates above"),
            }
        }
    }
    (registry, errors)
}

/// Levenshtein distance, for "did you mean" suggestions on short names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rule() {
        assert!(check_name("word_count").is_ok());
        assert!(check_name("A9_").is_ok());
        assert!(check_name("").unwrap_err().contains("blank"));
        assert!(check_name("   ").unwrap_err().contains("blank"));
        assert!(check_name("has-dash").unwrap_err().contains("'-'"));
        assert!(check_name("spa ce").unwrap_err().contains("' '"));
        assert!(check_name("é").is_err());
        assert!(check_name(&"a".repeat(64)).is_ok());
        assert!(check_name(&"a".repeat(65)).unwrap_err().contains("65"));
        assert!(
            check_name("execute_tool_plan")
                .unwrap_err()
                .contains("reserved")
        );
    }

    fn raw(parameters: &str) -> RawSpec {
        RawSpec {
            name: "t".into(),
            description: "d".into(),
            parameters: parameters.into(),
            metadata: crate::spec::ToolMetadata {
                category: String::new(),
                keywords: vec![],
                version: String::new(),
                idempotent: true,
                parallelizable: true,
                latency: crate::spec::Latency::Fast,
                requires_approval: false,
                return_behavior: crate::spec::ReturnBehavior::ToLlm,
            },
        }
    }

    #[test]
    fn schemas_must_be_valid_object_schemas() {
        assert!(check_spec(raw(r#"{"type":"object"}"#)).is_ok());
        let not_json = check_spec(raw("{")).unwrap_err().to_string();
        assert!(not_json.contains("not JSON"), "{not_json}");
        let invalid = check_spec(raw(r#"{"type":"object","minLength":"x"}"#))
            .unwrap_err()
            .to_string();
        assert!(invalid.contains("not a valid JSON Schema"), "{invalid}");
        let not_object = check_spec(raw(r#"{"type":"string"}"#))
            .unwrap_err()
            .to_string();
        assert!(
            not_object.contains("must describe an object"),
            "{not_object}"
        );
        let mut blank = raw(r#"{"type":"object"}"#);
        blank.description = "  ".into();
        assert!(
            check_spec(blank)
                .unwrap_err()
                .to_string()
                .contains("description")
        );
    }

    #[test]
    fn suggests_close_names() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "ab"), 2);
    }
}
