//! Guests written in Python (componentize-py), JavaScript (componentize-qjs,
//! and componentize-js for `fetch()` and async tools) and C (wit-bindgen +
//! zig + jco), loaded by the same host as the Rust ones:
//! described, called with valid and invalid arguments, crashing without
//! taking the host down, and confined by the same sandbox and policies.

use std::path::Path;
use std::sync::{Arc, Mutex};

use corral::{CallContext, CallError, CallOptions, Host};
use serde_json::json;

use crate::support::{
    C_PROBE, FUZZY, JS_PROBE, JS_WEB, PY_PROBE, TABLES, TestServer, VERSIONS,
    assert_described_for_a_model, call, failure, host, plugin_dir, plugin_dir_with_policies,
};

async fn loaded(dir: &Path) -> Host {
    let host = host(dir).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    host
}

#[tokio::test]
async fn samples_in_python_javascript_and_c_are_described_for_a_model() {
    let dir = plugin_dir(&[TABLES, VERSIONS, FUZZY]);
    let host = loaded(dir.path()).await;
    let specs = host.specs();
    let names: Vec<&str> = specs
        .iter()
        .filter(|s| !corral::RESERVED_NAMES.contains(&s.name.as_str()))
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "closest_match",
            "csv_parse",
            "edit_distance",
            "semver_bump",
            "semver_compare",
            "semver_satisfies",
            "table_render",
        ]
    );
    for (tool, plugin) in [
        ("closest_match", "fuzzy"),
        ("csv_parse", "tables"),
        ("semver_bump", "versions"),
    ] {
        let loaded = host.tool(tool).expect("loaded");
        assert_eq!(loaded.plugin().map(|p| p.name()), Some(plugin));
    }
    for spec in specs
        .iter()
        .filter(|s| !corral::RESERVED_NAMES.contains(&s.name.as_str()))
    {
        // Python docstring `Args:`, JavaScript `description` fields and the C
        // schema all describe every parameter.
        assert_described_for_a_model(spec);
        assert!(spec.metadata.idempotent, "{}", spec.name);
        assert_eq!(
            spec.parameters["additionalProperties"], false,
            "{}",
            spec.name
        );
    }
    // The Python helper derives the schema from type hints and defaults.
    let render = host.tool("table_render").expect("table_render");
    let params = &render.spec().parameters;
    assert_eq!(params["required"], json!(["rows"]));
    assert_eq!(params["properties"]["format"]["default"], "github");
    assert!(
        params["properties"]["format"]["enum"]
            .as_array()
            .expect("Literal becomes an enum")
            .contains(&json!("html"))
    );
    assert_eq!(
        params["properties"]["float_digits"]["anyOf"][1]["type"],
        "null"
    );
    assert!(
        render
            .spec()
            .description
            .starts_with("Render rows as a text table"),
        "the docstring before `Args:` is the description"
    );
}

#[tokio::test]
async fn python_sample_renders_and_parses_tables_with_a_pypi_library() {
    let dir = plugin_dir(&[TABLES]);
    let host = loaded(dir.path()).await;
    let out = call(
        &host,
        "table_render",
        json!({"rows": [{"name": "pen", "price": 1.5}, {"name": "ink", "price": 12.25}], "float_digits": 2}),
    )
    .await
    .expect("render");
    assert_eq!(out["rows"], 2);
    assert_eq!(out["columns"], json!(["name", "price"]));
    let table = out["table"].as_str().expect("text");
    assert_eq!(table.lines().count(), 4, "{table}");
    assert!(table.starts_with("| name"), "{table}");
    assert!(
        table.contains("12.25") && table.contains(" 1.50"),
        "{table}"
    );

    let out = call(
        &host,
        "csv_parse",
        json!({"text": "city;pop\nOslo;709000\nBergen;291000\n"}),
    )
    .await
    .expect("parse");
    assert_eq!(out["delimiter"], ";");
    assert_eq!(out["total_rows"], 2);
    assert_eq!(out["rows"][1], json!({"city": "Bergen", "pop": "291000"}));

    // Rejected by the host's schema check, before any Python runs.
    let err = failure(call(&host, "table_render", json!({"rows": "not a list"})).await);
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
    assert!(
        err.to_string().contains("is not of type \"array\""),
        "{err}"
    );
    // Schema-valid but unusable: the tool says so through the contract.
    let err = failure(call(&host, "table_render", json!({"rows": [[1, 2], [3]]})).await);
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("array rows must all have the same length; found lengths [1, 2]"),
        "{err}"
    );
}

#[tokio::test]
async fn javascript_sample_handles_versions_with_an_npm_package() {
    let dir = plugin_dir(&[VERSIONS]);
    let host = loaded(dir.path()).await;
    let out = call(
        &host,
        "semver_compare",
        json!({"a": "1.10.0", "b": "1.9.3"}),
    )
    .await
    .expect("compare");
    assert_eq!(out, json!({"order": 1, "newer": "1.10.0", "diff": "minor"}));
    let out = call(
        &host,
        "semver_satisfies",
        json!({"range": "^1.2.0", "versions": ["1.1.9", "1.2.0", "1.8.1", "2.0.0"]}),
    )
    .await
    .expect("satisfies");
    assert_eq!(out["matching"], json!(["1.2.0", "1.8.1"]));
    assert_eq!(out["highest"], "1.8.1");
    let out = call(
        &host,
        "semver_bump",
        json!({"version": "2.3.4", "release": "prerelease", "preid": "rc"}),
    )
    .await
    .expect("bump");
    assert_eq!(out["next"], "2.3.5-rc.0");

    let err = failure(
        call(
            &host,
            "semver_bump",
            json!({"version": "2.3.4", "release": "huge"}),
        )
        .await,
    );
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
    let err = failure(call(&host, "semver_compare", json!({"a": "one", "b": "1.0.0"})).await);
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("a 'one' is not a semantic version"),
        "{err}"
    );
}

#[tokio::test]
async fn c_sample_computes_edit_distances() {
    let dir = plugin_dir(&[FUZZY]);
    let host = loaded(dir.path()).await;
    let out = call(
        &host,
        "edit_distance",
        json!({"a": "kitten", "b": "sitting"}),
    )
    .await
    .expect("distance");
    assert_eq!(out["distance"], 3);
    // Characters, not bytes: "ß" is one character, two UTF-8 bytes.
    let out = call(
        &host,
        "edit_distance",
        json!({"a": "Straße", "b": "strasse", "ignore_case": true}),
    )
    .await
    .expect("unicode");
    assert_eq!(
        (out["distance"].clone(), out["length_a"].clone()),
        (json!(2), json!(6))
    );
    let out = call(
        &host,
        "closest_match",
        json!({"word": "jsno_qeury", "candidates": ["word_count", "json_query", "json_stats"], "limit": 2}),
    )
    .await
    .expect("match");
    assert_eq!(out["matches"][0]["candidate"], "json_query");
    assert_eq!(out["matches"].as_array().map(Vec::len), Some(2));
    assert_eq!(out["compared"], 3);

    let err = failure(
        call(
            &host,
            "closest_match",
            json!({"word": "x", "candidates": []}),
        )
        .await,
    );
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
}

#[tokio::test]
async fn a_crash_in_each_language_is_reported_and_the_host_keeps_serving() {
    let dir = plugin_dir(&[PY_PROBE, JS_PROBE, JS_WEB, C_PROBE]);
    let host = loaded(dir.path()).await;
    let cases = [
        (
            "py_raise",
            json!({"message": "kaboom"}),
            "raised RuntimeError: kaboom",
        ),
        (
            "js_throw",
            json!({"message": "kaboom"}),
            "threw Error: kaboom",
        ),
        (
            "js_reject",
            json!({"message": "kaboom later"}),
            "threw Error: kaboom later",
        ),
        ("c_abort", json!({"path": "-"}), "wasm trap"),
    ];
    for (tool, arguments, expected) in cases {
        let err = failure(call(&host, tool, arguments).await);
        assert!(
            matches!(&err, CallError::Trapped { tool: t, .. } if t == tool),
            "{tool}: {err}"
        );
        assert!(err.to_string().contains(expected), "{tool}: {err}");
    }
    // Every plugin, the crashed ones included, still serves.
    for tool in ["py_echo", "js_echo"] {
        let out = call(&host, tool, json!({"text": "still here"}))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert_eq!(out["text"], "still here");
    }
    let err = failure(call(&host, "c_read_file", json!({"path": "/nope"})).await);
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err}");
}

#[tokio::test]
async fn python_and_javascript_guests_log_report_progress_and_see_only_allowed_context() {
    let dir = plugin_dir_with_policies(&[
        (
            PY_PROBE,
            Some("version = 1\n[context]\nallow = [\"tenant\"]\n"),
        ),
        (JS_PROBE, None),
    ]);
    let host = loaded(dir.path()).await;
    for tool in ["py_echo", "js_echo"] {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = seen.clone();
        let mut context = CallContext::new();
        context.insert("tenant", "acme").insert("secret", "s3");
        let options = CallOptions::default()
            .with_context(context)
            .with_progress(Arc::new(move |_tool: &str, message: &str| {
                sink.lock().expect("lock").push(message.to_string());
            }));
        let out = host
            .call(tool, r#"{"text":"hi"}"#, &options)
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        let json = out.into_json().expect("json");
        let expected = if tool == "py_echo" {
            json!({"tenant": "acme"})
        } else {
            json!({})
        };
        assert_eq!(json["context"], expected, "{tool}: the policy decides");
        assert_eq!(*seen.lock().expect("lock"), ["echoing"], "{tool}");
    }
}

fn read_policy(dir: &Path) -> String {
    format!(
        "version = 1\n[[filesystem]]\nhost = {:?}\nguest = \"/data\"\n",
        dir.display().to_string()
    )
}

#[tokio::test]
async fn python_and_c_guests_read_only_the_directory_their_policy_grants() {
    let data = tempfile::tempdir().expect("data");
    std::fs::write(data.path().join("greeting.txt"), "hello from /data").expect("write");
    let secret = tempfile::tempdir().expect("secret");
    std::fs::write(secret.path().join("secret.txt"), "never readable").expect("write");
    let secret_path = secret.path().join("secret.txt").display().to_string();

    // No policy: nothing is preopened, so no path resolves.
    let dir = plugin_dir(&[PY_PROBE, C_PROBE]);
    let host_without = loaded(dir.path()).await;
    for tool in ["py_read_file", "c_read_file"] {
        let err = failure(call(&host_without, tool, json!({"path": "/data/greeting.txt"})).await);
        assert!(matches!(err, CallError::ToolFailed { .. }), "{tool}: {err}");
        assert!(
            err.to_string().contains("cannot read /data/greeting.txt"),
            "{err}"
        );
    }

    // Granted: the file inside the grant reads; nothing outside it does.
    let policy = read_policy(data.path());
    let dir = plugin_dir_with_policies(&[(PY_PROBE, Some(&policy)), (C_PROBE, Some(&policy))]);
    let host = loaded(dir.path()).await;
    for tool in ["py_read_file", "c_read_file"] {
        let out = call(&host, tool, json!({"path": "/data/greeting.txt"}))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert_eq!(out["text"], "hello from /data", "{tool}");
        for path in [secret_path.as_str(), "/data/../secret.txt", "/etc/hostname"] {
            let err = failure(call(&host, tool, json!({"path": path})).await);
            assert!(
                matches!(err, CallError::ToolFailed { .. }),
                "{tool} {path}: {err}"
            );
        }
    }
}

#[tokio::test]
async fn javascript_fetch_reaches_only_the_host_its_policy_allows() {
    let allowed = TestServer::start("hello from the allowed server");
    let other = TestServer::start("must never be reached");
    let url = |port: u16| format!("http://127.0.0.1:{port}/x");

    let dir = plugin_dir(&[JS_WEB]);
    let host_without = loaded(dir.path()).await;
    let err = failure(call(&host_without, "js_fetch", json!({"url": url(allowed.port)})).await);
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err}");
    assert!(err.to_string().contains("cannot fetch"), "{err}");
    assert_eq!(allowed.hits(), 0, "a denied request never leaves the host");

    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n",
        allowed.port
    );
    let dir = plugin_dir_with_policies(&[(JS_WEB, Some(&policy))]);
    let host = loaded(dir.path()).await;
    let out = call(&host, "js_fetch", json!({"url": url(allowed.port)}))
        .await
        .expect("granted");
    assert_eq!(
        out,
        json!({"status": 200, "body": "hello from the allowed server"})
    );
    let err = failure(call(&host, "js_fetch", json!({"url": url(other.port)})).await);
    assert!(err.to_string().contains("cannot fetch"), "{err}");
    assert_eq!((allowed.hits(), other.hits()), (1, 0));
}

#[tokio::test]
async fn a_python_guest_gets_no_socket_even_with_an_http_grant() {
    let server = TestServer::start("must never be reached");
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n",
        server.port
    );
    let dir = plugin_dir_with_policies(&[(PY_PROBE, Some(&policy))]);
    let host = loaded(dir.path()).await;
    let err = failure(
        call(
            &host,
            "py_connect",
            json!({"host": "127.0.0.1", "port": server.port}),
        )
        .await,
    );
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err}");
    assert!(err.to_string().contains("cannot connect"), "{err}");
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn python_none_and_javascript_undefined_are_the_empty_string() {
    // AgentEnsemble's result contract (docs/references.md): a tool that
    // returns nothing succeeds with "", not "null".
    let dir = plugin_dir(&[PY_PROBE, JS_PROBE]);
    let host = loaded(dir.path()).await;
    for tool in ["py_nothing", "js_nothing"] {
        let out = host
            .call(tool, r#"{"text": "ignored"}"#, &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert_eq!(out.text, "", "{tool}");
        assert_eq!(out.json(), None, "{tool}");
    }
}
