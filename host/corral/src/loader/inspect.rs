//! What a component file is and offers, found without running any of its
//! code ([`Host::inspect`](crate::Host::inspect), `corral inspect`): its
//! world, its imports and which of them corral provides, and, for a
//! component of another world, every tool it would expose with its schema
//! and every export that is not a tool, with why.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::loader::error::{LoadError, LoadErrorReason};
use corral_sandbox::ComponentCache;
use corral_sandbox::Engine;
use corral_sandbox::{Foreign, Import, Skipped};
use corral_sandbox::{PluginPre, SandboxState};

/// A tool a component would expose.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct InspectedTool {
    /// Its name (before any policy's `rename` or `prefix`).
    pub name: String,
    /// Its description, from the doc comments.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

/// What [`Host::inspect`](crate::Host::inspect) found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Inspection {
    /// Lowercase hex sha256 of the file.
    pub sha256: String,
    /// `corral:tool/plugin@<version>` for a plugin of corral's world, or the
    /// world decoded from a component of another (usually `root`).
    pub world: String,
    /// Whether it is served in any-component mode.
    pub any_component: bool,
    /// Its imports, in order.
    pub imports: Vec<Import>,
    /// The tools it would expose: for a component of another world, from
    /// its types (no guest code runs); empty for a plugin of corral's world,
    /// whose tools come from its `describe`.
    pub tools: Vec<InspectedTool>,
    /// Exports that are not tools, with why.
    pub skipped: Vec<Skipped>,
}

/// Inspects the component file at `path`.
///
/// # Errors
/// A [`LoadError`] when it is not a component, does not compile or its
/// WIT cannot be decoded. Unsatisfied imports are reported in
/// [`Inspection::imports`], not as an error.
pub(crate) fn inspect(
    engine: &Engine,
    linker: &wasmtime::component::Linker<SandboxState>,
    cache: &ComponentCache,
    path: &Path,
    max_bytes: u64,
) -> Result<Inspection, LoadError> {
    let error = |reason: LoadErrorReason| LoadError {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = corral_sandbox::read_plugin(path, max_bytes).map_err(|e| error(e.into()))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let (component, _) =
        corral_sandbox::compile(engine, cache, &bytes, &sha256).map_err(|e| error(e.into()))?;
    let ours = linker
        .instantiate_pre(&component)
        .ok()
        .and_then(|pre| PluginPre::new(pre).ok());
    if let Some(pre) = ours {
        let imports = component
            .component_type()
            .imports(engine.wasmtime())
            .map(|(name, item)| corral_sandbox::import(engine.wasmtime(), name, &item.ty))
            .collect();
        return Ok(Inspection {
            sha256,
            world: format!("corral:tool/plugin@{}", pre.wit_version()),
            any_component: false,
            imports,
            tools: Vec::new(),
            skipped: Vec::new(),
        });
    }
    let foreign = Foreign::inspect(engine.wasmtime(), &component, &bytes, path)
        .map_err(|m| error(LoadErrorReason::WrongWorld(m)))?;
    Ok(Inspection {
        sha256,
        world: foreign.world.clone(),
        any_component: true,
        imports: foreign.imports.clone(),
        tools: foreign
            .exports
            .iter()
            .map(|e| InspectedTool {
                name: e.spec.name.clone(),
                description: e.spec.description.clone(),
                parameters: serde_json::from_str(&e.spec.parameters).unwrap_or(Value::Null),
            })
            .collect(),
        skipped: foreign.skipped.clone(),
    })
}
