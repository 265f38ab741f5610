//! Per-plugin policies, checked the way a careful reviewer would: each
//! capability denied without the grant, then granted and working, and a grant
//! for one directory or host never reaching another.

use std::path::Path;

use corral::AutoApprove;
use corral::{CallContext, CallError, CallOptions, Host, HostBuilder, Limits, LoadErrorReason};
use serde_json::{Value, json};

use crate::support::{
    FETCH, HOSTILE, NOTES, TestServer, cache, call, failure, guest_sha256, plugin_dir,
    plugin_dir_with_policies, pool,
};

fn builder(dir: &Path) -> HostBuilder {
    crate::support::builder(dir).reviewer(AutoApprove)
}

async fn host(dir: &Path) -> Host {
    builder(dir).build().await.expect("host")
}

/// The message of a call expected to fail.
fn message(result: Result<Value, CallError>) -> String {
    failure(result).to_string()
}

fn notes_policy(dir: &Path, access: &str) -> String {
    format!(
        "version = 1\n[[filesystem]]\nhost = {:?}\nguest = \"/notes\"\naccess = \"{access}\"\n",
        dir.display().to_string()
    )
}

#[tokio::test]
async fn a_directory_is_denied_then_granted_then_used() {
    let data = tempfile::tempdir().expect("data dir");
    let denied = plugin_dir(&[NOTES]);
    let host_without = host(denied.path()).await;
    let err = message(
        call(
            &host_without,
            "notes_write",
            json!({"name": "a", "text": "x"}),
        )
        .await,
    );
    assert!(err.contains("did not grant `/notes`"), "{err}");

    let policy = notes_policy(data.path(), "read-write");
    let granted = plugin_dir_with_policies(&[(NOTES, Some(&policy))]);
    let host = host(granted.path()).await;
    call(
        &host,
        "notes_write",
        json!({"name": "todo", "text": "buy milk"}),
    )
    .await
    .expect("write");
    assert_eq!(
        std::fs::read_to_string(data.path().join("todo.md")).expect("on the host"),
        "buy milk"
    );
    assert_eq!(
        call(&host, "notes_list", json!({})).await.expect("list"),
        json!({"notes": [{"name": "todo", "bytes": 8}]})
    );
    assert_eq!(
        call(&host, "notes_read", json!({"name": "todo"}))
            .await
            .expect("read")["text"],
        "buy milk"
    );
    call(&host, "notes_delete", json!({"name": "todo"}))
        .await
        .expect("delete (approved)");
    assert!(!data.path().join("todo.md").exists());
    let err = message(call(&host, "notes_read", json!({"name": "todo"})).await);
    assert!(err.contains("there is no note named `todo`"), "{err}");
}

#[tokio::test]
async fn a_read_only_grant_refuses_writes() {
    let data = tempfile::tempdir().expect("data dir");
    std::fs::write(data.path().join("kept.md"), "old").expect("seed");
    let policy = notes_policy(data.path(), "read-only");
    let dir = plugin_dir_with_policies(&[(NOTES, Some(&policy))]);
    let host = host(dir.path()).await;
    assert_eq!(
        call(&host, "notes_read", json!({"name": "kept"}))
            .await
            .expect("read")["text"],
        "old"
    );
    let err = message(call(&host, "notes_write", json!({"name": "kept", "text": "new"})).await);
    assert!(err.contains("cannot write note `kept`"), "{err}");
    assert_eq!(
        std::fs::read_to_string(data.path().join("kept.md")).unwrap(),
        "old"
    );
}

#[tokio::test]
async fn a_directory_grant_reaches_only_its_plugin_and_its_path() {
    let notes_data = tempfile::tempdir().expect("notes dir");
    let hostile_data = tempfile::tempdir().expect("hostile dir");
    std::fs::write(notes_data.path().join("secret.md"), "notes only").unwrap();
    std::fs::write(hostile_data.path().join("mine.txt"), "hostile's own").unwrap();
    let notes_policy = notes_policy(notes_data.path(), "read-write");
    let hostile_policy = format!(
        "version = 1\n[[filesystem]]\nhost = {:?}\nguest = \"/data\"\n",
        hostile_data.path().display().to_string()
    );
    let dir = plugin_dir_with_policies(&[
        (NOTES, Some(&notes_policy)),
        (HOSTILE, Some(&hostile_policy)),
    ]);
    let host = host(dir.path()).await;
    assert_eq!(
        call(&host, "read_file", json!({"path": "/data/mine.txt"}))
            .await
            .expect("its own grant")["content"],
        "hostile's own"
    );
    let secret_on_host = notes_data.path().join("secret.md");
    for path in [
        "/notes/secret.md".to_string(),
        "/data/../notes/secret.md".to_string(),
        secret_on_host.display().to_string(),
        format!("/data/../../{}", secret_on_host.display()),
    ] {
        let err = message(call(&host, "read_file", json!({"path": path})).await);
        assert!(
            err.starts_with("tool `read_file` failed: cannot read"),
            "{path}: {err}"
        );
    }
    assert_eq!(
        call(&host, "notes_read", json!({"name": "secret"}))
            .await
            .expect("notes")["text"],
        "notes only"
    );
}

#[tokio::test]
async fn environment_variables_are_exactly_the_granted_ones() {
    let dir = plugin_dir(&[HOSTILE]);
    let vars = call(&host(dir.path()).await, "read_env", json!({}))
        .await
        .unwrap();
    assert_eq!(vars["vars"], json!({}), "nothing by default");

    let policy = "version = 1\n[environment]\nset = { GREETING = \"hello\" }\npass = [\"PATH\", \"CORRAL_TEST_UNSET_VARIABLE\"]\n";
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(policy))]);
    let vars = call(&host(dir.path()).await, "read_env", json!({}))
        .await
        .unwrap();
    assert_eq!(
        vars["vars"],
        json!({
            "GREETING": "hello",
            "PATH": std::env::var("PATH").expect("the test has a PATH"),
        }),
        "set and passed-through variables only; unset ones are skipped"
    );
}

#[tokio::test]
async fn http_is_denied_then_allowed_for_exactly_the_granted_host() {
    let allowed = TestServer::start("hello from the allowed server");
    let other = TestServer::start("must never be reached");
    let url = |port: u16, host: &str| format!("http://{host}:{port}/x");

    let dir = plugin_dir(&[FETCH]);
    let host_without = host(dir.path()).await;
    let err = message(
        call(
            &host_without,
            "fetch_url",
            json!({"url": url(allowed.port, "127.0.0.1")}),
        )
        .await,
    );
    assert!(err.contains("the host denied the request"), "{err}");
    assert_eq!(allowed.hits(), 0, "a denied request never leaves the host");

    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n",
        allowed.port
    );
    let dir = plugin_dir_with_policies(&[(FETCH, Some(&policy)), (HOSTILE, Some(&policy))]);
    let host = host(dir.path()).await;
    let out = call(
        &host,
        "fetch_url",
        json!({"url": url(allowed.port, "127.0.0.1")}),
    )
    .await
    .expect("granted");
    assert_eq!(out["status"], 200);
    assert_eq!(out["body"], "hello from the allowed server");
    assert_eq!(allowed.hits(), 1);

    for denied in [url(other.port, "127.0.0.1"), url(allowed.port, "localhost")] {
        let err = message(call(&host, "fetch_url", json!({"url": denied})).await);
        assert!(
            err.contains("the host denied the request"),
            "{denied}: {err}"
        );
    }
    assert_eq!(other.hits(), 0);
    assert_eq!(
        allowed.hits(),
        1,
        "`localhost` is not the granted `127.0.0.1`"
    );

    // An HTTP grant never opens raw sockets.
    let err = message(
        call(
            &host,
            "open_socket",
            json!({"addr": format!("127.0.0.1:{}", allowed.port)}),
        )
        .await,
    );
    assert!(err.contains("cannot connect"), "{err}");
    assert_eq!(allowed.hits(), 1);
}

#[tokio::test]
async fn presentation_renames_prefixes_and_annotates_tools() {
    let policy = "version = 1\n[presentation]\nprefix = \"h_\"\nrename = { echo = \"say\" }\nnotes = { echo = \"Repeat the user's words only.\" }\n";
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(policy))]);
    let host = host(dir.path()).await;
    assert!(host.tool("echo").is_none());
    let tool = host.tool("h_say").expect("renamed and prefixed");
    assert_eq!(tool.guest_name(), "echo");
    assert!(
        tool.spec()
            .description
            .ends_with("\n\nNote: Repeat the user's words only."),
        "{}",
        tool.spec().description
    );
    assert!(
        host.tool("h_spin").is_some(),
        "the prefix applies to every tool"
    );
    assert_eq!(
        call(&host, "h_say", json!({"text": "hi"})).await.unwrap(),
        json!({"echo": "hi"})
    );
}

#[tokio::test]
async fn an_integrity_pin_refuses_other_bytes() {
    let good = format!("version = 1\nsha256 = \"{}\"\n", guest_sha256(HOSTILE));
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(&good))]);
    assert!(host(dir.path()).await.tool("echo").is_some());

    let wrong = format!("version = 1\nsha256 = \"{}\"\n", "0".repeat(64));
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(&wrong))]);
    let host = host(dir.path()).await;
    assert!(host.tool("echo").is_none());
    let errors = host.load_errors();
    let LoadErrorReason::IntegrityMismatch {
        expected, actual, ..
    } = &errors[0].reason
    else {
        panic!("{errors:?}");
    };
    assert_eq!(expected, &"0".repeat(64));
    assert_eq!(actual, &guest_sha256(HOSTILE));
    assert!(
        errors[0]
            .to_string()
            .contains("fixture_hostile.policy.toml")
    );
}

#[tokio::test]
async fn limits_are_overridden_within_the_host_maximum() {
    let policy = "version = 1\n[limits]\nfuel = 5000000\n";
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(policy))]);
    let host = host(dir.path()).await;
    assert_eq!(
        call(&host, "spin", json!({})).await.unwrap_err(),
        CallError::OutOfFuel {
            tool: "spin".into(),
            budget: 5_000_000
        }
    );

    let greedy = "version = 1\n[limits]\nfuel = 2000000000\n";
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(greedy))]);
    let host = builder(dir.path())
        .max_limits(Limits::DEFAULT_MAX.with_fuel(1_000_000_000))
        .build()
        .await
        .expect("host");
    let errors = host.load_errors();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .to_string()
            .contains("limits.fuel = 2000000000 exceeds the host's maximum of 1000000000"),
        "{}",
        errors[0]
    );
}

#[tokio::test]
async fn approval_and_context_come_from_the_policy() {
    let policy = "version = 1\n[approval]\nrequire = [\"echo\"]\n[context]\nallow = [\"tenant\"]\n";
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(policy))]);
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .reviewer(corral::DenyAll)
        .build()
        .await
        .expect("host");
    assert!(host.tool("echo").unwrap().spec().metadata.requires_approval);
    assert_eq!(
        message(call(&host, "echo", json!({"text": "x"})).await),
        "Rejected by reviewer: denied by policy (deny-all reviewer)"
    );
    let context: CallContext = [("tenant", "acme"), ("api_key", "secret")]
        .into_iter()
        .collect();
    let out = host
        .call(
            "context_echo",
            "{}",
            &CallOptions::default().with_context(context),
        )
        .await
        .expect("call");
    assert_eq!(
        out.into_json().unwrap()["context"],
        json!({"tenant": "acme"})
    );
}

#[tokio::test]
async fn a_policy_naming_a_tool_the_plugin_lacks_keeps_it_from_loading() {
    let policy = "version = 1\n[approval]\nrequire = [\"ech\"]\n";
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(policy))]);
    let host = host(dir.path()).await;
    assert!(host.tool("echo").is_none());
    let err = host.load_errors()[0].to_string();
    assert!(
        err.contains("approval.require names `ech`, which this plugin does not provide"),
        "{err}"
    );
}

#[tokio::test]
async fn a_broken_policy_is_reported_with_file_and_line_and_the_rest_serve() {
    let dir = plugin_dir_with_policies(&[
        (
            HOSTILE,
            Some("version = 1\n[http]\nallow = [\"example.com\"]\n"),
        ),
        (NOTES, None),
    ]);
    let host = host(dir.path()).await;
    let err = host.load_errors()[0].to_string();
    assert!(
        err.contains("fixture_hostile.policy.toml:3: `example.com` has no scheme"),
        "{err}"
    );
    assert!(host.tool("notes_list").is_some());
}
