//! Per-tool runtime state over MCP, as a client and an operator see it: a
//! raised rate limit and a changed cache TTL take effect after the server
//! reloads the policy, a cancelled half-open probe frees the breaker, an
//! unchanged plugin keeps its cache, per-tenant budgets keyed by the
//! client's `_meta["corral/context"]` stay at their capacity, and a removed
//! plugin's state leaves (the `/metrics` gauges of `Host::runtime_stats`).

use std::path::Path;

use serde_json::{Value, json};

use crate::mcp::http::HttpServer;
use crate::mcp::{Stdio_, text};
use crate::support::resilience::{MANY_A_SECOND, ONE_A_MINUTE, plugin};

#[test]
fn a_raised_rate_limit_takes_effect_after_a_reload_over_mcp() {
    let dir = tempfile::tempdir().expect("dir");
    plugin(dir.path(), "rate", ONE_A_MINUTE);
    // The server watches the directory, as `corral serve` does by default.
    let mut mcp = Stdio_::start(dir.path(), &[]);
    mcp.initialize(json!({}));
    let echo = json!({"text": "x"});
    let first = mcp.call(1, "rate_echo", echo.clone());
    assert_eq!(first["result"]["isError"], false, "{first}");
    let refused = mcp.call(2, "rate_echo", echo.clone());
    assert!(text(&refused).contains("1 per minute"), "{refused}");

    plugin(dir.path(), "rate", MANY_A_SECOND);
    mcp.wait_for("tools/list_changed after the policy change", |m| {
        m["method"] == "notifications/tools/list_changed"
    });
    let after = mcp.call(3, "rate_echo", echo);
    assert_eq!(after["result"]["isError"], false, "{after}");
}

#[test]
fn a_changed_cache_setting_starts_a_new_cache_over_mcp() {
    let dir = tempfile::tempdir().expect("dir");
    plugin(
        dir.path(),
        "cch",
        "[resilience.tools.nonce]\ncache = { ttl_ms = 600000 }",
    );
    let mut mcp = Stdio_::start(dir.path(), &[]);
    mcp.initialize(json!({}));
    let hit = |r: &Value| r["result"]["_meta"]["corral/cacheHit"] == true;
    let first = mcp.call(1, "cch_nonce", json!({}));
    assert!(!hit(&first), "{first}");
    let second = mcp.call(2, "cch_nonce", json!({}));
    assert!(hit(&second), "{second}");

    // A new TTL: the server starts a new cache for the tool (that it then
    // keeps that TTL is the library's test, on a clock it moves:
    // `resilience::state::a_changed_cache_ttl_takes_effect`).
    plugin(
        dir.path(),
        "cch",
        "[resilience.tools.nonce]\ncache = { ttl_ms = 600001 }",
    );
    mcp.wait_for("tools/list_changed after the policy change", |m| {
        m["method"] == "notifications/tools/list_changed"
    });
    let fresh = mcp.call(3, "cch_nonce", json!({}));
    assert!(!hit(&fresh), "a new setting starts a new cache: {fresh}");
    assert_ne!(text(&fresh), text(&first));
    let again = mcp.call(4, "cch_nonce", json!({}));
    assert!(hit(&again), "the new cache serves: {again}");
    assert_eq!(text(&again), text(&fresh));
}

/// Tenants sent over MCP HTTP; each has its own budget.
const TENANTS: usize = 1_000;
/// The per-tenant limiter's capacity in the test's policy.
const CAPACITY: u64 = 64;

#[test]
fn over_http_tenant_budgets_stay_at_capacity_and_a_removed_plugins_state_leaves() {
    let dir = tempfile::tempdir().expect("dir");
    // As in the library's 100 000-tenant test: the plugin-wide limit is per
    // tenant (checked first, so each new tenant gets a budget), the tool's
    // own limit then refuses all but the first call before any guest runs.
    plugin(
        dir.path(),
        "ten",
        &format!(
            "[context]\nallow = [\"tenant\"]\n[resilience]\n\
             rate_limit = {{ requests = 1, per = \"hour\", throw_on_limit = true, \
             per_context_key = \"tenant\", max_context_keys = {CAPACITY} }}\n\
             [resilience.tools.echo]\n\
             rate_limit = {{ requests = 1, per = \"hour\", throw_on_limit = true }}"
        ),
    );
    plugin(dir.path(), "other", "");
    let server = HttpServer::start_watching(dir.path(), &[]);
    let session = server.session();
    let mut refused = 0;
    for i in 0..TENANTS {
        let call = json!({"jsonrpc": "2.0", "id": i + 10, "method": "tools/call", "params": {
            "name": "ten_echo", "arguments": {"text": "x"},
            "_meta": {"corral/context": {"tenant": format!("tenant-{i}")}}}});
        let response = server.request(&session, &call);
        if response["result"]["isError"] == true {
            assert!(text(&response).contains("the tool's limit"), "{response}");
            refused += 1;
        }
    }
    assert_eq!(refused, TENANTS - 1, "one call ran, the rest were refused");
    let budgets = server.metric("corral_tenant_budgets");
    assert!(
        budgets > 0.0 && budgets <= CAPACITY as f64,
        "{budgets} budgets for {TENANTS} tenants, capacity {CAPACITY}"
    );

    // The other plugin goes: its tools leave tools/list, and their states
    // leave the count.
    let list = |id: u64| -> Vec<String> {
        let response = server.request(
            &session,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}}),
        );
        response["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_string())
            .collect()
    };
    let others = list(1).iter().filter(|n| n.starts_with("other_")).count();
    assert!(others > 0);
    let before = server.metric("corral_tool_states");
    std::fs::remove_file(dir.path().join("other.wasm")).expect("remove");
    // Wait (on what the server reports, within a generous deadline) for the
    // reload that drops the plugin and then for its states to be freed.
    let deadline = std::time::Instant::now() + crate::mcp::WAIT;
    let mut id = 2;
    loop {
        id += 1;
        let gone = !list(id).iter().any(|n| n.starts_with("other_"));
        let states = server.metric("corral_tool_states");
        if gone && states == before - others as f64 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{states} tool states, expected {before} - {others} (plugin gone from tools/list: {gone})"
        );
        std::thread::yield_now();
    }
}

/// Waits until the server's stderr log at `path` holds `line`.
fn wait_for_log(path: &Path, line: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(line) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no `{line}` logged:\n{text}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn over_mcp_a_cancelled_probe_frees_the_breaker_and_an_unchanged_plugin_keeps_its_cache() {
    let dir = tempfile::tempdir().expect("dir");
    plugin(
        dir.path(),
        "brk",
        "[limits]\ntimeout_ms = 2000\n[resilience.tools.sleep]\n\
         circuit_breaker = { failure_threshold = 1, cool_down_ms = 1 }",
    );
    plugin(
        dir.path(),
        "cch",
        "[resilience.tools.nonce]\ncache = { ttl_ms = 600000 }",
    );
    let logs = tempfile::tempdir().expect("log dir");
    let log_path = logs.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).expect("log");
    let mut mcp = Stdio_::start_with(dir.path(), &[], &[], std::process::Stdio::from(log));
    mcp.initialize(json!({}));

    // The cache: a result, then a reload of the other plugin only.
    let first = mcp.call(1, "cch_nonce", json!({}));
    assert_eq!(
        first["result"]["_meta"]["corral/cacheHit"], false,
        "{first}"
    );

    // The breaker opens on a timeout (the policy's 2 s deadline).
    let timed_out = mcp.call(2, "brk_sleep", json!({"ms": 60000}));
    assert!(text(&timed_out).contains("time"), "{timed_out}");
    std::thread::sleep(std::time::Duration::from_millis(5)); // the 1 ms cool-down
    // The probe starts (its progress says the guest runs), then the client
    // cancels it.
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "brk_sleep", "arguments": {"ms": 60000}, "_meta": {"progressToken": "probe"}}}),
    );
    mcp.wait_for("the probe's progress", |m| {
        m["method"] == "notifications/progress" && m["params"]["progressToken"] == "probe"
    });
    mcp.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3, "reason": "test"}}),
    );
    wait_for_log(&log_path, "call cancelled by the client; sandbox torn down");
    let next = mcp.call(4, "brk_sleep", json!({"ms": 1}));
    assert_eq!(
        next["result"]["isError"], false,
        "the next call probes: {next}"
    );

    // The breaker's plugin changes (a new threshold, and a note that shows
    // in tools/list): the cache's plugin keeps its entries.
    std::fs::write(
        dir.path().join("brk.policy.toml"),
        "version = 1\n[presentation]\nprefix = \"brk_\"\nnotes = { sleep = \"v2\" }\n\
         [limits]\ntimeout_ms = 2000\n[resilience.tools.sleep]\n\
         circuit_breaker = { failure_threshold = 3, cool_down_ms = 1 }\n",
    )
    .expect("policy");
    // A tool going DOWN also sends list_changed: wait for the one after
    // which tools/list shows the new version.
    for id in 100.. {
        mcp.wait_for("tools/list_changed", |m| {
            m["method"] == "notifications/tools/list_changed"
        });
        let list = mcp.request(id, "tools/list", json!({}));
        let tools = list["result"]["tools"].as_array().expect("tools");
        if tools.iter().any(|t| {
            t["name"] == "brk_sleep" && t["description"].as_str().is_some_and(|d| d.contains("v2"))
        }) {
            break;
        }
    }
    let again = mcp.call(5, "cch_nonce", json!({}));
    assert_eq!(again["result"]["_meta"]["corral/cacheHit"], true, "{again}");
    assert_eq!(text(&again), text(&first));
}
