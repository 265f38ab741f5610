//! `corral inspect`, golden: its text and JSON output for the `any_types`
//! component with its WIT beside it must be exactly `tests/inspect/types.txt`
//! and `types.json` (the directory and sha256 replaced by placeholders, the
//! sha256 checked separately). Regenerate with
//! `CORRAL_BLESS=1 cargo test -p corral-cli --test all foreign::inspect` and
//! review the diff. Also: a plugin of corral's world, a missing import, and a
//! file that is no component.

use std::path::Path;

use serde_json::Value;

use crate::cli::{corral, stdout_json};
use crate::support::{
    ANY_ASYNC, ANY_TYPES, HOSTILE, UNKNOWN_IMPORT, VERSIONS, guest, guest_sha256, plugin_dir,
    repository_root,
};

/// `corral inspect FILE [--json]` (the plugin directory is not used).
fn inspect(file: &Path, json: bool) -> std::process::Output {
    let file = file.to_str().expect("utf-8 path");
    let mut args = vec!["inspect", file];
    if json {
        args.push("--json");
    }
    corral(Path::new("/nonexistent"), &args)
}

/// Compares `actual` with the golden file `name`, or writes it when blessing.
fn golden(name: &str, actual: &str) {
    let path = repository_root().join("tests/inspect").join(name);
    if std::env::var_os("CORRAL_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} is missing; run with CORRAL_BLESS=1 to create it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{}:\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

#[test]
fn inspect_output_is_golden() {
    let dir = plugin_dir(&[]);
    let file = dir.path().join("types.wasm");
    std::fs::copy(guest(ANY_TYPES), &file).expect("copy");
    std::fs::copy(
        repository_root().join("tests/fixtures/any_types/wit/types.wit"),
        dir.path().join("types.wit"),
    )
    .expect("wit");
    let sha = guest_sha256(ANY_TYPES);
    let redact = |text: &str| {
        text.replace(&dir.path().display().to_string(), "<dir>")
            .replace(&sha, "<sha256>")
    };

    let out = inspect(&file, false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains(&format!("sha256:    {sha}")), "{text}");
    golden("types.txt", &redact(&text));

    let out = inspect(&file, true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = stdout_json(&out);
    assert_eq!(json["sha256"], sha.as_str());
    golden(
        "types.json",
        &redact(&serde_json::to_string_pretty(&json).expect("json")),
    );
    // Every tool it lists is one the host then serves, with that schema.
    assert_eq!(json["any_component"], true);
    assert_eq!(json["tools"].as_array().map(Vec::len), Some(9));
    assert!(
        json["imports"]
            .as_array()
            .expect("imports")
            .iter()
            .all(|i| i["provided"] == true)
    );
}

#[test]
fn inspect_names_a_plugin_of_corrals_world_a_missing_import_and_a_bad_file() {
    let out = inspect(&guest(HOSTILE), false);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("world:     corral:tool/plugin@"), "{text}");
    assert!(
        text.contains("names its tools when it runs `describe`"),
        "{text}"
    );

    let json = stdout_json(&inspect(&guest(UNKNOWN_IMPORT), true));
    let missing: Vec<&Value> = json["imports"]
        .as_array()
        .expect("imports")
        .iter()
        .filter(|i| i["provided"] == false)
        .collect();
    assert!(!missing.is_empty(), "{json}");
    assert!(
        missing.iter().all(|i| i["access"]
            .as_str()
            .is_some_and(|a| a.contains("cannot load"))),
        "{json}"
    );

    // componentize-qjs imports the contract's types interface, which has no
    // function: linked with nothing, not missing; and the helper's host and
    // client interfaces of contract 0.3.0, which the host provides.
    let json = stdout_json(&inspect(&guest(VERSIONS), true));
    let types = json["imports"]
        .as_array()
        .expect("imports")
        .iter()
        .find(|i| i["name"] == "corral:tool/types@0.3.0")
        .unwrap_or_else(|| panic!("no types import: {json}"));
    assert_eq!(types["provided"], true, "{json}");
    assert_eq!(types["access"], "types only: nothing to call", "{json}");
    assert!(
        json["imports"]
            .as_array()
            .expect("imports")
            .iter()
            .all(|i| i["provided"] == true),
        "{json}"
    );

    let out = inspect(&guest(ANY_ASYNC), false);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("async ABI"), "{err}");

    let dir = plugin_dir(&[]);
    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, "not wasm").expect("write");
    let out = inspect(&junk, false);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("junk.wasm") && err.contains("not a WebAssembly file"),
        "{err}"
    );
}
