//! Tool groups (Embabel's tool groups and `ToolGroupPermission`) and
//! the selection of the tools a host serves.
//!
//! **Declaring groups.** `groups.toml` in the plugin directory ([`GROUPS_FILE`],
//! version 1, unknown keys refused):
//!
//! ```toml
//! version = 1
//!
//! [groups.web]
//! description = "Fetch pages and call web APIs."
//! provider = "acme"                 # optional: who maintains the group
//! plugins = ["fetch"]               # members: plugin file stems,
//! categories = ["web"]              #   tool categories,
//! tools = ["http_*"]                #   name globs (`*`, `?`, `[..]`),
//! tool_regex = ["^web_(get|head)$"] #   name regexes;
//! exclude = ["fetch_raw*"]          # name globs taken out again
//! permissions = ["internet"]        # what its tools may be granted
//! ```
//!
//! **Permissions** are checked, not trusted. A tool's actual permissions come
//! from its plugin's policy grants: `internet` (an `[http] allow` entry),
//! `file-read` (any `[[filesystem]]` entry), `file-write` (a `read-write`
//! one), `environment` (`[environment]` `set` or `pass`), and
//! `approval-gated` (its calls pass the approval gate). A pipeline has the
//! union of its steps' permissions. A group that includes a tool whose
//! permissions exceed the group's declared ones fails to load, with an error
//! naming the group, the tool and the grant; its tools are then served by no
//! selection of that group.
//!
//! **Selecting.** [`Selection`]: with groups named, only their members are
//! served (plus the built-in tools); then any tool whose name matches the
//! exclude regex is dropped (built-ins included). An unselected tool is
//! unknown on every path: `tools/list`, calls, plan steps, pipelines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::catalog::registry::{Provider, Registry, Tool};
use crate::loader::error::{LoadError, LoadErrorReason};

/// The groups file's name inside the plugin directory.
pub const GROUPS_FILE: &str = "groups.toml";

/// A permission a group declares and a tool's grants imply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Permission {
    /// Outbound HTTP (`[http] allow`).
    Internet,
    /// A preopened directory (`[[filesystem]]`, any access).
    FileRead,
    /// A `read-write` preopened directory.
    FileWrite,
    /// Environment variables (`[environment]`).
    Environment,
    /// Calls pass the approval gate.
    ApprovalGated,
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Internet => "internet",
            Self::FileRead => "file-read",
            Self::FileWrite => "file-write",
            Self::Environment => "environment",
            Self::ApprovalGated => "approval-gated",
        })
    }
}

/// A loaded tool group whose permissions check passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolGroup {
    /// The group's name (its table key).
    pub name: String,
    /// What the group is for.
    pub description: String,
    /// Who maintains it, if declared.
    pub provider: Option<String>,
    /// The declared permissions.
    pub permissions: BTreeSet<Permission>,
    /// The names of its tools in this catalog, sorted.
    pub tools: Vec<String>,
}

/// Which tools a host serves: groups and an exclude pattern. The default
/// serves everything.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Groups whose members are served; empty serves every tool.
    pub groups: Vec<String>,
    /// Tools whose names match are not served.
    pub exclude: Option<regex::Regex>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    /// Checked by `config::versioned` before this parse.
    #[serde(rename = "version")]
    _version: u32,
    #[serde(default)]
    groups: BTreeMap<String, RawGroup>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    description: String,
    provider: Option<String>,
    #[serde(default)]
    plugins: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    tool_regex: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    #[serde(default)]
    permissions: BTreeSet<Permission>,
}

/// A group's membership rules, compiled.
struct Rules {
    raw: RawGroup,
    tools: globset::GlobSet,
    regex: Vec<regex::Regex>,
    exclude: globset::GlobSet,
}

impl Rules {
    fn compile(name: &str, raw: RawGroup) -> Result<Self, String> {
        let globs = |list: &[String], key: &str| {
            let mut set = globset::GlobSetBuilder::new();
            for pattern in list {
                set.add(
                    globset::Glob::new(pattern)
                        .map_err(|e| format!("group `{name}`: {key} pattern `{pattern}`: {e}"))?,
                );
            }
            set.build()
                .map_err(|e| format!("group `{name}`: {key}: {e}"))
        };
        let regex = raw
            .tool_regex
            .iter()
            .map(|r| {
                regex::Regex::new(r)
                    .map_err(|e| format!("group `{name}`: tool_regex `{r}` does not compile: {e}"))
            })
            .collect::<Result<_, _>>()?;
        corral_names::text::check(
            &format!("the description of group `{name}`"),
            &raw.description,
        )?;
        Ok(Self {
            tools: globs(&raw.tools, "tools")?,
            exclude: globs(&raw.exclude, "exclude")?,
            regex,
            raw,
        })
    }

    fn includes(&self, tool: &Tool) -> bool {
        let name = tool.spec().name.as_str();
        if self.exclude.is_match(name) {
            return false;
        }
        let plugin = tool.plugin().map(|p| p.name());
        plugin.is_some_and(|p| self.raw.plugins.iter().any(|x| x == p))
            || self.raw.categories.contains(&tool.spec().metadata.category)
            || self.tools.is_match(name)
            || self.regex.iter().any(|r| r.is_match(name))
    }
}

/// A tool's actual permissions, each with the grant that implies it.
pub(crate) fn permissions_of(registry: &Registry, tool: &Tool) -> BTreeMap<Permission, String> {
    let mut found = BTreeMap::new();
    if tool.requires_approval() {
        found.insert(
            Permission::ApprovalGated,
            "its calls require approval".to_string(),
        );
    }
    match tool.provider() {
        Provider::Plugin(plugin) => {
            let policy = plugin.policy();
            let file = policy.path.display();
            if let Some(host) = policy.http_allow.first() {
                found.insert(
                    Permission::Internet,
                    format!("{file}: [http] allow `{host}`"),
                );
            }
            for dir in &policy.filesystem {
                found.insert(
                    Permission::FileRead,
                    format!("{file}: [[filesystem]] `{}`", dir.guest),
                );
                if dir.writable {
                    found.insert(
                        Permission::FileWrite,
                        format!("{file}: [[filesystem]] `{}` read-write", dir.guest),
                    );
                }
            }
            if !policy.environment.is_empty() {
                found.insert(Permission::Environment, format!("{file}: [environment]"));
            }
        }
        Provider::Pipeline(pipeline) => {
            for step in &pipeline.steps {
                if let Some(inner) = registry.get(&step.tool)
                    && !matches!(inner.provider(), Provider::Pipeline(_))
                {
                    for (permission, grant) in permissions_of(registry, inner) {
                        found
                            .entry(permission)
                            .or_insert_with(|| format!("step `{}`: {grant}", step.tool));
                    }
                }
            }
        }
        Provider::Builtin(_) => {}
    }
    found
}

/// Reads `groups.toml` from `dir` (none is no groups), checks each group's
/// permissions against its members, then keeps only the tools `selection`
/// serves. Returns the groups that loaded and the errors, each naming
/// [`GROUPS_FILE`].
pub(crate) fn apply(
    dir: Option<&Path>,
    registry: &mut Registry,
    selection: &Selection,
) -> (Vec<ToolGroup>, Vec<LoadError>) {
    let path = dir.map_or_else(|| GROUPS_FILE.into(), |d| d.join(GROUPS_FILE));
    let error = |message: String| LoadError {
        path: path.clone(),
        reason: LoadErrorReason::InvalidGroups(message),
    };
    let mut errors = Vec::new();
    let mut groups = Vec::new();
    match read(&path) {
        Ok(rules) => {
            for (name, rules) in rules {
                let tools: Vec<&std::sync::Arc<Tool>> =
                    registry.tools().filter(|t| rules.includes(t)).collect();
                let over = tools.iter().find_map(|tool| {
                    permissions_of(registry, tool)
                        .into_iter()
                        .find(|(p, _)| !rules.raw.permissions.contains(p))
                        .map(|(p, grant)| (tool.spec().name.clone(), p, grant))
                });
                if let Some((tool, permission, grant)) = over {
                    errors.push(LoadError {
                        path: path.clone(),
                        reason: LoadErrorReason::GroupPermission {
                            group: name,
                            tool,
                            permission: permission.to_string(),
                            grant,
                        },
                    });
                    continue;
                }
                groups.push(ToolGroup {
                    tools: tools.iter().map(|t| t.spec().name.clone()).collect(),
                    name,
                    description: rules.raw.description,
                    provider: rules.raw.provider,
                    permissions: rules.raw.permissions,
                });
            }
        }
        Err(message) => errors.push(error(message)),
    }
    if !selection.groups.is_empty() {
        let mut served = BTreeSet::new();
        for wanted in &selection.groups {
            match groups.iter().find(|g| &g.name == wanted) {
                Some(group) => served.extend(group.tools.iter().cloned()),
                None if errors.is_empty() => errors.push(error(format!(
                    "the selected group `{wanted}` is not declared; declared: {}",
                    list(groups.iter().map(|g| g.name.as_str()))
                ))),
                // A group that failed its check is already reported.
                None => {}
            }
        }
        registry.retain(|tool| {
            matches!(tool.provider(), Provider::Builtin(_)) || served.contains(&tool.spec().name)
        });
    }
    if let Some(exclude) = &selection.exclude {
        registry.retain(|tool| !exclude.is_match(&tool.spec().name));
    }
    for group in &mut groups {
        group.tools.retain(|t| registry.get(t).is_some());
    }
    (groups, errors)
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The file's groups, compiled; no file is no groups.
fn read(path: &Path) -> Result<Vec<(String, Rules)>, String> {
    use crate::config::versioned::{self, Format};
    let Some(raw) = versioned::read::<RawFile>(path, corral_files::Kind::Groups, Format::Toml, 1)
        .map_err(|e| e.to_string())?
    else {
        return Ok(Vec::new());
    };
    raw.groups
        .into_iter()
        .map(|(name, group)| {
            crate::model::names::check_name(&name)
                .map_err(|m| format!("group name `{name}`: {m}"))?;
            Ok((name.clone(), Rules::compile(&name, group)?))
        })
        .collect()
}
