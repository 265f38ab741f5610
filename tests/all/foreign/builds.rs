//! Components built the way other projects build them, served in
//! any-component mode under a policy, with the docs of the WIT beside them:
//! a Rust component in the `cargo component` layout reading a granted
//! directory, one using the Spin SDK's outbound HTTP client under an
//! allow-list, and componentize-py and componentize-qjs components (whose
//! toolchains' own `init` exports are no tools). A component of the async ABI generation is refused, saying
//! why; a name too long once shown is reported with the rename that fixes it.

use corral::{CallError, ComponentError, LoadErrorReason};
use serde_json::json;

use super::{call, host};
use crate::support::{
    ANY_ASYNC, ANY_FILES, ANY_PY, ANY_QJS, ANY_SPIN, ANY_TYPES, TestServer, guest, plugin_dir,
    repository_root,
};

/// A plugin directory holding `component` as `NAME.wasm`, the WIT file
/// `wit` (relative to the repository) beside it as `NAME.wit`, and
/// `policy` when given.
fn dir_with(component: &str, name: &str, wit: &str, policy: Option<&str>) -> tempfile::TempDir {
    let dir = plugin_dir(&[]);
    std::fs::copy(guest(component), dir.path().join(format!("{name}.wasm"))).expect("copy");
    std::fs::copy(
        repository_root().join(wit),
        dir.path().join(format!("{name}.wit")),
    )
    .expect("wit");
    if let Some(policy) = policy {
        std::fs::write(dir.path().join(format!("{name}.policy.toml")), policy).expect("policy");
    }
    dir
}

/// The names of the tools `host` serves from plugins, sorted.
fn served(host: &corral::Host) -> Vec<String> {
    let mut names: Vec<String> = host
        .tools()
        .iter()
        .filter(|t| t.plugin().is_some())
        .map(|t| t.spec().name.clone())
        .collect();
    names.sort();
    names
}

const FILES_WIT: &str = "tests/fixtures/any_files/wit/world.wit";

#[tokio::test]
async fn a_cargo_component_project_reads_only_the_directory_its_policy_grants() {
    let data = tempfile::tempdir().expect("data dir");
    std::fs::write(data.path().join("notes.txt"), "first note").expect("write");
    std::fs::create_dir(data.path().join("sub")).expect("mkdir");
    let policy = format!(
        "version = 1\n[[filesystem]]\nhost = {:?}\nguest = \"/data\"\naccess = \"read-only\"\n",
        data.path().display().to_string()
    );
    let dir = dir_with(ANY_FILES, "files", FILES_WIT, Some(&policy));
    let host = host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());

    let list = host.tool("fs_list_dir").expect("fs_list_dir");
    assert_eq!(
        list.spec().description,
        "Lists a directory, sorted by name.\n\n- `path`: the directory, as the component sees it (e.g. `/data`)"
    );
    assert_eq!(
        list.spec().parameters["properties"]["path"]["description"],
        "the directory, as the component sees it (e.g. `/data`)"
    );
    assert_eq!(
        call(&host, "fs_list_dir", json!({ "path": "/data" }))
            .await
            .expect("list"),
        json!([
            { "name": "notes.txt", "size": 10, "kind": "file" },
            { "name": "sub", "size": list_size(&data.path().join("sub")), "kind": "directory" },
        ])
    );
    assert_eq!(
        call(&host, "fs_read_file", json!({ "path": "/data/notes.txt" }))
            .await
            .expect("read"),
        json!("first note")
    );
    // Outside the grant there is nothing.
    for path in ["/", "/etc/passwd", "/data/../etc/passwd"] {
        let err = call(&host, "fs_read_file", json!({ "path": path }))
            .await
            .unwrap_err();
        assert!(
            matches!(err, CallError::ToolFailed { .. }),
            "{path}: {err:?}"
        );
    }

    // Without the policy, not even the directory.
    let bare = dir_with(ANY_FILES, "files", FILES_WIT, None);
    let host = self::host(bare.path()).await;
    let err = call(&host, "fs_list_dir", json!({ "path": "/data" }))
        .await
        .unwrap_err();
    let CallError::ToolFailed { message, .. } = &err else {
        panic!("expected the err arm of its result, got {err:?}");
    };
    assert!(message.starts_with("\"cannot list /data"), "{message}");
}

/// The size the host's filesystem gives the directory `path`.
fn list_size(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).expect("metadata").len()
}

#[tokio::test]
async fn a_spin_sdk_component_fetches_only_what_its_policy_allows() {
    let server = TestServer::start("hello from the test server");
    let other = TestServer::start("must not be reached");
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n",
        server.port
    );
    let wit = "tests/fixtures/any_spin/wit/spin-fetch.wit";
    let dir = dir_with(ANY_SPIN, "spin", wit, Some(&policy));
    let host = host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    assert_eq!(
        host.tool("web_fetch")
            .expect("web_fetch")
            .spec()
            .description,
        "Fetches a URL with GET and answers its status and body text."
    );

    let url = format!("http://127.0.0.1:{}/hello", server.port);
    assert_eq!(
        call(&host, "web_fetch", json!({ "url": url }))
            .await
            .expect("an allowed origin"),
        json!({ "status": 200, "body": "hello from the test server" })
    );
    assert_eq!(server.hits(), 1);

    let url = format!("http://127.0.0.1:{}/hello", other.port);
    let err = call(&host, "web_fetch", json!({ "url": url }))
        .await
        .unwrap_err();
    let CallError::ToolFailed { message, .. } = &err else {
        panic!("a refused request is the err arm of its result, got {err:?}");
    };
    assert!(message.contains("HttpRequestDenied"), "{message}");
    assert_eq!(
        other.hits(),
        0,
        "nothing reached the origin the policy does not list"
    );

    // Without a policy, no origin at all.
    let bare = dir_with(ANY_SPIN, "spin", wit, None);
    let host = self::host(bare.path()).await;
    let url = format!("http://127.0.0.1:{}/hello", server.port);
    let err = call(&host, "web_fetch", json!({ "url": url }))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("HttpRequestDenied"), "{err}");
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn a_component_of_the_async_abi_is_refused_saying_why() {
    let dir = plugin_dir(&[ANY_ASYNC]);
    let host = host(dir.path()).await;
    let errors = host.load_errors();
    assert!(
        matches!(&errors[..], [e] if matches!(e.reason, LoadErrorReason::Component(ComponentError::AsyncAbi(_)))),
        "{errors:?}"
    );
    let text = errors[0].to_string();
    assert!(text.contains("fixture_any_async.wasm"), "{text}");
    assert!(
        text.contains("async ABI, the WASI 0.3 generation"),
        "{text}"
    );
    assert!(text.contains("build it for WASI 0.2"), "{text}");
    assert!(host.tools().iter().all(|t| t.plugin().is_none()));
}

#[tokio::test]
async fn a_name_too_long_once_shown_comes_with_the_rename_that_fixes_it() {
    let prefix = "a_prefix_long_enough_to_push_derived_names_past_the_limit_";
    let policy = format!("version = 1\n[presentation]\nprefix = \"{prefix}\"\n");
    let dir = dir_with(
        ANY_TYPES,
        "types",
        "tests/fixtures/any_types/wit/types.wit",
        Some(&policy),
    );
    let host = host(dir.path()).await;
    let text = host.load_errors()[0].to_string();
    assert!(text.contains("use at most 64"), "{text}");
    let room = 64 - prefix.len();
    assert!(
        text.contains(&format!("(at most {room} characters)")) && text.contains("rename = { \""),
        "{text}"
    );
    // The suggested rename works.
    let start = text.find("rename = { \"").expect("hint") + "rename = { ".len();
    let end = text[start..].find(" }").expect("end") + start;
    let fixed = format!("{policy}rename = {{ {} }}\n", &text[start..end]);
    std::fs::write(dir.path().join("types.policy.toml"), &fixed).expect("policy");
    let host = self::host(dir.path()).await;
    let next = host.load_errors().first().map(ToString::to_string);
    assert!(
        next.as_deref()
            .is_none_or(|t| !t.contains(&text[start..end])),
        "the rename fixed that name: {next:?}"
    );
}

#[tokio::test]
async fn a_componentize_py_component_serves_its_functions_and_not_its_init_hook() {
    let dir = dir_with(ANY_PY, "stats", "tests/fixtures/any_py/wit/world.wit", None);
    let host = host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let names = served(&host);
    assert_eq!(names, ["stats_summarize", "version"], "no `init` tool");
    let summarize = host.tool("stats_summarize").expect("summarize");
    assert!(
        summarize
            .spec()
            .description
            .starts_with("Summarises a list of numbers"),
        "{}",
        summarize.spec().description
    );
    assert_eq!(
        call(&host, "stats_summarize", json!({ "values": [1, 2, 6] }))
            .await
            .expect("summarize"),
        json!({ "count": 3, "mean": 3.0, "max": 6.0 })
    );
    let err = call(&host, "stats_summarize", json!({ "values": [] }))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::ToolFailed { message, .. } if message == "\"no values to summarize\""),
        "{err:?}"
    );
    let version = call(&host, "version", json!({})).await.expect("version");
    assert!(
        version.as_str().is_some_and(|v| v.starts_with("Python 3.")),
        "{version}"
    );

    let found = host
        .inspect(&dir.path().join("stats.wasm"))
        .expect("inspect");
    assert!(
        found
            .skipped
            .iter()
            .any(|s| s.export == "exports#init" && s.reason.contains("componentize-py")),
        "{:?}",
        found.skipped
    );
}

#[tokio::test]
async fn a_componentize_qjs_component_serves_its_functions_and_not_its_init_hook() {
    let dir = dir_with(ANY_QJS, "qjs", "tests/fixtures/any_qjs/wit/world.wit", None);
    let host = host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let names = served(&host);
    assert_eq!(names, ["add", "text_greet"], "no `init` tool");
    assert_eq!(
        call(&host, "add", json!({ "a": 2, "b": 40 }))
            .await
            .expect("add"),
        json!(42)
    );
    assert_eq!(
        call(&host, "text_greet", json!({ "name": "qjs" }))
            .await
            .expect("greet"),
        json!("hello, qjs")
    );
    assert_eq!(
        host.tool("add").expect("add").spec().description,
        "Adds two whole numbers."
    );
    let found = host.inspect(&dir.path().join("qjs.wasm")).expect("inspect");
    assert!(
        found
            .skipped
            .iter()
            .any(|s| s.export == "init" && s.reason.contains("componentize-qjs")),
        "{:?}",
        found.skipped
    );
    assert!(
        found.tools.iter().all(|t| t.name != "init"),
        "{:?}",
        found.tools
    );
}
