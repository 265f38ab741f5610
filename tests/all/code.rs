//! Code mode from the command line: `corral code FILE.js` runs a script
//! through the built-in `execute_code`, its tool calls behind the same gate
//! flags as `corral call`; `corral describe --typescript` prints the
//! declarations a script calls by, golden for the Rust samples and an
//! any-component tool (`tests/fixtures/typescript/declarations.d.ts`;
//! regenerate it with `CORRAL_BLESS=1 cargo test -p corral-cli --test all
//! code::` and review the diff).

use serde_json::json;

use crate::cli::{corral, stdout_json};
use crate::support::{ANY_TYPES, ENCODE, SAMPLES, TEXT, guest, plugin_dir, repository_root};

fn script(dir: &std::path::Path, code: &str) -> String {
    let path = dir.join("script.js");
    std::fs::write(&path, code).expect("write the script");
    path.to_str().expect("utf-8 path").to_string()
}

#[test]
fn a_script_prints_its_result_and_its_console_lines_escaped() {
    let dir = plugin_dir(&[ENCODE, TEXT]);
    // A tool's output carrying a terminal escape, logged by the script.
    let file = script(
        dir.path(),
        "const hash = await tools.sha256({text: 'abc'});\n\
         const raw = await tools.base64_decode({base64: 'G1szMW1yZWQ='});\n\
         console.log('decoded', raw.text);\n\
         return { bytes: hash.bytes, same: hash.sha256 === (await tools.sha256({text: 'abc'})).sha256 };",
    );
    let out = corral(dir.path(), &["code", &file]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(stdout_json(&out), json!({"bytes": 3, "same": true}));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("console.info: decoded"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "a raw escape reached the terminal: {stderr:?}"
    );
    assert!(stderr.contains("\\u{1b}[31mred"), "{stderr}");

    let out = corral(dir.path(), &["code", &file, "--json"]);
    let whole = stdout_json(&out);
    let tools: Vec<&str> = whole["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["tool"].as_str().expect("tool"))
        .collect();
    assert_eq!(tools, ["sha256", "base64_decode", "sha256"]);
}

#[test]
fn approving_the_script_approves_none_of_its_gated_calls() {
    let dir = plugin_dir(&[ENCODE]);
    let file = script(
        dir.path(),
        "try { await tools.sha256({text: 'a'}); return 'ran' }\n\
         catch (e) { return [e.kind, e.code] }",
    );
    // The script itself may run; the gated tool inside it is refused.
    let out = corral(
        dir.path(),
        &[
            "code",
            &file,
            "--require-approval",
            "sha256",
            "--approve",
            "deny",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(stdout_json(&out), json!(["denied", "rejected"]));
    // Gating the script itself stops it before it runs.
    let out = corral(
        dir.path(),
        &[
            "code",
            &file,
            "--require-approval",
            "execute_code",
            "--approve",
            "deny",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

#[test]
fn an_uncaught_exception_fails_with_its_line() {
    let dir = plugin_dir(&[ENCODE]);
    let file = script(dir.path(), "const a = 1;\nthrow new RangeError('too far');");
    let out = corral(dir.path(), &["code", &file]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("RangeError: too far"), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
}

#[test]
fn describe_prints_the_typescript_a_script_calls_by() {
    let dir = plugin_dir(&[ENCODE]);
    let out = corral(dir.path(), &["describe", "sha256", "--typescript"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("declare const tools: {\n"), "{text}");
    assert!(text.contains("  sha256(args: {\n"), "{text}");
    assert!(!text.contains("base64_encode"), "{text}");
    let all = corral(dir.path(), &["describe", "--typescript"]);
    let all = String::from_utf8_lossy(&all.stdout);
    assert!(
        all.contains("base64_encode(args") && all.contains("sha256(args"),
        "{all}"
    );
    assert!(!all.contains("execute_code(args"), "{all}");
}

#[test]
fn the_declarations_of_the_samples_and_an_any_component_tool_are_golden() {
    let dir = plugin_dir(SAMPLES);
    std::fs::copy(guest(ANY_TYPES), dir.path().join("types.wasm")).expect("copy");
    std::fs::copy(
        repository_root().join("tests/fixtures/any_types/wit/types.wit"),
        dir.path().join("types.wit"),
    )
    .expect("wit");
    let out = corral(dir.path(), &["describe", "--typescript"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let actual = String::from_utf8(out.stdout).expect("utf-8");
    let golden = repository_root().join("tests/fixtures/typescript/declarations.d.ts");
    if std::env::var_os("CORRAL_BLESS").is_some() {
        std::fs::create_dir_all(golden.parent().expect("dir")).expect("dir");
        std::fs::write(&golden, &actual).expect("bless");
        return;
    }
    let expected = std::fs::read_to_string(&golden)
        .unwrap_or_else(|_| panic!("{} is missing; run with CORRAL_BLESS=1", golden.display()));
    assert!(
        expected == actual,
        "the declarations changed; review, then bless with CORRAL_BLESS=1:\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}
