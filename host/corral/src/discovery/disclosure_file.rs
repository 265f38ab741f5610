//! `disclosure.toml`: the operator's facades (format and rules in
//! [`disclosure`](super::disclosure)), read and checked against the tools a
//! catalog serves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use super::disclosure::Facade;
use crate::registry::{Provider, Registry, Tool};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    version: u32,
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
pub(crate) fn read(path: &Path, registry: &Registry) -> Result<Vec<Facade>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(format!("cannot read it: {err}")),
    };
    let raw: RawFile = toml::from_str(&text).map_err(|e| e.to_string().trim_end().to_string())?;
    if raw.version != 1 {
        return Err(format!(
            "version {} is not supported; this corral reads version 1",
            raw.version
        ));
    }
    let mut facades = Vec::new();
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for (name, facade) in &raw.facades {
        let at = |what: String| format!("facade `{name}`: {what}");
        crate::names::check_name(name).map_err(|m| at(format!("its name: {m}")))?;
        if registry.get(name).is_some() {
            return Err(at(format!(
                "a served tool is called `{name}` too; rename the facade"
            )));
        }
        crate::text::check(
            &format!("the description of facade `{name}`"),
            &facade.description,
        )?;
        if let Some(notes) = &facade.usage_notes {
            crate::text::check(&format!("the usage notes of facade `{name}`"), notes)?;
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
