//! The rules `ARCHITECTURE.md` states, checked: no import cycle between the
//! modules of a host crate, no source file over 500 lines, nothing outside the
//! sandbox creates a `Store`, the guest SDK's WIT is the repository's, and the
//! library depends on no CLI, HTTP server, MCP or exporter crate.
//!
//! The module graph is built from the source text (`crate::`, `super::` and
//! `self::` paths, comments stripped), as `cargo modules dependencies
//! --acyclic` would, but without building rust-analyzer on CI. An edge from a
//! module to its own ancestor or descendant is ownership, not an import, and
//! is not counted; every other reference is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::repository_root;

/// Longest source file allowed, in lines.
const MAX_LINES: usize = 500;

/// `path` with `//` comments removed (string literals are kept as they are;
/// no host source writes `//` inside a string next to a module path).
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module of the crate whose root file is `root` (`src/lib.rs` or
/// `src/main.rs`), as `a::b` paths (`""` for the root), with its file.
fn modules(root: &Path) -> BTreeMap<String, PathBuf> {
    let src = root.parent().expect("src dir");
    let mut found = BTreeMap::new();
    found.insert(String::new(), root.to_path_buf());
    let mut stack = vec![(String::new(), root.to_path_buf())];
    while let Some((name, file)) = stack.pop() {
        let code = code_of(&file);
        let dir = if name.is_empty() {
            src.to_path_buf()
        } else if file.file_name().is_some_and(|f| f == "mod.rs") {
            file.parent().expect("dir").to_path_buf()
        } else {
            file.with_extension("")
        };
        for line in code.lines() {
            let line = line.trim();
            let Some(rest) = line
                .strip_prefix("mod ")
                .or_else(|| line.split_once(" mod ").map(|(_, r)| r))
            else {
                continue;
            };
            let Some(child) = rest.strip_suffix(';') else {
                continue; // an inline `mod x { ... }`: part of this file
            };
            let child_name = if name.is_empty() {
                child.to_string()
            } else {
                format!("{name}::{child}")
            };
            let file = [
                dir.join(format!("{child}.rs")),
                dir.join(child).join("mod.rs"),
            ]
            .into_iter()
            .find(|f| f.is_file())
            .unwrap_or_else(|| panic!("module {child_name} has no file under {}", dir.display()));
            found.insert(child_name.clone(), file.clone());
            stack.push((child_name, file));
        }
    }
    found
}

/// The names the crate root re-exports (`pub use a::b::{C, D}` and
/// `pub use a::E as F`), mapped to the module that holds them.
fn root_exports(root_code: &str, modules: &BTreeMap<String, PathBuf>) -> BTreeMap<String, String> {
    let mut exports = BTreeMap::new();
    for statement in root_code.split(';') {
        let statement = statement.trim();
        let Some(path) = statement
            .strip_prefix("pub use ")
            .or_else(|| statement.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let path = path.replace(char::is_whitespace, "");
        let (prefix, items) = match path.split_once("::{") {
            Some((prefix, items)) => (prefix.to_string(), items.trim_end_matches('}').to_string()),
            None => match path.rsplit_once("::") {
                Some((prefix, item)) => (prefix.to_string(), item.to_string()),
                None => continue,
            },
        };
        let module = longest_module(&prefix, modules);
        for item in items.split(',').filter(|i| !i.is_empty()) {
            let shown = item.rsplit("as").next().unwrap_or(item);
            exports.insert(shown.to_string(), module.clone());
        }
    }
    exports
}

/// The longest prefix of `path` (`a::b::C`) that names a module.
fn longest_module(path: &str, modules: &BTreeMap<String, PathBuf>) -> String {
    let segments: Vec<&str> = path.split("::").collect();
    (0..=segments.len())
        .rev()
        .map(|n| segments[..n].join("::"))
        .find(|candidate| modules.contains_key(candidate))
        .unwrap_or_default()
}

/// The modules `code` (of module `from`) refers to through `crate::`,
/// `super::` or `self::` paths, including inside `use` groups.
fn references(
    from: &str,
    code: &str,
    modules: &BTreeMap<String, PathBuf>,
    exports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut targets = BTreeSet::new();
    let parent = |m: &str| {
        m.rsplit_once("::")
            .map_or(String::new(), |(p, _)| p.to_string())
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut push = |base: String, rest: &str| {
        // `rest` is what follows `base::`: a path, or a `{...}` group.
        let rest = rest.trim_start();
        let paths: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end]
                .split(',')
                .map(|p| p.trim().split("::{").next().unwrap_or("").to_string())
                .collect()
        } else {
            vec![rest.chars().take_while(|&c| ident(c) || c == ':').collect()]
        };
        for path in paths {
            let full = match (base.is_empty(), path.is_empty()) {
                (_, true) => base.clone(),
                (true, false) => path.clone(),
                (false, false) => format!("{base}::{path}"),
            };
            let mut module = longest_module(&full, modules);
            if module.is_empty()
                && let Some(first) = full.split("::").next()
                && let Some(holder) = exports.get(first)
            {
                module = holder.clone();
            }
            targets.insert(module);
        }
    };
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && code[..at].ends_with(|c: char| ident(c)) {
            continue; // `corral_crate::` or similar
        }
        push(String::new(), &code[at + "crate::".len()..]);
    }
    for (at, _) in code.match_indices("super::") {
        if at > 0 && code[..at].ends_with(|c: char| ident(c) || c == ':') {
            continue; // `super::super::` is handled from its first segment
        }
        let mut base = parent(from);
        let mut rest = &code[at + "super::".len()..];
        while let Some(more) = rest.strip_prefix("super::") {
            base = parent(&base);
            rest = more;
        }
        push(base, rest);
    }
    targets.retain(|t| {
        let related = t == from
            || t.is_empty()
            || from.starts_with(&format!("{t}::"))
            || t.starts_with(&format!("{from}::"));
        !related
    });
    targets
}

/// A cycle in `graph`, if there is one, as the modules along it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(cycle) = visit(next, graph, state, path) {
                        return Some(cycle);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0
            && let Some(cycle) = visit(node, graph, &mut state, &mut Vec::new())
        {
            return Some(cycle);
        }
    }
    None
}

/// The module graph of the crate rooted at `root`.
fn module_graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules(root);
    let exports = root_exports(&code_of(root), &modules);
    modules
        .iter()
        .map(|(name, file)| {
            let code = code_of(file);
            (name.clone(), references(name, &code, &modules, &exports))
        })
        .collect()
}

const CRATE_ROOTS: &[&str] = &[
    "host/corral/src/lib.rs",
    "host/corral-mcp/src/lib.rs",
    "host/corral-dist/src/lib.rs",
    "host/corral-cli/src/main.rs",
];

#[test]
fn no_module_imports_another_in_a_cycle() {
    for root in CRATE_ROOTS {
        let graph = module_graph(&repository_root().join(root));
        assert!(graph.len() > 2, "{root}: found only {:?}", graph.keys());
        if let Some(cycle) = find_cycle(&graph) {
            panic!("{root}: import cycle {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    // The checker itself, on a graph with and without a cycle.
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.insert("a".into(), ["b".to_string()].into());
    graph.insert("b".into(), ["c".to_string()].into());
    graph.insert("c".into(), BTreeSet::new());
    assert_eq!(find_cycle(&graph), None);
    graph.insert("c".into(), ["a".to_string()].into());
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    // And the reference parser: a group, a `super::` path, ownership ignored.
    let modules: BTreeMap<String, PathBuf> = ["", "x", "x::y", "z", "w"]
        .into_iter()
        .map(|m| (m.to_string(), PathBuf::new()))
        .collect();
    let exports = [("Thing".to_string(), "w".to_string())].into();
    let code = "use crate::{z::Z, Thing};\nuse super::y::Q;\nuse super::Parent;";
    let found = references("x::y::deep", code, &modules, &exports);
    assert_eq!(found, ["w".to_string(), "z".to_string()].into());
}

/// Every `.rs` file under `dir`, skipping `target` directories.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                if !path.ends_with("target") && !path.ends_with("node_modules") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn no_source_file_is_over_500_lines() {
    let root = repository_root();
    let mut long = Vec::new();
    for dir in [
        "host",
        "guest-sdk",
        "tests",
        "sample-tools",
        "fuzz/fuzz_targets",
    ] {
        for file in rust_files(&root.join(dir)) {
            let lines = std::fs::read_to_string(&file)
                .expect("read")
                .lines()
                .count();
            if lines > MAX_LINES {
                long.push(format!("{} ({lines} lines)", file.display()));
            }
        }
    }
    assert!(long.is_empty(), "split these files: {}", long.join(", "));
}

#[test]
fn nothing_outside_the_sandbox_creates_a_store() {
    let root = repository_root();
    let sandbox = root.join("host/corral/src/sandbox");
    for file in rust_files(&root.join("host/corral/src")) {
        if file.starts_with(&sandbox) {
            continue;
        }
        let code = code_of(&file);
        assert!(
            !code.contains("Store::new("),
            "{} creates a Store; guest code runs only through sandbox::run",
            file.display()
        );
    }
}

#[test]
fn the_guest_sdk_carries_the_repository_wit() {
    let root = repository_root();
    let ours = std::fs::read_to_string(root.join("wit/corral-tool.wit")).expect("wit");
    let packaged = std::fs::read_to_string(root.join("guest-sdk/wit/corral-tool.wit"))
        .expect("guest-sdk/wit/corral-tool.wit (the SDK's packaged copy)");
    assert!(
        ours == packaged,
        "guest-sdk/wit/corral-tool.wit differs from wit/corral-tool.wit; copy it over"
    );
    let entries: Vec<_> = std::fs::read_dir(root.join("guest-sdk/wit"))
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "guest-sdk/wit holds only the contract: {entries:?}"
    );
}

#[test]
fn the_library_has_no_cli_server_or_exporter_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(repository_root())
        .args([
            "tree",
            "--offline",
            "-p",
            "corral",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    for banned in [
        "clap",
        "axum",
        "rmcp",
        "metrics-exporter-prometheus",
        "tracing-subscriber",
        "opentelemetry",
        "opentelemetry_sdk",
        "opentelemetry-otlp",
        "tracing-opentelemetry",
    ] {
        assert!(
            !tree.lines().any(|l| l.starts_with(&format!("{banned} "))),
            "corral depends on {banned}, which belongs in corral-cli or corral-mcp"
        );
    }
    assert!(tree.lines().any(|l| l.starts_with("wasmtime ")), "{tree}");
}

#[test]
fn every_test_security_md_names_exists() {
    let root = repository_root();
    let security = std::fs::read_to_string(root.join("SECURITY.md")).expect("SECURITY.md");
    let mut sources = String::new();
    for dir in [
        "tests/all",
        "host/corral/src",
        "host/corral-mcp/src",
        "host/corral-dist/src",
    ] {
        for file in rust_files(&root.join(dir)) {
            sources.push_str(&std::fs::read_to_string(file).expect("read"));
        }
    }
    let mut named = 0;
    // The rows of the hostile-classes table start with their number.
    let rows = security.lines().filter(|l| {
        l.strip_prefix("| ")
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    });
    for line in rows {
        for path in line.split('`').skip(1).step_by(2) {
            let Some(function) = path.rsplit("::").next() else {
                continue;
            };
            if function == "*" || !path.contains("::") {
                continue;
            }
            named += 1;
            assert!(
                sources.contains(&format!("fn {function}(")),
                "SECURITY.md names `{path}`, which is not a test"
            );
        }
    }
    assert!(named >= 25, "SECURITY.md names only {named} tests");
}
