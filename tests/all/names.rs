//! One tool-name rule across languages: the host's (`corral-names`, which
//! the Rust `#[tool]` macro shares) against the Python and JavaScript SDK
//! helpers. Each helper's own check (`_names.name_problem`,
//! `names.js`'s `nameProblem`) runs on its own engine, a plain `python3` and
//! `node`, over the same names as the host's rule, and each helper's reserved
//! list is compared with the host's; a change on one side only fails here.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::repository_root;

/// Names on both sides of every part of the rule, including the ones
/// regex engines disagree on (a trailing newline before `$`, non-ASCII
/// letters and digits).
fn samples() -> Vec<String> {
    let mut names: Vec<String> = [
        "word_count",
        "A1_b2",
        "x",
        "_",
        "",
        "a-b",
        "a b",
        "é",
        "\u{661}",
        "a.b",
        "tool\n",
        "\ntool",
        "tool\r",
        "tool\u{202e}",
        "tool\u{0}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    names.push("a".repeat(corral::MAX_NAME_LEN));
    names.push("a".repeat(corral::MAX_NAME_LEN + 1));
    names.extend(corral::RESERVED_NAMES.iter().map(|s| s.to_string()));
    names
}

/// Runs `program args...` with the samples as JSON on stdin; it prints
/// `{"valid": [bool per sample], "reserved": [name]}`.
fn run(program: &str, args: &[&str]) -> Value {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(json!(samples()).to_string().as_bytes())
        .expect("write samples");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{program} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Checks one helper's verdicts and reserved list against the host's rule.
fn check(helper: &str, got: &Value) {
    let mut reserved: Vec<String> =
        serde_json::from_value(got["reserved"].clone()).expect("reserved list");
    let mut host_reserved: Vec<String> = corral::RESERVED_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    reserved.sort();
    host_reserved.sort();
    assert_eq!(reserved, host_reserved, "{helper}: reserved names");
    let valid = got["valid"].as_array().expect("verdicts");
    let names = samples();
    assert_eq!(valid.len(), names.len(), "{helper}: one verdict per name");
    for (name, verdict) in names.iter().zip(valid) {
        assert_eq!(
            verdict.as_bool().expect("bool"),
            corral::check_name(name).is_ok(),
            "{helper} and the host disagree on {name:?}"
        );
    }
}

#[test]
fn the_python_helper_follows_the_host_name_rule() {
    let dir = repository_root().join("guest-sdk/python/corral_tool");
    let script = format!(
        "import json, sys\n\
         sys.path.insert(0, {dir:?})\n\
         import _names\n\
         names = json.load(sys.stdin)\n\
         print(json.dumps({{'valid': [_names.name_problem(n) is None for n in names],\n\
                           'reserved': list(_names.RESERVED)}}))\n",
        dir = dir.display().to_string()
    );
    check(
        "guest-sdk/python/corral_tool/_names.py",
        &run("python3", &["-c", &script]),
    );
}

#[test]
fn the_javascript_helper_follows_the_host_name_rule() {
    let file = repository_root().join("guest-sdk/js/names.js");
    let script = format!(
        "import {{ nameProblem, RESERVED }} from {url:?};\n\
         let input = '';\n\
         for await (const chunk of process.stdin) input += chunk;\n\
         const names = JSON.parse(input);\n\
         console.log(JSON.stringify({{ valid: names.map((n) => nameProblem(n) === null),\n\
                                       reserved: RESERVED }}));\n",
        url = format!("file://{}", file.display())
    );
    check(
        "guest-sdk/js/names.js",
        &run("node", &["--input-type=module", "-e", &script]),
    );
}
