//! The resilience layers (TnsAI, docs/references.md): retry, circuit breaker, rate limit
//! and cache, each on every call path (direct, plan step, pipeline step,
//! MCP), and the three consequences of their order,
//! `cache(rate_limit(retry(tool)))`.

mod contract;
mod order;
mod state_mcp;

use std::path::Path;

use corral::{CallError, CallOptions, Host};
use serde_json::{Value, json};

use crate::mcp::{Stdio_, text};
use crate::support::{FETCH, HOSTILE, TestServer, cache, guest, pool};

/// A plugin directory: one copy of `fixture` per `(prefix, resilience
/// table)`, each with its own policy (plus `extra` policy text), and a
/// pipeline `p_<prefix>` per copy calling `<prefix>_<tool>` with `arguments`.
fn dir_with(
    fixture: &str,
    cases: &[(&str, &str)],
    extra: &str,
    tool: &str,
    arguments: &Value,
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let mut pipelines = Vec::new();
    for (prefix, table) in cases {
        std::fs::copy(guest(fixture), dir.path().join(format!("{prefix}.wasm"))).expect("copy");
        std::fs::write(
            dir.path().join(format!("{prefix}.policy.toml")),
            format!("version = 1\n{extra}\n[presentation]\nprefix = \"{prefix}_\"\n\n{table}\n"),
        )
        .expect("policy");
        pipelines.push(json!({
            "name": format!("p_{prefix}"),
            "description": format!("Calls {prefix}_{tool}."),
            "parameters": {"type": "object"},
            "steps": [{"tool": format!("{prefix}_{tool}"), "arguments": arguments}],
        }));
    }
    std::fs::write(
        dir.path().join("pipelines.json"),
        json!({"version": 1, "pipelines": pipelines}).to_string(),
    )
    .expect("pipelines");
    dir
}

async fn host_over(dir: &Path) -> Host {
    let host = crate::support::host(dir).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    host
}

/// One call's outcome on one path: its JSON output and metadata, or the
/// error text.
#[derive(Debug)]
struct Outcome {
    ok: bool,
    text: String,
    attempts: Option<u64>,
    cache_hit: Option<bool>,
}

/// Calls `tool` with `arguments` on `path`: `direct`, `plan` or `pipeline`
/// (the pipeline `p_<prefix>` wraps the same call).
async fn on_path(host: &Host, path: &str, prefix: &str, tool: &str, arguments: &Value) -> Outcome {
    let name = format!("{prefix}_{tool}");
    let options = CallOptions::default();
    let result = match path {
        "direct" => host.call_value(&name, arguments.clone(), &options).await,
        "pipeline" => {
            host.call_value(&format!("p_{prefix}"), json!({}), &options)
                .await
        }
        _ => {
            let plan = json!({"steps": [{"id": "s", "tool": name, "arguments": arguments}]});
            let out = host
                .call_value("execute_tool_plan", plan, &options)
                .await
                .expect("plan");
            let step = out.into_json().expect("json")["steps"][0].clone();
            let ok = step["status"] == "succeeded";
            return Outcome {
                ok,
                text: if ok {
                    step["output"].to_string()
                } else {
                    step["error"]["message"].as_str().unwrap_or("").to_string()
                },
                attempts: step["attempts"].as_u64(),
                cache_hit: step["cache_hit"].as_bool(),
            };
        }
    };
    match result {
        Ok(out) => Outcome {
            ok: true,
            text: out.text,
            attempts: Some(u64::from(out.attempts)),
            cache_hit: Some(out.cache_hit),
        },
        Err(err) => Outcome {
            ok: false,
            text: err.to_string(),
            attempts: None,
            cache_hit: None,
        },
    }
}

/// The same over MCP (stdio), with the result's `_meta`.
fn over_mcp(mcp: &mut Stdio_, id: u64, prefix: &str, tool: &str, arguments: &Value) -> Outcome {
    let response = mcp.call(id, &format!("{prefix}_{tool}"), arguments.clone());
    let result = &response["result"];
    Outcome {
        ok: result["isError"] == false,
        text: text(&response).to_string(),
        attempts: result["_meta"]["corral/attempts"].as_u64(),
        cache_hit: result["_meta"]["corral/cacheHit"].as_bool(),
    }
}

const PATHS: [&str; 3] = ["direct", "plan", "pipeline"];

#[tokio::test]
async fn retry_works_on_every_path() {
    // One server per path (each fails its first two requests), reached by a
    // fetch plugin whose policy retries three times.
    for path in PATHS {
        let server = TestServer::start_failing(2, "third time lucky");
        let args = json!({"url": format!("http://127.0.0.1:{}/", server.port)});
        let table = format!(
            "[http]\nallow = [\"http://127.0.0.1:{}\"]\n[resilience.tools.fetch_url]\n\
             retry = {{ max_attempts = 3, initial_delay_ms = 10, jitter = false }}",
            server.port
        );
        let dir = dir_with(FETCH, &[("r", &table)], "", "fetch_url", &args);
        let host = host_over(dir.path()).await;
        let out = on_path(&host, path, "r", "fetch_url", &args).await;
        assert!(out.ok, "{path}: {out:?}");
        assert!(out.text.contains("third time lucky"), "{path}: {out:?}");
        if path != "pipeline" {
            assert_eq!(out.attempts, Some(3), "{path}: {out:?}");
        }
        assert_eq!(server.hits(), 3, "{path}");
    }
}

#[tokio::test]
async fn breaker_rate_limit_and_cache_work_on_every_path() {
    let echo = json!({"text": "x"});
    let fail = json!({"message": "down"});
    for path in PATHS {
        // Breaker: after two failed calls of `fail`, the circuit is open.
        let dir = dir_with(
            HOSTILE,
            &[(
                "brk",
                "[resilience]\ncircuit_breaker = { failure_threshold = 2, cool_down_ms = 600000 }",
            )],
            "",
            "fail",
            &fail,
        );
        let host = host_over(dir.path()).await;
        for _ in 0..2 {
            let out = on_path(&host, path, "brk", "fail", &fail).await;
            assert!(!out.ok && out.text.contains("down"), "{path}: {out:?}");
        }
        let open = on_path(&host, path, "brk", "fail", &fail).await;
        assert!(
            open.text
                .contains("is failing (2 calls in a row) and is paused"),
            "{path}: {open:?}"
        );

        // Rate limit: one call an hour.
        let dir = dir_with(
            HOSTILE,
            &[(
                "rate",
                "[resilience.tools.echo]\nrate_limit = { requests = 1, per = \"hour\", throw_on_limit = true }",
            )],
            "",
            "echo",
            &echo,
        );
        let host = host_over(dir.path()).await;
        let first = on_path(&host, path, "rate", "echo", &echo).await;
        assert!(first.ok, "{path}: {first:?}");
        let second = on_path(&host, path, "rate", "echo", &echo).await;
        assert!(
            !second.ok && second.text.contains("is rate-limited"),
            "{path}: {second:?}"
        );

        // Cache: the second identical call of `nonce` (random in every
        // fresh instance) is a hit, with the first call's output.
        let empty = json!({});
        let dir = dir_with(
            HOSTILE,
            &[(
                "cch",
                "[resilience.tools.nonce]\ncache = { ttl_ms = 600000 }",
            )],
            "",
            "nonce",
            &empty,
        );
        let host = host_over(dir.path()).await;
        let first = on_path(&host, path, "cch", "nonce", &empty).await;
        let second = on_path(&host, path, "cch", "nonce", &empty).await;
        assert!(first.ok && second.ok, "{path}: {first:?} {second:?}");
        if path != "pipeline" {
            assert_eq!(first.cache_hit, Some(false), "{path}");
            assert_eq!(second.cache_hit, Some(true), "{path}");
            assert_eq!(second.attempts, Some(0), "{path}: no guest ran");
        }
        assert_eq!(first.text, second.text, "{path}");
    }
}

#[test]
fn every_layer_works_over_mcp() {
    let server = TestServer::start_failing(2, "via mcp");
    let fetch_args = json!({"url": format!("http://127.0.0.1:{}/", server.port)});
    let retry = format!(
        "[http]\nallow = [\"http://127.0.0.1:{}\"]\n[resilience.tools.fetch_url]\n\
         retry = {{ max_attempts = 3, initial_delay_ms = 10, jitter = false }}",
        server.port
    );
    let dir = dir_with(FETCH, &[("r", &retry)], "", "fetch_url", &fetch_args);
    let echo = json!({"text": "x"});
    let hostile = dir_with(
        HOSTILE,
        &[
            (
                "brk",
                "[resilience]\ncircuit_breaker = { failure_threshold = 1, cool_down_ms = 600000 }",
            ),
            (
                "rate",
                "[resilience.tools.echo]\nrate_limit = { requests = 1, per = \"hour\", throw_on_limit = true }",
            ),
            (
                "cch",
                "[resilience.tools.nonce]\ncache = { ttl_ms = 600000 }",
            ),
        ],
        "",
        "echo",
        &echo,
    );
    // One directory for the MCP server: the fetch copy beside the hostile ones.
    for entry in std::fs::read_dir(dir.path()).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "wasm" || e == "toml") {
            std::fs::copy(&path, hostile.path().join(path.file_name().expect("name")))
                .expect("copy");
        }
    }
    let mut mcp = Stdio_::start(hostile.path(), &["--no-watch"]);
    mcp.initialize(json!({}));
    let retried = over_mcp(&mut mcp, 1, "r", "fetch_url", &fetch_args);
    assert!(retried.ok && retried.attempts == Some(3), "{retried:?}");
    assert!(!over_mcp(&mut mcp, 2, "brk", "fail", &json!({"message": "x"})).ok);
    let open = over_mcp(&mut mcp, 3, "brk", "fail", &json!({"message": "x"}));
    assert!(open.text.contains("is paused"), "{open:?}");
    assert!(over_mcp(&mut mcp, 4, "rate", "echo", &echo).ok);
    let limited = over_mcp(&mut mcp, 5, "rate", "echo", &echo);
    assert!(
        !limited.ok && limited.text.contains("rate-limited"),
        "{limited:?}"
    );
    let first = over_mcp(&mut mcp, 6, "cch", "nonce", &json!({}));
    let second = over_mcp(&mut mcp, 7, "cch", "nonce", &json!({}));
    assert_eq!(
        (first.cache_hit, second.cache_hit),
        (Some(false), Some(true))
    );
    assert_eq!(first.text, second.text);
}

#[tokio::test]
async fn retry_needs_an_idempotent_tool_and_a_transient_failure() {
    // A per-tool retry on a tool that is not idempotent keeps the plugin out.
    let echo = json!({"text": "x"});
    let dir = dir_with(
        HOSTILE,
        &[("x", "[resilience.tools.fail]\nretry = { max_attempts = 3 }")],
        "",
        "echo",
        &echo,
    );
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .build()
        .await
        .expect("host");
    let errors = host.load_errors();
    let message = errors
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        message.contains("[resilience.tools.fail]") && message.contains("not idempotent"),
        "{message}"
    );

    // On an idempotent tool, a failure that is not transient (invalid
    // arguments from the tool) is not retried.
    let server = TestServer::start("ok");
    let table = format!(
        "[http]\nallow = [\"http://127.0.0.1:{}\"]\n[resilience.tools.fetch_url]\n\
         retry = {{ max_attempts = 5, initial_delay_ms = 1 }}",
        server.port
    );
    let args = json!({"url": "http://127.0.0.1:1/"});
    let dir = dir_with(FETCH, &[("f", &table)], "", "fetch_url", &args);
    let host = host_over(dir.path()).await;
    let err = host
        .call_value(
            "f_fetch_url",
            json!({"url": "https://"}),
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
}
