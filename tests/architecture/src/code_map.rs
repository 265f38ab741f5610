//! `ARCHITECTURE.md`'s code map, checked against the host crates' files.
//!
//! The document names files in backticks, by their path inside the crate's
//! `src/` or by its tail (`sandbox/versions.rs`, or `versions.rs` in the
//! `sandbox/` bullet), and directories with a trailing slash (`stages/`),
//! whose bullet describes the module. So a file `host/<crate>/src/<path>`
//! is named when a backticked span (outside code blocks), after dropping a
//! leading `host/<crate>/src/` or `<crate>/src/` (which ties the span to
//! that crate; a span without one may name a file of any crate), is:
//!
//! - `<path>` or a tail of it at a `/` that ends in `.rs` (`sandbox/versions.rs`,
//!   `versions.rs`), but not the bare `mod.rs`, `lib.rs` or `main.rs`, which
//!   name no one file;
//! - for `<dir>/mod.rs`, `<dir>/` or a tail of it (`sandbox/http/`,
//!   `http/`): a directory names its own module file, not the files in it;
//! - for the crate root (`lib.rs`, `main.rs`), the crate's folder
//!   `host/<crate>` (its row in the Crates table), or `<crate>/src/lib.rs`.

use std::path::{Path, PathBuf};

use crate::Error;

/// The `.rs` files under `host/*/src/` that `ARCHITECTURE.md` does not
/// name by the rule above, as paths from `repo_root`
/// (`host/corral/src/sandbox/budget.rs`), sorted.
pub fn unmapped_files(repo_root: &Path) -> Result<Vec<String>, Error> {
    let doc_path = repo_root.join("ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&doc_path)
        .map_err(|e| Error::new(format!("{}: {e}", doc_path.display())))?;
    let spans = spans(&doc);
    let mut missing = Vec::new();
    for crate_dir in host_crates(repo_root)? {
        let name = file_name(&crate_dir);
        let src = crate_dir.join("src");
        for file in rust_files(&src)? {
            let relative = file
                .strip_prefix(&src)
                .unwrap_or(&file)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            if !spans.iter().any(|s| names(s, &name, &relative)) {
                missing.push(format!("host/{name}/src/{relative}"));
            }
        }
    }
    missing.sort();
    Ok(missing)
}

/// The backticked spans of a Markdown text outside fenced code blocks,
/// with their white space collapsed (a span may break across lines).
fn spans(doc: &str) -> Vec<String> {
    let mut fenced = false;
    let mut text = String::new();
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            text.push_str(line);
            text.push('\n');
        }
    }
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// Whether `span` names the file `relative` (to `src/`) of crate `name`.
fn names(span: &str, name: &str, relative: &str) -> bool {
    let (tied, span) = match span.split_once("/src/") {
        Some((prefix, rest)) => {
            if prefix.rsplit('/').next() != Some(name) {
                return false;
            }
            (true, rest)
        }
        None => (false, span),
    };
    let tail = |of: &str, tail: &str| of == tail || of.ends_with(&format!("/{tail}"));
    match relative {
        "lib.rs" | "main.rs" => (tied && span == relative) || span == format!("host/{name}"),
        _ if span.ends_with('/') => relative
            .strip_suffix("mod.rs")
            .is_some_and(|dir| tail(dir.trim_end_matches('/'), span.trim_end_matches('/'))),
        _ => {
            let bare = matches!(span, "mod.rs" | "lib.rs" | "main.rs");
            span.ends_with(".rs") && (tied || !bare) && tail(relative, span)
        }
    }
}

/// The directories under `repo_root/host` that have a `src/`, sorted.
pub(crate) fn host_crates(repo_root: &Path) -> Result<Vec<PathBuf>, Error> {
    let host = repo_root.join("host");
    let entries =
        std::fs::read_dir(&host).map_err(|e| Error::new(format!("{}: {e}", host.display())))?;
    let mut crates: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    crates.sort();
    Ok(crates)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| Error::new(format!("{}: {e}", dir.display())))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::names;

    #[test]
    fn spans_name_files_by_path_tail_directory_or_crate() {
        assert!(names(
            "sandbox/versions.rs",
            "corral",
            "sandbox/versions.rs"
        ));
        assert!(names("versions.rs", "corral", "sandbox/versions.rs"));
        assert!(!names("ions.rs", "corral", "sandbox/versions.rs"));
        assert!(names("sandbox/http/", "corral", "sandbox/http/mod.rs"));
        assert!(names("http/", "corral", "sandbox/http/mod.rs"));
        assert!(!names("sandbox/", "corral", "sandbox/budget.rs"));
        assert!(!names("mod.rs", "corral", "foreign/mod.rs"));
        assert!(names("corral-mcp/src/http.rs", "corral-mcp", "http.rs"));
        assert!(!names("corral-mcp/src/http.rs", "corral", "http.rs"));
        assert!(names("host/corral-dist", "corral-dist", "lib.rs"));
        assert!(names("corral-mcp/src/lib.rs", "corral-mcp", "lib.rs"));
        assert!(!names("lib.rs", "corral-mcp", "lib.rs"));
    }
}
