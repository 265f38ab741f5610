//! One tool-name rule across languages: the host's (`corral-names`, which
//! the Rust `#[tool]` macro shares) against the copies in the Python and
//! JavaScript SDK helpers. Each helper's pattern and reserved list are read
//! from its source and run against the same names as the host's rule, so a
//! change on one side only fails here.

use crate::support::repository_root;

/// Names on both sides of every part of the rule.
fn samples() -> Vec<String> {
    let mut names: Vec<String> = [
        "word_count",
        "A1_b2",
        "x",
        "",
        "a-b",
        "a b",
        "é",
        "a.b",
        "tool\u{202e}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    names.push("a".repeat(corral::MAX_NAME_LEN));
    names.push("a".repeat(corral::MAX_NAME_LEN + 1));
    names.extend(corral::RESERVED_NAMES.iter().map(|s| s.to_string()));
    names
}

/// The text between `start` and the next `end` in `source`.
fn between<'a>(source: &'a str, start: &str, end: &str, file: &str) -> &'a str {
    let at = source
        .find(start)
        .unwrap_or_else(|| panic!("{file}: no `{start}`"))
        + start.len();
    let len = source[at..]
        .find(end)
        .unwrap_or_else(|| panic!("{file}: no `{end}` after `{start}`"));
    &source[at..at + len]
}

/// The quoted strings of a list literal.
fn quoted(list: &str, quote: char) -> Vec<String> {
    list.split(quote)
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Checks one SDK's copy (its name regex and reserved list) against the
/// host's rule on every sample name.
fn check(file: &str, pattern: &str, reserved: &[String]) {
    let mut host_reserved: Vec<String> = corral::RESERVED_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut sdk_reserved = reserved.to_vec();
    host_reserved.sort();
    sdk_reserved.sort();
    assert_eq!(sdk_reserved, host_reserved, "{file}: reserved names");
    let regex = regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{file}: {pattern}: {e}"));
    for name in samples() {
        let sdk = regex.is_match(&name) && !reserved.contains(&name);
        assert_eq!(
            sdk,
            corral::check_name(&name).is_ok(),
            "{file} and the host disagree on {name:?}"
        );
    }
}

#[test]
fn the_python_and_javascript_helpers_follow_the_host_name_rule() {
    let root = repository_root();
    let python_file = "guest-sdk/python/corral_tool/__init__.py";
    let python = std::fs::read_to_string(root.join(python_file)).expect("python helper");
    let pattern = between(&python, "_NAME = re.compile(r\"", "\")", python_file);
    let reserved = quoted(between(&python, "_RESERVED = (", ")", python_file), '"');
    check(python_file, pattern, &reserved);

    let js_file = "guest-sdk/js/corral-tool.js";
    let js = std::fs::read_to_string(root.join(js_file)).expect("javascript helper");
    let pattern = between(&js, "const NAME = /", "/;", js_file);
    let reserved = quoted(between(&js, "const RESERVED = [", "];", js_file), '\'');
    check(js_file, pattern, &reserved);
}
