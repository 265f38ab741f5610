//! The module rules `ARCHITECTURE.md` states for the host crates, checked
//! from their source: no import cycle between the modules of a crate, and a
//! code map that names every module file ([`unmapped_files`]).
//!
//! The import graph is built from the syntax tree (syn), not from text:
//!
//! 1. The modules are found by following `mod x;` items from the crate
//!    root (`x.rs`, `x/mod.rs`, or the file a `#[path]` names);
//!    `#[cfg(test)]` modules count unless
//!    [`Options::skip_test_modules`]. An inline `mod x { ... }` belongs to
//!    the module of its file.
//! 2. Each file's paths are collected: the leaves of its `use` trees, every
//!    path in its code (not in attributes), and the `a::b` paths in macro
//!    calls' tokens.
//! 3. Each path is resolved to the module that defines what it names,
//!    segment by segment from where it is written: `crate`, `self`,
//!    `super`, or a name the module defines, declares or imports. A child
//!    module is descended into; a name a module imports (`use`, `pub use`,
//!    `use ... as`, globs) is followed to its own definition; an item
//!    (function, type, trait, constant, static, `macro_rules!`) ends the
//!    walk. Paths that lead out of the crate, or name a module rather than
//!    an item in it, are dropped.
//! 4. An edge runs from the module of the file to the module that defines
//!    the item, but for edges between a module and its own ancestors or
//!    descendants ([`Lineage`]).
//! 5. Every strongly connected component of more than one module is a
//!    [`Cycle`], listed with each edge's file, line and path.

mod code_map;
mod fuzz;
mod graph;
mod refs;
mod resolve;
mod tree;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

pub use code_map::unmapped_files;
pub use fuzz::fuzz_target_problems;
pub use graph::Cycle;

use refs::Via;
use resolve::{Resolver, Target};
use tree::Tree;

/// Why a crate could not be read: a file that does not parse, a module
/// without a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl Error {
    fn new(message: String) -> Self {
        Self(message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Which edges between a module and its own ancestors or descendants count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Lineage {
    /// None: a module's edges with its own children (and theirs) are not
    /// counted, whatever caused them.
    #[default]
    Ignored,
    /// All but ownership: a module's `pub use` of its own descendants' items
    /// and its descendants' `super::` paths up to it (and names their
    /// `use super::...` brought in) are not edges; any other reference is (a
    /// child's `crate::parent::X`, a parent's private `use child::X`). `mod`
    /// items are never references.
    OwnershipIgnored,
}

/// How [`module_graph`] builds the graph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Which edges between relatives count.
    pub lineage: Lineage,
    /// Leave out `#[cfg(test)]` modules (files and inline blocks).
    pub skip_test_modules: bool,
}

/// One reason module `from` depends on module `to`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    /// The module whose file uses the path (`crate::sandbox::versions`).
    pub from: String,
    /// The module that defines what the path names.
    pub to: String,
    /// The file, from the crate's directory (`src/sandbox/versions.rs`).
    pub file: PathBuf,
    /// The line of the path.
    pub line: usize,
    /// The path as written (a `use` leaf in full: `crate::a::{B}` is
    /// `crate::a::B`).
    pub path: String,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} -> {} ({}:{}: {})",
            self.from,
            self.to,
            self.file.display(),
            self.line,
            self.path
        )
    }
}

/// The modules of one crate and the edges between them.
#[derive(Debug, Clone)]
pub struct ModuleGraph {
    /// Every module with a file of its own, by path (`crate` for the root,
    /// `crate::a::b`), with that file.
    pub modules: BTreeMap<String, PathBuf>,
    /// Every edge, sorted, each once per path that causes it.
    pub edges: Vec<Edge>,
}

impl ModuleGraph {
    /// Its import cycles, sorted by their modules.
    pub fn cycles(&self) -> Vec<Cycle> {
        graph::cycles(&self.edges)
    }

    /// Whether some edge runs from `from` to `to`.
    pub fn has_edge(&self, from: &str, to: &str) -> bool {
        self.edges.iter().any(|e| e.from == from && e.to == to)
    }
}

/// The module graph of the crate whose root file is `root` (`src/lib.rs`
/// or `src/main.rs`).
pub fn module_graph(root: &Path, options: &Options) -> Result<ModuleGraph, Error> {
    let tree = Tree::load(root, options.skip_test_modules)?;
    let base = root
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new(""));
    let mut resolver = Resolver::new(&tree);
    let mut edges = BTreeSet::new();
    for file in &tree.files {
        let shown = file.path.strip_prefix(base).unwrap_or(&file.path);
        for reference in refs::references(&tree, file) {
            // A path that names a module (`use crate::sandbox;`) is no edge
            // by itself: the paths through it are (`sandbox::run()`).
            let Some(Target::Item(defined_in)) = resolver.resolve(reference.scope, &reference.path)
            else {
                continue;
            };
            let from = &tree.scopes[file.scope].module;
            let to = &tree.scopes[defined_in].module;
            let down = to.starts_with(&format!("{from}::"));
            let up = from.starts_with(&format!("{to}::"));
            let counts = match options.lineage {
                Lineage::Ignored => !down && !up,
                Lineage::OwnershipIgnored => {
                    let re_export = down && reference.via == Via::Use { public: true };
                    let to_ancestor =
                        up && resolve::climbs(&tree, reference.scope, &reference.path);
                    !re_export && !to_ancestor
                }
            };
            if from != to && counts {
                edges.insert(Edge {
                    from: from.clone(),
                    to: to.clone(),
                    file: shown.to_path_buf(),
                    line: reference.line,
                    path: reference.text,
                });
            }
        }
    }
    let modules = tree
        .files
        .iter()
        .map(|f| (tree.scopes[f.scope].module.clone(), f.path.clone()))
        .collect();
    Ok(ModuleGraph {
        modules,
        edges: edges.into_iter().collect(),
    })
}

/// The import cycles of the crate whose root file is `root`.
pub fn find_cycles(root: &Path, options: &Options) -> Result<Vec<Cycle>, Error> {
    Ok(module_graph(root, options)?.cycles())
}

/// The root file of every crate under `repo_root/host` (`host/*/src/lib.rs`
/// and `host/*/src/main.rs`), sorted, so a new crate is checked as soon as
/// it exists.
pub fn host_crate_roots(repo_root: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut roots = Vec::new();
    for dir in code_map::host_crates(repo_root)? {
        for root in ["lib.rs", "main.rs"] {
            let file = dir.join("src").join(root);
            if file.is_file() {
                roots.push(file);
            }
        }
    }
    Ok(roots)
}
