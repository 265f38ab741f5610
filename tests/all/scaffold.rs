//! `corral new`: for each language, a new project builds to a component with
//! its one command and passes its own test, which calls the tool in the
//! sandbox with this build's `corral`.

use std::path::Path;
use std::process::Command;

use crate::support;

/// Runs `corral new LANGUAGE NAME` in a temporary directory, then the
/// project's `test.sh`; answers the test's output.
fn scaffold_and_test(language: &str) -> String {
    scaffold_and_test_then(language, |_| {})
}

/// As `scaffold_and_test`, then `more` with the project's directory (still
/// there while it runs).
fn scaffold_and_test_then(language: &str, more: impl FnOnce(&Path)) -> String {
    let dir = tempfile::tempdir().expect("dir");
    let name = format!("hello_{language}");
    let corral = env!("CARGO_BIN_EXE_corral");
    let out = Command::new(corral)
        .args(["new", language, &name, "--dir"])
        .arg(dir.path())
        .output()
        .expect("corral new");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let project = dir.path().join(&name);
    for file in [
        "README.md",
        "TOOLCHAIN.md",
        "build.sh",
        "test.sh",
        &format!("{name}.policy.toml"),
    ] {
        assert!(project.join(file).is_file(), "{file} missing");
    }
    // Again: the directory exists now, and nothing is overwritten.
    let again = Command::new(corral)
        .args(["new", language, &name, "--dir"])
        .arg(dir.path())
        .output()
        .expect("corral new");
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    let (ok, text) = run_test(&project, &[]);
    assert!(ok, "{language}: {text}");
    assert!(project.join(format!("{name}.wasm")).is_file());
    more(&project);
    text
}

/// Runs the project's `test.sh` with this build's `corral` and extra
/// environment variables; answers whether it passed, and its output.
fn run_test(project: &Path, vars: &[(&str, &str)]) -> (bool, String) {
    let test = Command::new(project.join("test.sh"))
        .envs(vars.iter().copied())
        .env("CORRAL", env!("CARGO_BIN_EXE_corral"))
        .env("CORRAL_CACHE_DIR", support::cache_dir())
        // A Rust project reuses the compiled dependencies of the fixtures
        // (its Cargo.lock pins the same versions).
        .env(
            "CARGO_TARGET_DIR",
            support::repository_root().join("target/guests"),
        )
        .output()
        .expect("test.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
    (test.status.success(), text)
}

#[test]
fn a_new_rust_tool_builds_and_passes_its_test() {
    let out = scaffold_and_test("rust");
    assert!(out.contains("ok: hello_rust reversed the text"), "{out}");
}

#[test]
fn a_new_python_tool_builds_and_passes_its_test() {
    let out = scaffold_and_test("python");
    assert!(out.contains("ok: hello_python reversed the text"), "{out}");
}

#[test]
fn a_new_javascript_tool_builds_and_passes_its_test_with_either_engine() {
    let out = scaffold_and_test_then("js", |project| {
        // An async handler: QuickJS (the default) has no event loop, so the
        // build says so; SpiderMonkey builds and runs it.
        let index = project.join("index.js");
        let code = std::fs::read_to_string(&index).expect("index.js");
        let sync = "}, ({ text }) => {";
        assert!(code.contains(sync), "{code}");
        std::fs::write(&index, code.replace(sync, "}, async ({ text }) => {")).expect("write");
        let (ok, text) = run_test(project, &[]);
        assert!(!ok, "{text}");
        assert!(
            text.contains("tool 'hello_js': its handler is async") && text.contains("SpiderMonkey"),
            "{text}"
        );
        let (ok, text) = run_test(project, &[("CORRAL_JS_ENGINE", "spidermonkey")]);
        assert!(ok, "{text}");
        assert!(
            text.contains("built hello_js.wasm (spidermonkey)"),
            "{text}"
        );
        assert!(text.contains("ok: hello_js reversed the text"), "{text}");
    });
    assert!(out.contains("built hello_js.wasm (quickjs)"), "{out}");
    assert!(out.contains("ok: hello_js reversed the text"), "{out}");
}

#[test]
fn a_new_c_tool_builds_and_passes_its_test() {
    let out = scaffold_and_test("c");
    assert!(out.contains("ok: hello_c reversed the text"), "{out}");
}

#[test]
fn a_name_that_cannot_be_a_tool_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["new", "rust", "Bad-Name", "--dir"])
        .arg(dir.path())
        .output()
        .expect("corral new");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lowercase letters, digits and `_`"));
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
}

#[test]
fn an_sdk_path_the_build_files_cannot_carry_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let sdk = dir.path().join("corral $HOME");
    std::fs::create_dir_all(sdk.join("guest-sdk")).expect("sdk");
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["new", "rust", "hello", "--sdk"])
        .arg(&sdk)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .expect("corral new");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot carry"), "{stderr}");
    assert!(!dir.path().join("hello").exists());
}
