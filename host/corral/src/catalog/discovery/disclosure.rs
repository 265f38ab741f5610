//! Progressive disclosure (Embabel's `UnfoldingTool`): facades, each one
//! tool that stands for a set of inner tools, so a model's first tool list
//! holds a few facades instead of every tool.
//!
//! This module decides *which* facades a catalog has ([`Facades`]); what a
//! client sees and how a facade unfolds belongs to the MCP server. The
//! sources ([`DisclosureMode`]):
//! - **per plugin**: one facade per plugin, named after its file stem, and
//!   one named `pipelines` for the pipelines;
//! - **per category**: one facade per tool category (a tool without one is
//!   in `other`);
//! - **a file**: `disclosure.toml` in the plugin directory
//!   ([`DISCLOSURE_FILE`], version 1, unknown keys refused), written by the
//!   operator:
//!
//! ```toml
//! version = 1
//!
//! [facades.notes]
//! description = "Keep text notes: list, read, write and delete them."
//! tools = ["notes_*"]          # members: name globs (`*`, `?`, `[..]`),
//! categories = []              #   tool categories,
//! plugins = []                 #   plugin file stems,
//! facades = []                 #   and other facades, which then nest here
//! usage_notes = "Writing replaces a note of the same name."
//! exclusive = false            # unfolded, it hides every other tool
//! ```
//!
//! Rules, the same for every source: a facade name follows the tool-name
//! rule and takes no served tool's name (a generated one that would gets
//! `_tools` appended); a generated facade needs at least two members (one
//! tool stays listed on its own); built-in tools are never inside a facade;
//! a tool or facade is inside at most one facade; nesting has no cycle; a
//! tool inside no facade stays listed on its own. A file that breaks a rule
//! is a load error naming the facade and the fix, and the catalog then has
//! no facades: every tool is listed, as without disclosure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::catalog::registry::{Provider, Registry, Tool};
use crate::loader::error::{LoadError, LoadErrorReason};

/// The disclosure file's name inside the plugin directory.
pub const DISCLOSURE_FILE: &str = "disclosure.toml";

/// Where a host's facades come from. Default: [`Off`](Self::Off), every
/// tool listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DisclosureMode {
    /// No facades.
    #[default]
    Off,
    /// One facade per plugin (and one for the pipelines).
    Plugin,
    /// One facade per tool category.
    Category,
    /// The facades of [`DISCLOSURE_FILE`].
    File,
}

/// One facade: a tool that stands for its members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Facade {
    /// Its tool name.
    pub name: String,
    /// What its tools are for (the facade's description).
    pub description: String,
    /// The tools inside it, sorted.
    pub tools: Vec<String>,
    /// The facades nested inside it, sorted.
    pub facades: Vec<String>,
    /// How to use its tools, shown once when it unfolds (Embabel's
    /// `childToolUsageNotes`), not in every child's description.
    pub usage_notes: Option<String>,
    /// Unfolded, it hides every other tool but the built-ins until it is
    /// folded again.
    pub exclusive: bool,
}

/// The facades of one catalog. Empty without disclosure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facades {
    by_name: BTreeMap<String, Facade>,
    /// The facade holding each member tool or nested facade.
    holder: BTreeMap<String, String>,
}

impl Facades {
    /// Whether there are none (disclosure off, or nothing to group).
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Every facade, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Facade> {
        self.by_name.values()
    }

    /// The facade called `name`.
    pub fn get(&self, name: &str) -> Option<&Facade> {
        self.by_name.get(name)
    }

    /// The facade that holds the tool or facade `name`; `None` for one
    /// listed on its own.
    pub fn holder(&self, name: &str) -> Option<&str> {
        self.holder.get(name).map(String::as_str)
    }

    /// The facades listed on their own (held by no other facade).
    pub fn top_level(&self) -> impl Iterator<Item = &Facade> {
        self.by_name
            .values()
            .filter(|f| !self.holder.contains_key(&f.name))
    }

    fn from_list(facades: Vec<Facade>) -> Self {
        let mut holder = BTreeMap::new();
        for facade in &facades {
            for member in facade.tools.iter().chain(&facade.facades) {
                holder.insert(member.clone(), facade.name.clone());
            }
        }
        Self {
            by_name: facades.into_iter().map(|f| (f.name.clone(), f)).collect(),
            holder,
        }
    }
}

/// The facades of `registry` under `mode`; `dir` is the plugin directory
/// (for [`DisclosureMode::File`]). Errors name [`DISCLOSURE_FILE`].
pub(crate) fn build(
    mode: DisclosureMode,
    dir: Option<&Path>,
    registry: &Registry,
) -> (Facades, Vec<LoadError>) {
    let groupable = || {
        registry
            .tools()
            .filter(|t| !matches!(t.provider(), Provider::Builtin(_)))
    };
    let generated = |key: &dyn Fn(&Tool) -> String, what: &str| {
        let mut groups: BTreeMap<String, Vec<&Tool>> = BTreeMap::new();
        for tool in groupable() {
            groups.entry(key(tool)).or_default().push(tool);
        }
        let mut taken = BTreeSet::new();
        let facades = groups
            .into_iter()
            .filter(|(_, tools)| tools.len() >= 2)
            .map(|(group, tools)| {
                let facade = generate(&group, what, &tools, registry, &taken);
                taken.insert(facade.name.clone());
                facade
            })
            .collect();
        Facades::from_list(facades)
    };
    match mode {
        DisclosureMode::Off => (Facades::default(), Vec::new()),
        DisclosureMode::Category => (
            generated(
                &|t| {
                    let c = &t.spec().metadata.category;
                    if c.is_empty() {
                        "other".into()
                    } else {
                        c.clone()
                    }
                },
                "category",
            ),
            Vec::new(),
        ),
        DisclosureMode::Plugin => (
            generated(
                &|t| match t.plugin() {
                    Some(plugin) => plugin.name().to_string(),
                    None => "pipelines".into(),
                },
                "plugin",
            ),
            Vec::new(),
        ),
        DisclosureMode::File => {
            let path = dir.map_or_else(|| DISCLOSURE_FILE.into(), |d| d.join(DISCLOSURE_FILE));
            match read(&path, registry) {
                Ok(facades) => (Facades::from_list(facades), Vec::new()),
                Err(message) => (
                    Facades::default(),
                    vec![LoadError {
                        path,
                        reason: LoadErrorReason::InvalidDisclosure(message),
                    }],
                ),
            }
        }
    }
}

/// The name of the facade generated for `group`: the group lowercased with
/// anything but ASCII letters and digits as `_`, then, while it breaks the
/// name rule or `used` says it is taken (a served tool, another facade),
/// with `_tools`, then `_tools_2`, `_tools_3`, ... appended (the group
/// part cut so the whole stays within the name length).
fn facade_name(group: &str, used: impl Fn(&str) -> bool) -> String {
    let base: String = group
        .to_lowercase()
        .chars()
        .map(|c| {
            if corral_names::ident::TOOL.allows_char(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let fits = |name: &str| crate::model::names::check_name(name).is_ok() && !used(name);
    if fits(&base) {
        return base;
    }
    let stem = base.trim_matches('_');
    (1..)
        .map(|n| {
            let suffix = if n == 1 {
                "_tools".to_string()
            } else {
                format!("_tools_{n}")
            };
            let room = crate::model::names::MAX_NAME_LEN.saturating_sub(suffix.len());
            let stem: String = stem.chars().take(room).collect();
            format!("{stem}{suffix}")
        })
        .find(|name| fits(name))
        .unwrap_or_default()
}

/// Most member names a generated facade's description lists: 4.
const NAMED_MEMBERS: usize = 4;

/// The facade generated for `group` (a category or a plugin) over `tools`.
fn generate(
    group: &str,
    what: &str,
    tools: &[&Tool],
    registry: &Registry,
    taken: &BTreeSet<String>,
) -> Facade {
    let name = facade_name(group, |n| registry.get(n).is_some() || taken.contains(n));
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    let mut listed = names
        .iter()
        .take(NAMED_MEMBERS)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMED_MEMBERS {
        listed.push_str(&format!(" and {} more", names.len() - NAMED_MEMBERS));
    }
    Facade {
        description: format!(
            "{} {group} tools ({what}): {listed}. Call it to see them.",
            names.len()
        ),
        name,
        tools: names
            .iter()
            .map(|n| n.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        facades: Vec::new(),
        usage_notes: None,
        exclusive: false,
    }
}

// `disclosure.toml`: the operator's facades, read and checked against the
// tools a catalog serves.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    /// Checked by `config::versioned` before this parse.
    #[serde(rename = "version")]
    _version: u32,
    #[serde(default)]
    facades: BTreeMap<String, RawFacade>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFacade {
    description: String,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
    #[serde(default)]
    plugins: Vec<String>,
    #[serde(default)]
    facades: Vec<String>,
    usage_notes: Option<String>,
    #[serde(default)]
    exclusive: bool,
}

/// The facades of the file at `path` over `registry`; no file is no
/// facades.
///
/// # Errors
/// What is wrong, naming the facade and the fix.
fn read(path: &Path, registry: &Registry) -> Result<Vec<Facade>, String> {
    use crate::config::versioned::{self, Format};
    let Some(raw) =
        versioned::read::<RawFile>(path, corral_files::Kind::Disclosure, Format::Toml, 1)
            .map_err(|e| e.to_string())?
    else {
        return Ok(Vec::new());
    };
    let mut facades = Vec::new();
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for (name, facade) in &raw.facades {
        let at = |what: String| format!("facade `{name}`: {what}");
        crate::model::names::check_name(name).map_err(|m| at(format!("its name: {m}")))?;
        if registry.get(name).is_some() {
            return Err(at(format!(
                "a served tool is called `{name}` too; rename the facade"
            )));
        }
        corral_names::text::check(
            &format!("the description of facade `{name}`"),
            &facade.description,
        )?;
        if let Some(notes) = &facade.usage_notes {
            corral_names::text::check(&format!("the usage notes of facade `{name}`"), notes)?;
        }
        let mut globs = globset::GlobSetBuilder::new();
        for pattern in &facade.tools {
            globs.add(
                globset::Glob::new(pattern)
                    .map_err(|e| at(format!("tools pattern `{pattern}`: {e}")))?,
            );
        }
        let globs = globs.build().map_err(|e| at(format!("tools: {e}")))?;
        let member = |tool: &Tool| {
            !matches!(tool.provider(), Provider::Builtin(_))
                && (globs.is_match(&tool.spec().name)
                    || facade.categories.contains(&tool.spec().metadata.category)
                    || tool
                        .plugin()
                        .is_some_and(|p| facade.plugins.iter().any(|x| x == p.name())))
        };
        let tools: BTreeSet<String> = registry
            .tools()
            .filter(|t| member(t))
            .map(|t| t.spec().name.clone())
            .collect();
        for nested in &facade.facades {
            if !raw.facades.contains_key(nested) {
                return Err(at(format!(
                    "it nests `{nested}`, which this file does not declare"
                )));
            }
        }
        if tools.is_empty() && facade.facades.is_empty() {
            return Err(at(
                "no served tool matches its tools, categories or plugins; fix them or remove it"
                    .into(),
            ));
        }
        for member in tools.iter().chain(&facade.facades) {
            if let Some(other) = owner.insert(member.clone(), name.clone()) {
                return Err(format!(
                    "`{member}` is in facades `{other}` and `{name}`; put it in one"
                ));
            }
        }
        facades.push(Facade {
            name: name.clone(),
            description: facade.description.clone(),
            tools: tools.into_iter().collect(),
            facades: facade
                .facades
                .iter()
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            usage_notes: facade.usage_notes.clone(),
            exclusive: facade.exclusive,
        });
    }
    // Nesting has no cycle: walking up from any facade ends at the top.
    for name in raw.facades.keys() {
        let mut seen = BTreeSet::from([name.as_str()]);
        let mut at = name.as_str();
        while let Some(up) = owner.get(at) {
            if !seen.insert(up) {
                return Err(format!(
                    "facade `{name}` is nested inside itself (through `{up}`); break the cycle"
                ));
            }
            at = up;
        }
    }
    Ok(facades)
}

#[cfg(test)]
mod tests {
    use super::facade_name;

    #[test]
    fn generated_names_never_take_a_used_name() {
        let used = ["text", "text_tools", "statistics"];
        let taken = |n: &str| used.contains(&n);
        assert_eq!(facade_name("Notes", taken), "notes");
        assert_eq!(facade_name("text", taken), "text_tools_2");
        assert_eq!(facade_name("Statistics", taken), "statistics_tools");
        assert_eq!(facade_name("my-notes", taken), "my_notes");
        assert_eq!(facade_name("", taken), "_tools");
        let long = "x".repeat(80);
        let name = facade_name(&long, |n| n.len() > 64 || n.ends_with("_tools"));
        assert_eq!(name.len(), 64);
        assert!(name.ends_with("_tools_2"), "{name}");
    }
}
