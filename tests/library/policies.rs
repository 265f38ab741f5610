//! Policy files, golden: every file in `tests/policies/invalid/` must fail with
//! exactly the text in the `.err` file beside it, and every file in
//! `tests/policies/valid/` must parse to the JSON in the `.json` file beside
//! it. Regenerate the expectations with
//! `CORRAL_BLESS=1 cargo test -p corral-cli --test all policies::` and review
//! the diff.

use std::path::{Path, PathBuf};

use corral::Limits;
use corral::Policy;

/// The golden folders, relative to the repository's `tests/` folder; paths in
/// messages are shown relative to it, so that they are stable.
const INVALID: &str = "policies/invalid";
const VALID: &str = "policies/valid";

/// The repository's `tests/` folder.
fn tests_dir() -> PathBuf {
    crate::support::repository_root().join("tests")
}

/// `text` with the `tests/` folder's absolute path taken out.
fn relative(text: &str) -> String {
    text.replace(&format!("{}/", tests_dir().display()), "")
}

fn cases(dir: &str) -> Vec<PathBuf> {
    let dir = tests_dir().join(dir);
    let dir = dir.display();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.to_string())
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cases in {dir}");
    files
}

/// Compares `actual` with the expectation file, or writes it when blessing.
fn check(expected_path: &Path, actual: &str) -> Option<String> {
    if std::env::var_os("CORRAL_BLESS").is_some() {
        std::fs::write(expected_path, actual).expect("write expectation");
        return None;
    }
    let expected = std::fs::read_to_string(expected_path).unwrap_or_else(|_| {
        panic!(
            "{} is missing; run with CORRAL_BLESS=1 to create it",
            expected_path.display()
        )
    });
    (expected != actual).then(|| {
        format!(
            "{}:\n--- expected\n{expected}\n--- actual\n{actual}",
            expected_path.display()
        )
    })
}

#[test]
fn invalid_policies_fail_with_their_golden_message() {
    let mut mismatches = Vec::new();
    for case in cases(INVALID) {
        let text = std::fs::read_to_string(&case).expect("read case");
        let actual = match Policy::parse(&text, &case) {
            Ok(policy) => panic!("{} parsed, but must fail: {policy:?}", case.display()),
            Err(err) => relative(&format!("{err}\n")),
        };
        mismatches.extend(check(&case.with_extension("err"), &actual));
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn valid_policies_parse_to_their_golden_form() {
    let mut mismatches = Vec::new();
    for case in cases(VALID) {
        let text = std::fs::read_to_string(&case).expect("read case");
        let policy =
            Policy::parse(&text, &case).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        let base = std::fs::canonicalize(tests_dir().join(VALID)).expect("valid dir");
        let grants: Vec<String> = policy
            .grants(&corral::effective_limits(
                &Limits::default(),
                &policy.limits,
                None,
            ))
            .into_iter()
            .map(|line| line.replace(&base.display().to_string(), "<policy dir>"))
            .collect();
        let rendered = serde_json::json!({
            "policy": policy,
            "context": policy.context.as_ref().map(|c| c.describe()),
            "grants": grants,
        });
        let actual = format!(
            "{}\n",
            serde_json::to_string_pretty(&rendered).expect("json")
        );
        mismatches.extend(check(&case.with_extension("json"), &actual));
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
