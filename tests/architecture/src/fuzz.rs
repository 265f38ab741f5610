//! The cargo-fuzz targets' shape, checked from their source, so that CI
//! needs no build of the fuzz workspace (its own lock file, nightly flags,
//! a second copy of the host's dependency tree). A target is a thin
//! wrapper: its body is `fuzz/invariants/TARGET.rs`, which the workspace's
//! own tests compile and run over the named seeds (`tests/all/fuzz_seeds.rs`,
//! and corral-dist for `oci_manifest`). What the wrapper adds is checked
//! here, item by item:
//!
//! - `#![no_main]`, `use libfuzzer_sys::fuzz_target;`,
//!   `#[path = "../invariants/TARGET.rs"] mod invariants;` and one
//!   `fuzz_target!(|data: &[u8]| ...)`, whose body calls
//!   `invariants::check(data)`: as its value when `check` returns nothing
//!   (libfuzzer-sys takes `()`), or as a statement in a block otherwise;
//! - `fuzz/invariants/TARGET.rs` has `pub fn check(data: &[u8])`;
//! - `fuzz/Cargo.toml` has a `[[bin]]` of that name and path;
//! - a workspace test includes the invariants with `#[path]`.

use std::path::Path;

use crate::Error;

/// The problems of the fuzz targets under `repo_root/fuzz`, one line each
/// (empty when every target is a thin wrapper as above), and how many
/// targets were checked.
pub fn fuzz_target_problems(repo_root: &Path) -> Result<(Vec<String>, usize), Error> {
    let fuzz = repo_root.join("fuzz");
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|e| Error::new(format!("{}: {e}", path.display())))
    };
    let manifest = read(&fuzz.join("Cargo.toml"))?;
    let includers = [
        read(&repo_root.join("tests/all/fuzz_seeds.rs"))?,
        read(&repo_root.join("host/corral-dist/src/manifest.rs"))?,
    ];
    let mut problems = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(fuzz.join("fuzz_targets"))
        .map_err(|e| Error::new(format!("fuzz/fuzz_targets: {e}")))?
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".rs"))
                .map(str::to_string)
        })
        .collect();
    names.sort();
    for name in &names {
        let target = fuzz.join("fuzz_targets").join(format!("{name}.rs"));
        let invariants = fuzz.join("invariants").join(format!("{name}.rs"));
        let mut problem = |what: String| problems.push(format!("fuzz target `{name}`: {what}"));
        if !manifest.contains(&format!(
            "name = \"{name}\"\npath = \"fuzz_targets/{name}.rs\""
        )) {
            problem("fuzz/Cargo.toml has no [[bin]] of this name and path".into());
        }
        let include = format!("fuzz/invariants/{name}.rs\"]");
        if !includers.iter().any(|text| text.contains(&include)) {
            problem(format!(
                "no workspace test includes fuzz/invariants/{name}.rs (tests/all/fuzz_seeds.rs)"
            ));
        }
        let returns_unit = match check_signature(&read(&invariants)?) {
            Some(unit) => unit,
            None => {
                problem(format!(
                    "fuzz/invariants/{name}.rs has no `pub fn check(data: &[u8])`"
                ));
                continue;
            }
        };
        let file = syn::parse_file(&read(&target)?)
            .map_err(|e| Error::new(format!("{}: {e}", target.display())))?;
        for issue in wrapper_issues(&file, name, returns_unit) {
            problem(issue);
        }
    }
    Ok((problems, names.len()))
}

/// Whether the invariants' `pub fn check(data: &[u8])` returns `()`;
/// `None` when there is no such function.
fn check_signature(source: &str) -> Option<bool> {
    let file = syn::parse_file(source).ok()?;
    file.items.iter().find_map(|item| match item {
        syn::Item::Fn(f)
            if f.sig.ident == "check"
                && matches!(f.vis, syn::Visibility::Public(_))
                && f.sig.inputs.len() == 1
                && compact(&f.sig.inputs) == "data:&[u8]" =>
        {
            Some(matches!(f.sig.output, syn::ReturnType::Default))
        }
        _ => None,
    })
}

/// What in the target file `file` is not the thin wrapper of `name`.
fn wrapper_issues(file: &syn::File, name: &str, returns_unit: bool) -> Vec<String> {
    let mut issues = Vec::new();
    if !file.attrs.iter().any(|a| compact(a) == "#![no_main]") {
        issues.push("no `#![no_main]`".into());
    }
    let wanted_mod = format!("#[path=\"../invariants/{name}.rs\"]modinvariants;");
    let mut calls = 0;
    for item in &file.items {
        match item {
            syn::Item::Use(u) if compact(u) == "uselibfuzzer_sys::fuzz_target;" => {}
            syn::Item::Mod(m) if compact(m) == wanted_mod => {}
            syn::Item::Macro(m) if m.mac.path.is_ident("fuzz_target") => {
                let body = m.mac.tokens.to_string().split_whitespace().collect::<String>();
                let value = body == "|data:&[u8]|invariants::check(data)";
                let statement = body == "|data:&[u8]|{invariants::check(data);}";
                if !(statement || value && returns_unit) {
                    issues.push(format!(
                        "its fuzz_target! body is `{}`; write `|data: &[u8]| invariants::check(data)` \
                         (or `{{ invariants::check(data); }}` when check returns a value): the \
                         target's logic belongs in fuzz/invariants/{name}.rs, which CI compiles",
                        m.mac.tokens
                    ));
                }
                calls += 1;
            }
            other => issues.push(format!(
                "`{}` is more than a wrapper: put it in fuzz/invariants/{name}.rs, which CI compiles",
                compact(other).chars().take(60).collect::<String>()
            )),
        }
    }
    if calls != 1 {
        issues.push(format!("{calls} fuzz_target! invocations, not one"));
    }
    issues
}

/// `tokens` as text without white space, for comparing shapes.
fn compact(tokens: &impl quote::ToTokens) -> String {
    tokens
        .to_token_stream()
        .to_string()
        .split_whitespace()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::wrapper_issues;

    fn issues(source: &str, returns_unit: bool) -> Vec<String> {
        wrapper_issues(&syn::parse_file(source).expect("parses"), "t", returns_unit)
    }

    const THIN: &str = "#![no_main]\nuse libfuzzer_sys::fuzz_target;\n#[path = \"../invariants/t.rs\"]\nmod invariants;\nfuzz_target!(|data: &[u8]| invariants::check(data));\n";

    #[test]
    fn a_thin_wrapper_passes_and_anything_more_is_named() {
        assert!(issues(THIN, true).is_empty(), "{:?}", issues(THIN, true));
        // A check that returns a value needs the statement form.
        assert_eq!(issues(THIN, false).len(), 1);
        let block = THIN.replace(
            "invariants::check(data));",
            "{ invariants::check(data); });",
        );
        assert!(issues(&block, false).is_empty());
        let extra = format!("{THIN}fn params() -> u32 {{ 1 }}\n");
        assert!(issues(&extra, true)[0].contains("more than a wrapper"));
        let other_body = THIN.replace("invariants::check(data)", "invariants::check(data, 1)");
        assert!(issues(&other_body, true)[0].contains("fuzz_target! body"));
        let no_main = THIN.replace("#![no_main]\n", "");
        assert_eq!(issues(&no_main, true), ["no `#![no_main]`"]);
        let wrong_path = THIN.replace("invariants/t.rs", "invariants/u.rs");
        assert_eq!(issues(&wrong_path, true).len(), 1);
    }
}
