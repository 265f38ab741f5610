//! The doc comments of a foreign component's WIT, by name: functions,
//! types, record fields, variant cases, enum cases and flags.
//!
//! Toolchains strip doc comments when they build a component (wit-bindgen,
//! `cargo component`, componentize-py and jco all drop them today:
//! wasm-tools#2571), so a component rarely carries its own. corral reads
//! them from two places, the second winning:
//! - the component itself, when it carries a `package-docs` section (the
//!   docs of its own world: its top-level functions);
//! - the WIT it was built from, beside it: `NAME.wit` next to `NAME.wasm`,
//!   a WIT text file, a package directory (with `deps/`), or a WIT package
//!   in its binary form (as registries publish them), whose docs travel in
//!   the `package-docs` section `wit-component` writes.
//!
//! Names are matched, not positions: an interface by its package and name
//! without version (`corral-test:types/kinds`), then the function or type by
//! name, then the field or case by name. A WIT beside the component that no
//! longer matches it only loses the docs that do not match.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wit_parser::{Resolve, TypeDefKind, TypeOwner, WorldItem};

/// The WIT beside the component file `component`: `NAME.wit`, a file or a
/// package directory.
pub(crate) fn sidecar(component: &Path) -> PathBuf {
    component.with_extension("wit")
}

/// The most files of the WIT beside a component read for its stamp (and
/// the most bytes): 1 000 files, 16 MiB. Symbolic links are not followed.
const STAMP_MAX_FILES: usize = 1_000;
const STAMP_MAX_BYTES: u64 = 16 << 20;

/// The files of the WIT `root` beside a component (its `.wit` and `.wasm`
/// files, not following symbolic links), sorted, and whether they stayed
/// within 1 000 files and 16 MiB (the walk stops at the cap).
fn sidecar_files(root: &Path) -> (Vec<PathBuf>, bool) {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    let mut bytes = 0u64;
    while let Some(path) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                pending.extend(entries.flatten().map(|e| e.path()));
            }
        } else if meta.is_file()
            && (path == root || path.extension().is_some_and(|e| e == "wit" || e == "wasm"))
        {
            bytes = bytes.saturating_add(meta.len());
            files.push(path);
        }
        if files.len() >= STAMP_MAX_FILES || bytes >= STAMP_MAX_BYTES {
            files.sort();
            return (files, false);
        }
    }
    files.sort();
    (files, true)
}

/// Whether the WIT package directory `root` is within 1 000 files and
/// 16 MiB, so parsing it costs the host a bounded amount.
pub(crate) fn within_caps(root: &Path) -> bool {
    sidecar_files(root).1
}

/// A [`corral_files::Stamp`] of the WIT beside `component` (its `.wit`
/// and `.wasm` files, not following symbolic links, within 1 000 files
/// and 16 MiB, each read under the WIT cap as a load reads it), so a
/// reload notices a change to the docs; `None` when there is none.
pub fn sidecar_stamp(component: &Path) -> Option<String> {
    let (files, _) = sidecar_files(&sidecar(component));
    let mut stamp = corral_files::Stamp::new();
    for file in files {
        stamp.file(&file, corral_files::Kind::Wit);
    }
    stamp.finish()
}

/// Pushes the WIT file `path` (its `bytes`, read under their cap) into
/// `resolve`, as `Resolve::push_file` would read it: a wasm-encoded WIT
/// package (binary), or WIT text.
pub(crate) fn parse_sidecar(
    resolve: &mut Resolve,
    path: &Path,
    bytes: &[u8],
) -> Result<(), String> {
    if bytes.starts_with(b"\0asm") {
        return match wit_parser::decoding::decode(bytes).map_err(|e| format!("{e:#}"))? {
            wit_parser::decoding::DecodedWasm::WitPackage(theirs, _) => resolve
                .merge(theirs)
                .map(|_| ())
                .map_err(|e| format!("{e:#}")),
            wit_parser::decoding::DecodedWasm::Component(..) => {
                Err("it is a component, not a WIT package".into())
            }
        };
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| "it is neither WIT text nor a WIT package".to_string())?;
    resolve
        .push_str(path, text)
        .map(|_| ())
        .map_err(|e| format!("{e:#}"))
}

/// Doc comments by key (see [`key`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Docs {
    by_key: BTreeMap<String, String>,
}

/// The key of a doc comment: the owner (`ns:pkg/iface`, or `` for the
/// world), then the item path joined by `#`.
pub(crate) fn key(owner: &str, path: &[&str]) -> String {
    let mut key = owner.to_string();
    for part in path {
        key.push('#');
        key.push_str(part);
    }
    key
}

/// `ns:pkg/iface@1.2.3` without its version.
pub(crate) fn unversioned(id: &str) -> &str {
    id.split('@').next().unwrap_or(id)
}

/// The owner key of the interface or world that owns a type.
pub(crate) fn owner_of(resolve: &Resolve, owner: TypeOwner) -> String {
    match owner {
        TypeOwner::Interface(id) => resolve
            .id_of(id)
            .map(|i| unversioned(&i).to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

impl Docs {
    /// The doc comment under `key`, trimmed; `None` when there is none.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.by_key.get(key).map(String::as_str)
    }

    /// Adds every doc comment of `resolve`, replacing what is there.
    pub fn add(&mut self, resolve: &Resolve) {
        let mut put = |key: String, docs: &wit_parser::Docs| {
            if let Some(text) = docs.contents.as_deref().map(str::trim)
                && !text.is_empty()
            {
                self.by_key.insert(key, text.to_string());
            }
        };
        for (id, interface) in resolve.interfaces.iter() {
            let Some(owner) = resolve.id_of(id).map(|i| unversioned(&i).to_string()) else {
                continue;
            };
            put(key(&owner, &[]), &interface.docs);
            for (name, function) in &interface.functions {
                put(key(&owner, &[name]), &function.docs);
            }
        }
        for (_, world) in resolve.worlds.iter() {
            for item in world.exports.values() {
                if let WorldItem::Function(function) = item {
                    put(key("", &[&function.name]), &function.docs);
                }
            }
        }
        for (_, ty) in resolve.types.iter() {
            let Some(name) = ty.name.as_deref() else {
                continue;
            };
            let owner = owner_of(resolve, ty.owner);
            put(key(&owner, &[name]), &ty.docs);
            match &ty.kind {
                TypeDefKind::Record(record) => {
                    for field in &record.fields {
                        put(key(&owner, &[name, &field.name]), &field.docs);
                    }
                }
                TypeDefKind::Variant(variant) => {
                    for case in &variant.cases {
                        put(key(&owner, &[name, &case.name]), &case.docs);
                    }
                }
                TypeDefKind::Enum(e) => {
                    for case in &e.cases {
                        put(key(&owner, &[name, &case.name]), &case.docs);
                    }
                }
                TypeDefKind::Flags(flags) => {
                    for flag in &flags.flags {
                        put(key(&owner, &[name, &flag.name]), &flag.docs);
                    }
                }
                _ => {}
            }
        }
    }
}
