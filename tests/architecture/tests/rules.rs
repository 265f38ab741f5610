//! The checker on its fixtures (it sees a cycle, through re-exports, globs,
//! `super::super::` and macros, and none where there is none), then the
//! rules themselves on the host crates: no import cycle between the modules
//! of any of them, and a code map in `ARCHITECTURE.md` that names every
//! module file.

use std::path::{Path, PathBuf};

use corral_architecture::{
    Cycle, Lineage, ModuleGraph, Options, find_cycles, fuzz_target_problems, host_crate_roots,
    module_graph, unmapped_files,
};

/// This crate's directory.
fn here() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The repository: two levels up from this crate.
fn repository_root() -> PathBuf {
    here()
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// The root file of fixture crate `name`.
fn fixture(name: &str) -> PathBuf {
    here().join("fixtures").join(name).join("src/lib.rs")
}

fn graph(name: &str, options: Options) -> ModuleGraph {
    module_graph(&fixture(name), &options).expect("the fixture parses")
}

fn show(cycles: &[Cycle]) -> String {
    cycles.iter().map(Cycle::to_string).collect()
}

/// `from -> to: file:line: path`, the edges of `cycle`.
fn edges_of(cycle: &Cycle) -> Vec<String> {
    cycle
        .edges
        .iter()
        .map(|e| {
            let file = e.file.display();
            format!("{} -> {}: {file}:{}: {}", e.from, e.to, e.line, e.path)
        })
        .collect()
}

#[test]
fn the_checker_sees_the_fixture_cycles() {
    let cycles = find_cycles(&fixture("cycle"), &Options::default()).expect("the fixture parses");
    let modules: Vec<&[String]> = cycles.iter().map(|c| &c.modules[..]).collect();
    assert_eq!(
        modules,
        [
            &["crate::catalog", "crate::loader", "crate::registry"][..],
            &[
                "crate::foreign",
                "crate::sandbox::state",
                "crate::sandbox::versions",
                "crate::stages"
            ][..],
        ],
        "{}",
        show(&cycles)
    );
    // Each edge says which path, in which file, to change.
    let sandbox = edges_of(&cycles[1]);
    for edge in [
        // A type's generic argument.
        "crate::sandbox::versions -> crate::foreign: src/sandbox/versions.rs:10: crate::foreign::Foreign",
        // Inside a macro call's tokens.
        "crate::sandbox::versions -> crate::stages: src/sandbox/versions.rs:15: crate::stages::SPAN_TARGET",
        // A group, through the parent's `pub(crate) use` of its child.
        "crate::foreign -> crate::sandbox::state: src/foreign/mod.rs:5: crate::sandbox::SandboxState",
        // Through the root's inline module's re-export.
        "crate::foreign -> crate::stages: src/foreign/mod.rs:17: crate::untrusted_text::escape",
        // Through two re-exports: the root's, then the sandbox's.
        "crate::stages -> crate::sandbox::versions: src/stages/mod.rs:5: crate::run",
        // `super::` to a sibling is an edge.
        "crate::sandbox::state -> crate::sandbox::versions: src/sandbox/state.rs:4: super::versions::PluginPre",
    ] {
        assert!(
            sandbox.iter().any(|e| e == edge),
            "no {edge} in {sandbox:#?}"
        );
    }
    let loader = edges_of(&cycles[0]);
    for edge in [
        "crate::registry -> crate::loader: src/registry.rs:9: crate::loader::Plugin",
        // A name a `use` brought in (`use crate::catalog;`).
        "crate::loader -> crate::catalog: src/loader/mod.rs:16: catalog::Catalog",
        "crate::catalog -> crate::registry: src/catalog.rs:3: crate::registry::Tool",
    ] {
        assert!(loader.iter().any(|e| e == edge), "no {edge} in {loader:#?}");
    }
    assert_eq!(cycles[0].example.first(), cycles[0].example.last());
    assert_eq!(cycles[0].example.len(), 4, "{:?}", cycles[0].example);
    let message = cycles[1].to_string();
    assert!(
        message.contains("src/sandbox/versions.rs:10: crate::foreign::Foreign"),
        "{message}"
    );
}

#[test]
fn paths_lead_to_the_module_that_defines_the_item() {
    let g = graph("cycle", Options::default());
    let edge = |from: &str, to: &str, path: &str| {
        g.edges
            .iter()
            .any(|e| e.from == from && e.to == to && e.path == path)
    };
    // The old checker's blind spot: a root `pub use` of a deep child's item
    // is an edge to that child, not to the root or the child's parent.
    assert!(edge(
        "crate::catalog",
        "crate::sandbox::versions",
        "crate::Pre"
    ));
    assert!(edge(
        "crate::catalog",
        "crate::sandbox::versions",
        "sandbox::run"
    ));
    assert!(
        !g.has_edge("crate::catalog", "crate::sandbox"),
        "{:#?}",
        g.edges
    );
    assert!(!g.has_edge("crate::catalog", "crate"), "{:#?}", g.edges);
    // A glob re-export is searched for the name.
    assert!(edge(
        "crate::foreign",
        "crate::sandbox::failure",
        "crate::sandbox::GuestError"
    ));
    // `super::super::` climbs two modules.
    assert!(edge(
        "crate::stages::dispatch",
        "crate::registry",
        "super::super::registry::Tool"
    ));
    // The crate by the name `extern crate self as fixture;` gives it.
    assert!(edge(
        "crate::foreign::schema",
        "crate::stages",
        "fixture::stages::escape"
    ));
    // An inline module is its file's: `inner::count` and `mod tests` are
    // `catalog`'s own.
    assert!(!g.modules.contains_key("crate::catalog::inner"));
    assert!(g.edges.iter().all(|e| e.from != e.to));
    // Paths out of the crate are not edges.
    assert!(g.edges.iter().all(|e| !e.path.starts_with("std::")));
}

#[test]
fn the_acyclic_fixture_has_no_cycle() {
    for lineage in [Lineage::Ignored, Lineage::OwnershipIgnored] {
        let options = Options {
            lineage,
            ..Options::default()
        };
        let cycles = find_cycles(&fixture("acyclic"), &options).expect("the fixture parses");
        assert!(cycles.is_empty(), "{lineage:?}: {}", show(&cycles));
        let g = graph("acyclic", options);
        assert!(g.has_edge("crate::stages", "crate::sandbox::versions"));
        assert!(g.has_edge("crate::catalog", "crate::registry"));
    }
}

#[test]
fn ownership_is_not_an_edge_but_other_references_to_relatives_are() {
    let ignored = graph("cycle", Options::default());
    assert!(!ignored.has_edge("crate::sandbox::failure", "crate::sandbox"));
    let owned = graph(
        "cycle",
        Options {
            lineage: Lineage::OwnershipIgnored,
            ..Options::default()
        },
    );
    // `crate::sandbox::LIMIT` from a child counts; `super::LIMIT` does not.
    assert!(owned.has_edge("crate::sandbox::failure", "crate::sandbox"));
    assert!(!owned.has_edge("crate::sandbox::state", "crate::sandbox"));
    assert!(!owned.has_edge("crate::sandbox::versions", "crate::sandbox"));
    // A module's `pub use` of its children's items is not an edge.
    assert!(!owned.has_edge("crate", "crate::sandbox::versions"));
    assert!(!owned.has_edge("crate", "crate::stages"));
    assert!(!owned.has_edge("crate::sandbox", "crate::sandbox::failure"));
    // But a parent's private use of a child's item is, so `stages::dispatch`
    // joins the two cycles into one.
    assert!(owned.has_edge("crate::stages", "crate::stages::dispatch"));
    let cycles = owned.cycles();
    assert_eq!(cycles.len(), 1, "{}", show(&cycles));
    assert!(
        cycles[0]
            .modules
            .iter()
            .any(|m| m == "crate::stages::dispatch")
    );
}

#[test]
fn test_modules_count_unless_skipped() {
    let all = graph("cycle", Options::default());
    assert!(all.modules.contains_key("crate::tests"));
    assert!(all.has_edge("crate::tests", "crate::catalog"));
    let skipped = graph(
        "cycle",
        Options {
            skip_test_modules: true,
            ..Options::default()
        },
    );
    assert!(!skipped.modules.contains_key("crate::tests"));
    assert!(!skipped.has_edge("crate::tests", "crate::catalog"));
}

#[test]
fn no_host_crate_has_an_import_cycle() {
    let root = repository_root();
    let roots = host_crate_roots(&root).expect("host/");
    for expected in ["host/corral/src/lib.rs", "host/corral-cli/src/main.rs"] {
        assert!(
            roots.contains(&root.join(expected)),
            "{expected} not in {roots:?}"
        );
    }
    let mut failures = Vec::new();
    for crate_root in &roots {
        let shown = crate_root
            .strip_prefix(&root)
            .unwrap_or(crate_root)
            .display();
        let graph = match module_graph(crate_root, &Options::default()) {
            Ok(graph) => graph,
            Err(e) => {
                failures.push(format!("{shown}: {e}"));
                continue;
            }
        };
        // A checker that resolves nothing finds no cycle either. (A crate
        // of a root and two leaves, as corral-files is, may have no edge:
        // the root's re-exports of its children are not edges.)
        if graph.modules.len() > 3 && graph.edges.is_empty() {
            failures.push(format!(
                "{shown}: no edge between {:?}",
                graph.modules.keys()
            ));
        }
        let cycles = graph.cycles();
        if !cycles.is_empty() {
            failures.push(format!("{shown}:\n{}", show(&cycles)));
        }
    }
    assert!(
        failures.is_empty(),
        "import cycles (a module's edges with its own children do not count):\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_code_map_names_every_module_file() {
    let missing = unmapped_files(&repository_root()).expect("ARCHITECTURE.md and host/");
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name these files (by their path in \
         src/ or its tail, `sandbox/versions.rs` or `versions.rs`; a mod.rs by its \
         directory, `sandbox/http/`):\n{}",
        missing.join("\n")
    );
}

/// CI builds no fuzz workspace: each target must be a thin wrapper of its
/// invariants, which the workspace's tests compile and run over the seeds.
#[test]
fn every_fuzz_target_is_a_thin_wrapper_of_invariants_the_tests_compile() {
    let (problems, checked) = fuzz_target_problems(&repository_root()).expect("fuzz/ reads");
    assert!(checked >= 7, "found only {checked} fuzz targets");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
