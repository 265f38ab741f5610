//! The rules `ARCHITECTURE.md` states, checked: no source file over 500
//! lines, nothing outside the sandbox creates a `Store`, the guest SDK's WIT
//! is the repository's, the library depends on no CLI, HTTP server, MCP or
//! exporter crate, and every test `SECURITY.md` names exists.
//!
//! The import-cycle check moved to the `corral-architecture` crate
//! (`tests/architecture`, `cargo test -p corral-architecture`): it resolves
//! every path with syn, through re-exports, to the module that defines the
//! item, and also checks that the code map names every module file.

use std::path::{Path, PathBuf};

use crate::support::repository_root;

/// Longest source file allowed, in lines.
const MAX_LINES: usize = 500;

/// `path` with `//` comments removed (a line with a `"` before its `//` is
/// kept whole: the `//` may be inside a string).
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
        "fuzz/invariants",
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
    // The sandbox crate's store data cannot be built outside it, so the
    // compiler keeps a `Store<SandboxState>` inside; this keeps any other
    // store out of the other host crates too.
    let root = repository_root();
    let sandbox = root.join("host/corral-sandbox/src");
    let mut checked = 0;
    for file in rust_files(&root.join("host")) {
        if file.starts_with(&sandbox) {
            continue;
        }
        checked += 1;
        let code = code_of(&file);
        assert!(
            !code.contains("Store::new("),
            "{} creates a Store; guest code runs only through corral_sandbox::run",
            file.display()
        );
    }
    assert!(checked > 50, "found only {checked} host source files");
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

/// The lines of `cargo tree -e normal --prefix none` for `corral` with
/// the extra arguments `args`.
fn library_tree(args: &[&str]) -> String {
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
        .args(args)
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_library_has_no_cli_server_or_exporter_dependency() {
    let tree = library_tree(&[]);
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

/// An embedder who does not verify signatures builds the library without
/// OpenSSL: `corral-signature` (and sigstore with it) is behind the
/// default `signatures` feature. (`.ci/run` compiles that configuration.)
#[test]
fn the_library_without_signatures_needs_no_openssl() {
    let tree = library_tree(&["--no-default-features"]);
    for banned in [
        "openssl",
        "openssl-sys",
        "native-tls",
        "sigstore",
        "corral-signature",
    ] {
        assert!(
            !tree.lines().any(|l| l.starts_with(&format!("{banned} "))),
            "corral without default features depends on {banned}"
        );
    }
    assert!(tree.lines().any(|l| l.starts_with("wasmtime ")), "{tree}");
    assert!(
        library_tree(&[])
            .lines()
            .any(|l| l.starts_with("corral-signature ")),
        "the default features verify signatures"
    );
}

/// `guest-sdk/c` holds the C bindings of the 0.3.0 world, as
/// `scripts/c-bindings.sh` wrote them; its stamp names the sha256 of the
/// WIT they came from, which must be the WIT as it is.
#[test]
fn the_c_bindings_come_from_the_wit_as_it_is() {
    use sha2::{Digest as _, Sha256};
    let root = repository_root();
    let mut wits: Vec<PathBuf> = std::fs::read_dir(root.join("wit"))
        .expect("wit")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wit"))
        .collect();
    wits.sort();
    let mut hash = Sha256::new();
    for wit in &wits {
        hash.update(std::fs::read(wit).expect("wit"));
    }
    let digest = hex::encode(hash.finalize());
    let stamp =
        std::fs::read_to_string(root.join("guest-sdk/c/bindings.stamp")).expect("bindings.stamp");
    assert!(
        stamp.lines().any(|l| l == format!("{digest}  wit")),
        "guest-sdk/c was generated from another wit/ (stamp: {stamp:?}, now {digest}); \
         run scripts/c-bindings.sh"
    );
    for file in ["plugin.h", "plugin.c", "plugin_component_type.o"] {
        assert!(
            root.join("guest-sdk/c").join(file).is_file(),
            "guest-sdk/c/{file}"
        );
    }
}

#[test]
fn every_test_security_md_names_exists() {
    let root = repository_root();
    let security = std::fs::read_to_string(root.join("SECURITY.md")).expect("SECURITY.md");
    let mut sources = String::new();
    for dir in ["tests/all", "tests/library", "tests/architecture", "host"] {
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
