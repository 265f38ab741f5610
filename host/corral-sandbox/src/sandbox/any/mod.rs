//! Any-component mode: a component of any world, served as tools. Every
//! exported function (at the top level, or inside an exported interface) is
//! one tool, with a JSON Schema built from its WIT types and a description
//! from its doc comments (`docs.rs`); a call converts the JSON arguments to
//! component values, calls the function in the same sandbox as any plugin,
//! and converts the result back (`value.rs`, rules in `schema.rs`).
//!
//! **Names.** A top-level function's tool name is the function's name; a
//! function of an exported interface is `<interface>_<function>`, where the
//! interface is its name without package or version (`kinds` of
//! `corral-test:types/kinds@1.0.0`). Kebab-case becomes snake_case. The
//! result goes through the same name rule, duplicate check and policy
//! `rename`/`prefix` as any tool.
//!
//! **Not tools** ([`Skipped`], listed by `corral inspect` and logged at
//! load): WASI interfaces a runtime calls (`wasi:cli/run`,
//! `wasi:http/incoming-handler`, ...); a toolchain's build-time hook
//! (componentize-py's and componentize-qjs's `init`, recognised by their
//! signatures: `hooks.rs`); a resource's constructor and methods;
//! functions whose types have no JSON form (resources, futures, streams,
//! maps, fixed-length lists, error-context) or nest more than 64 deep
//! (`types.rs`).
//!
//! **Metadata** these components cannot declare: no category or keywords,
//! not idempotent (so no retry and no cache), parallelizable, latency
//! `medium`, priority 50, no approval; a policy's `[metadata.<tool>]` sets them.
//!
//! **Results.** A function's result is its JSON value, written as text
//! under the output cap (larger is `output_too_large` with its size); a
//! function with no result answers the empty text. A `result<T, E>` answers
//! `T`'s value on `ok`, and on `err` the call fails as `execution-failed`
//! with `E`'s value as JSON for its message (guest text: its first 4 KiB,
//! escaped like any other). Lifting a result costs the host at most
//! [`Limits::transfer_bytes`](crate::Limits::transfer_bytes).

mod docs;
pub use docs::sidecar_stamp;
mod hooks;
mod schema;
mod types;
pub(crate) mod value;

use std::path::Path;
use tracing::Instrument as _;

use serde::Serialize;
use serde_json::Value;
use wasmtime::Store;
use wasmtime::component::types::{ComponentItem, Type};
use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Val};

use crate::sandbox::{ErrorInfo, GuestError, MAX_LOG_MESSAGE_BYTES, SandboxState};
use crate::spec::{RawSpec, ToolMetadata};
use wit_parser::{FunctionKind, Resolve, WorldItem};

/// An export of a foreign component that is not a tool, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Skipped {
    /// The export: `name`, or `interface#name` for a function of an
    /// interface.
    pub export: String,
    /// Why it is not a tool.
    pub reason: String,
}

/// An import of a component, and whether corral provides it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Import {
    /// The import's name, e.g. `wasi:http/outgoing-handler@0.2.3`.
    pub name: String,
    /// Whether corral's linker provides it (WASI 0.2 and `wasi:http`).
    pub provided: bool,
    /// What a call gets from it when no policy grants more (deny by
    /// default), or why it is missing.
    pub access: &'static str,
}

/// One exported function offered as a tool.
#[derive(Debug, Clone)]
pub struct Export {
    /// Its spec, as `describe` would have answered.
    pub spec: RawSpec,
    index: ComponentExportIndex,
    params: Vec<(String, Type)>,
    result: Option<Type>,
}

/// What a component outside corral's world offers, found without running
/// any of its code.
#[derive(Debug, Clone)]
pub struct Foreign {
    /// The component's world, as decoded (`root` for most toolchains).
    pub world: String,
    /// Its imports, in order, and whether corral provides each.
    pub imports: Vec<Import>,
    /// The functions served as tools, with their specs.
    pub exports: Vec<Export>,
    /// Exports that are not tools, with why.
    pub skipped: Vec<Skipped>,
}

/// Import name prefixes corral's linker provides (WASI 0.2 and `wasi:http`),
/// each with what a call gets from it unless its policy grants more (the
/// grants are `policy::Grants`; SECURITY.md has the table).
const PROVIDED: &[(&str, &str)] = &[
    (
        "wasi:cli/environment",
        "no variable and no argument unless a policy's [env] grants variables",
    ),
    (
        "wasi:cli/",
        "stdin closed; stdout and stderr captured, never a terminal",
    ),
    (
        "wasi:io/",
        "streams and polling of what the other imports give",
    ),
    ("wasi:clocks/", "the host's clocks"),
    ("wasi:random/", "the host's random numbers"),
    (
        "wasi:filesystem/",
        "no directory unless a policy's [[filesystem]] grants one",
    ),
    ("wasi:sockets/", "no socket: every address is refused"),
    (
        "wasi:http/",
        "no request unless a policy's [http] allow lists its origin",
    ),
    (
        "corral:tool/host",
        "corral's host interface: log lines, progress, approval",
    ),
    (
        "corral:tool/client",
        "requests to the MCP client (elicitation, sampling, roots), each as the policy's \
         [client] grants",
    ),
];

/// What corral does with the import `name`: [`Import::access`] when it
/// provides it.
fn access(name: &str) -> Option<&'static str> {
    // WASI 0.3 (the component-model async interfaces) is not linked.
    if name.starts_with("wasi:") && name.contains("@0.3") {
        return None;
    }
    PROVIDED
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, access)| *access)
}

/// [`Import::access`] of an import corral does not provide.
const MISSING: &str = "not provided by corral: the component cannot load";

/// [`Import::access`] of an interface of types alone (no function and no
/// resource, like `corral:tool/types`, which componentize-qjs imports):
/// linking it needs nothing.
const TYPES_ONLY: &str = "types only: nothing to call";

/// Whether the import `item` is an instance that exports types alone.
fn types_only(engine: &wasmtime::Engine, item: &ComponentItem) -> bool {
    match item {
        ComponentItem::ComponentInstance(instance) => instance
            .exports(engine)
            .all(|(_, export)| matches!(export.ty, ComponentItem::Type(_))),
        _ => false,
    }
}

/// What corral does with the import `name` of type `item`, if it links it.
fn link_access(
    engine: &wasmtime::Engine,
    name: &str,
    item: &ComponentItem,
) -> Option<&'static str> {
    access(name).or_else(|| types_only(engine, item).then_some(TYPES_ONLY))
}

/// The [`Import`] record of the import `name` of type `item`.
pub fn import(engine: &wasmtime::Engine, name: &str, item: &ComponentItem) -> Import {
    let access = link_access(engine, name, item);
    Import {
        name: name.to_string(),
        provided: access.is_some(),
        access: access.unwrap_or(MISSING),
    }
}

/// `kebab-case` as `snake_case`.
fn snake(name: &str) -> String {
    name.replace('-', "_")
}

/// The imports of `component` that corral does not provide.
pub fn missing_imports(engine: &wasmtime::Engine, component: &Component) -> Vec<String> {
    component
        .component_type()
        .imports(engine)
        .filter(|(name, item)| link_access(engine, name, &item.ty).is_none())
        .map(|(name, _)| name.to_string())
        .collect()
}

impl Foreign {
    /// Inspects `component` (`bytes` are its binary, `path` its file, whose
    /// `.wit` sibling may hold its doc comments).
    ///
    /// # Errors
    /// A message when the component's WIT cannot be decoded.
    pub fn inspect(
        engine: &wasmtime::Engine,
        component: &Component,
        bytes: &[u8],
        path: &Path,
    ) -> Result<Self, String> {
        let (resolve, world) = match wit_parser::decoding::decode(bytes) {
            Ok(wit_parser::decoding::DecodedWasm::Component(resolve, world)) => (resolve, world),
            Ok(_) => return Err("it is a WIT package, not a component".into()),
            // The decoder quotes the component's own bytes: guest text.
            Err(err) => {
                return Err(format!(
                    "its WIT cannot be decoded: {}",
                    corral_names::text::escape(&format!("{err:#}"))
                ));
            }
        };
        let mut docs = docs::Docs::default();
        docs.add(&resolve);
        let sidecar = docs::sidecar(path);
        if sidecar.exists() {
            let mut theirs = Resolve::default();
            // A file is read under its cap (4 MiB, `corral_files::Kind::Wit`);
            // a package directory within the stamp's caps (1 000 files,
            // 16 MiB), which `docs::within_caps` checks first.
            let pushed = if sidecar.is_dir() {
                if docs::within_caps(&sidecar) {
                    theirs
                        .push_path(&sidecar)
                        .map(|_| ())
                        .map_err(|e| format!("{e:#}"))
                } else {
                    Err("it holds more than 1 000 files or 16 MiB".into())
                }
            } else {
                match corral_files::read_bytes(&sidecar, corral_files::Kind::Wit) {
                    Ok(Some(bytes)) => docs::parse_sidecar(&mut theirs, &sidecar, &bytes),
                    Ok(None) => Ok(()),
                    Err(err) => Err(err.reason()),
                }
            };
            match pushed {
                Ok(()) => docs.add(&theirs),
                Err(err) => tracing::warn!(
                    wit = ?sidecar,
                    "the WIT beside the component cannot be used, so its docs are not: {err}"
                ),
            }
        }
        let ty = component.component_type();
        let imports = ty
            .imports(engine)
            .map(|(name, item)| import(engine, name, &item.ty))
            .collect();
        let schemas = schema::Schemas::new(types::TypeFacts::new(&resolve, &docs), &docs);
        let mut found = Self {
            world: resolve.worlds[world].name.clone(),
            imports,
            exports: Vec::new(),
            skipped: Vec::new(),
        };
        for (key, item) in &resolve.worlds[world].exports {
            let export = resolve.name_world_key(key);
            match item {
                WorldItem::Function(function) => {
                    let index = component.get_export_index(None, export.as_str());
                    let func_ty = match ty.get_export(engine, &export).map(|e| e.ty) {
                        Some(ComponentItem::ComponentFunc(f)) => Some(f),
                        _ => None,
                    };
                    found.add(
                        &resolve, &schemas, "", None, function, index, func_ty, &export,
                    );
                }
                WorldItem::Interface { id, .. } => {
                    let interface = &resolve.interfaces[*id];
                    if export.starts_with("wasi:") {
                        found.skip(&export, "a WASI interface a runtime calls, not a tool");
                        continue;
                    }
                    let owner = resolve
                        .id_of(*id)
                        .map(|i| docs::unversioned(&i).to_string())
                        .unwrap_or_default();
                    let prefix = interface.name.clone().unwrap_or_else(|| export.clone());
                    let instance_index = component.get_export_index(None, export.as_str());
                    let instance_ty = match ty.get_export(engine, &export).map(|e| e.ty) {
                        Some(ComponentItem::ComponentInstance(i)) => Some(i),
                        _ => None,
                    };
                    for (name, function) in &interface.functions {
                        let index = instance_index
                            .as_ref()
                            .and_then(|i| component.get_export_index(Some(i), name.as_str()));
                        let func_ty = instance_ty.as_ref().and_then(|i| {
                            match i.get_export(engine, name).map(|e| e.ty) {
                                Some(ComponentItem::ComponentFunc(f)) => Some(f),
                                _ => None,
                            }
                        });
                        let label = format!("{export}#{name}");
                        found.add(
                            &resolve,
                            &schemas,
                            &owner,
                            Some(&prefix),
                            function,
                            index,
                            func_ty,
                            &label,
                        );
                    }
                }
                WorldItem::Type { .. } => {}
            }
        }
        Ok(found)
    }

    fn skip(&mut self, export: &str, reason: &str) {
        self.skipped.push(Skipped {
            export: export.to_string(),
            reason: reason.to_string(),
        });
    }

    /// Offers `function` as a tool, or records why not.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        resolve: &Resolve,
        schemas: &schema::Schemas<'_>,
        owner: &str,
        prefix: Option<&str>,
        function: &wit_parser::Function,
        index: Option<ComponentExportIndex>,
        func_ty: Option<wasmtime::component::types::ComponentFunc>,
        label: &str,
    ) {
        if let Some(toolchain) = hooks::toolchain_of(resolve, function) {
            return self.skip(
                label,
                &format!("{toolchain}'s build-time initialization hook, not a tool"),
            );
        }
        if !matches!(function.kind, FunctionKind::Freestanding) {
            return self.skip(
                label,
                "a resource's constructor or method (resources have no JSON form)",
            );
        }
        let types = function
            .params
            .iter()
            .map(|p| &p.ty)
            .chain(function.result.as_ref());
        if let Some(what) = types.clone().find_map(|t| schemas.facts.unsupported(t)) {
            return self.skip(
                label,
                &format!("it takes or returns {what}, which has no JSON form"),
            );
        }
        let (Some(index), Some(func_ty)) = (index, func_ty) else {
            return self.skip(label, "the component does not export it as its WIT says");
        };
        let name = match prefix {
            Some(prefix) => format!("{}_{}", snake(prefix), snake(&function.name)),
            None => snake(&function.name),
        };
        let doc_key = docs::key(owner, &[&function.name]);
        let description = schemas.docs.get(&doc_key).map_or_else(
            || {
                format!(
                    "`{label}` of a component that carries no doc comment for it (give it one \
                     in the WIT beside the component, or in the policy's [presentation] \
                     descriptions)."
                )
            },
            str::to_string,
        );
        let parameters = schemas.params(function, schemas.docs.get(&doc_key));
        let spec = RawSpec {
            name,
            description,
            parameters: parameters.to_string(),
            output_schema: None,
            metadata: ToolMetadata {
                idempotent: false,
                ..ToolMetadata::new("")
            },
        };
        self.exports.push(Export {
            spec,
            index,
            params: func_ty.params().map(|(n, t)| (n.to_string(), t)).collect(),
            result: func_ty.results().next(),
        });
    }

    /// The specs of the tools, as `describe` would answer.
    pub fn specs(&self) -> Vec<RawSpec> {
        self.exports.iter().map(|e| e.spec.clone()).collect()
    }

    /// Instantiates `pre` and calls the function of the tool the component
    /// knows as `name` with the JSON object `arguments`; its result (or the
    /// `err` of a `result`) is written as JSON text of at most
    /// `output_bytes` bytes, or the call answers [`GuestError::TooLarge`].
    pub async fn call(
        &self,
        pre: &InstancePre<SandboxState>,
        store: &mut Store<SandboxState>,
        name: &str,
        arguments: &str,
        output_bytes: usize,
    ) -> wasmtime::Result<Result<String, GuestError>> {
        let invalid = |message: String| {
            Ok(Err(GuestError::InvalidArguments(ErrorInfo {
                message,
                code: None,
                retryable: false,
            })))
        };
        let Some(export) = self.exports.iter().find(|e| e.spec.name == name) else {
            return invalid(format!(
                "this component has no function for the tool `{name}`"
            ));
        };
        let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let mut params = Vec::with_capacity(export.params.len());
        for (param, ty) in &export.params {
            match value::from_json(ty, arguments.get(param), param) {
                Ok(val) => params.push(val),
                Err(message) => return invalid(message),
            }
        }
        let instance = pre
            .instantiate_async(&mut *store)
            .instrument(crate::trace::instantiate_span())
            .await?;
        let func = instance
            .get_func(&mut *store, export.index)
            .ok_or_else(|| wasmtime::format_err!("the component lost its export for `{name}`"))?;
        let mut results = vec![Val::Bool(false); usize::from(export.result.is_some())];
        func.call_async(&mut *store, &params, &mut results)
            .instrument(crate::trace::run_span())
            .await?;
        let (Some(ty), Some(result)) = (&export.result, results.first()) else {
            return Ok(Ok(String::new()));
        };
        // Written as JSON text under the output cap (counted past it, not
        // kept). An `err` arm is a message: its first bytes are kept, and
        // the classifier caps and escapes it like any guest text.
        Ok(match (ty, result) {
            (Type::Result(r), Val::Result(Err(v))) => {
                let shown = value::AsJson {
                    ty: r.err(),
                    val: v.as_deref(),
                };
                let message = value::to_text(&shown, MAX_LOG_MESSAGE_BYTES)
                    .unwrap_or_else(|(start, _)| start);
                Err(GuestError::ExecutionFailed(ErrorInfo {
                    message,
                    code: None,
                    retryable: false,
                }))
            }
            (ty, val) => {
                let shown = match (ty, val) {
                    (Type::Result(r), Val::Result(Ok(v))) => value::AsJson {
                        ty: r.ok(),
                        val: v.as_deref(),
                    },
                    _ => value::AsJson {
                        ty: Some(ty.clone()),
                        val: Some(val),
                    },
                };
                value::to_text(&shown, output_bytes)
                    .map_err(|(_, bytes)| GuestError::TooLarge(bytes))
            }
        })
    }
}
