//! Per-tool runtime state across reloads (`corral::resilience::state`'s
//! rules): a changed setting takes effect on the next call after the reload,
//! an unchanged plugin keeps its state, a removed plugin's state is freed, a
//! cancelled half-open probe does not jam the breaker, per-tenant budgets
//! stay bounded, and a zero limit override is the caller's invalid input;
//! through the library here, and over MCP in `state_mcp.rs`.

use std::path::Path;

use corral::{CallError, CallOptions, Clock, Host, Limits};

use crate::support::builder;
use crate::support::resilience::{MANY_A_SECOND, ONE_A_MINUTE, plugin};

/// A host over `dir` that loaded every plugin.
async fn host_over(dir: &Path) -> Host {
    let host = crate::support::host(dir).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    host
}

#[tokio::test]
async fn a_raised_rate_limit_takes_effect_after_a_reload() {
    let dir = tempfile::tempdir().expect("dir");
    plugin(dir.path(), "rate", ONE_A_MINUTE);
    let host = host_over(dir.path()).await;
    let none = CallOptions::default();
    let echo = || host.call("rate_echo", r#"{"text": "x"}"#, &none);
    echo().await.expect("the first call of the minute");
    let refused = echo().await.unwrap_err();
    assert!(
        matches!(&refused, CallError::RateLimited { limit, .. } if limit.starts_with("1 per minute")),
        "{refused}"
    );

    plugin(dir.path(), "rate", MANY_A_SECOND);
    let report = host.reload().await.expect("reload");
    assert!(
        report.updated.contains(&"rate_echo".to_string()),
        "{report:?}"
    );
    for _ in 0..3 {
        echo().await.expect("the new limit applies at once");
    }
}

#[tokio::test]
async fn a_changed_cache_ttl_takes_effect() {
    let dir = tempfile::tempdir().expect("dir");
    plugin(
        dir.path(),
        "cch",
        "[resilience.tools.nonce]\ncache = { ttl_ms = 600000 }",
    );
    // The cache reads a clock the test moves: no sleep, no slow-machine
    // allowance.
    let clock = Clock::manual();
    let host = builder(dir.path())
        .clock(clock.clone())
        .build()
        .await
        .expect("host");
    let none = CallOptions::default();
    let nonce = || host.call("cch_nonce", "{}", &none);
    nonce().await.expect("miss");
    assert!(nonce().await.expect("hit").cache_hit);

    // Two seconds now: a fresh cache under the new TTL.
    plugin(
        dir.path(),
        "cch",
        "[resilience.tools.nonce]\ncache = { ttl_ms = 2000 }",
    );
    host.reload().await.expect("reload");
    let first = nonce().await.expect("call");
    assert!(!first.cache_hit, "a new setting starts a new cache");
    clock.advance(std::time::Duration::from_millis(1_999));
    let second = nonce().await.expect("call");
    assert!(second.cache_hit, "within the new TTL");
    assert_eq!(second.text, first.text);
    clock.advance(std::time::Duration::from_millis(1));
    let expired = nonce().await.expect("call");
    assert!(!expired.cache_hit, "the 2 s TTL applies, not the old 600 s");
    assert_ne!(expired.text, first.text, "a fresh run");
}

#[tokio::test]
async fn an_unchanged_plugin_keeps_its_state_and_a_removed_one_frees_it() {
    let dir = tempfile::tempdir().expect("dir");
    plugin(
        dir.path(),
        "cch",
        "[resilience.tools.nonce]\ncache = { ttl_ms = 600000 }",
    );
    plugin(dir.path(), "other", "");
    let host = host_over(dir.path()).await;
    let first = host
        .call("cch_nonce", "{}", &CallOptions::default())
        .await
        .expect("miss");
    let before = host.runtime_stats();
    assert_eq!(before.cached_results, 1, "{before:?}");
    let tools = host.tools().len();
    assert_eq!(before.tool_states, tools, "one state per served tool");

    // Another plugin's policy changes: the cached result stays.
    plugin(
        dir.path(),
        "other",
        "[resilience]\ncircuit_breaker = { failure_threshold = 3 }",
    );
    let report = host.reload().await.expect("reload");
    assert!(
        report.updated.iter().all(|t| t.starts_with("other_")),
        "{report:?}"
    );
    assert!(!report.updated.is_empty(), "{report:?}");
    let again = host
        .call("cch_nonce", "{}", &CallOptions::default())
        .await
        .expect("hit");
    assert!(again.cache_hit, "the unchanged plugin kept its cache");
    assert_eq!(again.text, first.text);

    // The other plugin goes: its tools' states are freed with the old
    // catalog (no call holds it).
    let other_tools = host
        .tools()
        .iter()
        .filter(|t| t.spec().name.starts_with("other_"))
        .count();
    assert!(other_tools > 0);
    std::fs::remove_file(dir.path().join("other.wasm")).expect("remove");
    std::fs::remove_file(dir.path().join("other.policy.toml")).expect("remove");
    host.reload().await.expect("reload");
    let after = host.runtime_stats();
    assert_eq!(after.tool_states, tools - other_tools, "{after:?}");
    assert_eq!(after.tool_states, host.tools().len());
    assert_eq!(after.cached_results, 1, "{after:?}");
}

#[tokio::test]
async fn a_cancelled_half_open_probe_does_not_jam_the_breaker() {
    let dir = tempfile::tempdir().expect("dir");
    plugin(
        dir.path(),
        "brk",
        "[resilience.tools.sleep]\ncircuit_breaker = { failure_threshold = 1, cool_down_ms = 1 }",
    );
    let host = host_over(dir.path()).await;
    // A timeout is the tool's failure: the circuit opens.
    let short = CallOptions::default().with_limits(Limits::LOOSEST.with_timeout_ms(100));
    let err = host
        .call("brk_sleep", r#"{"ms": 5000}"#, &short)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err}");

    // Waiting out the 1 ms cool-down is the behaviour under test.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    // After the cool-down the next call is the probe. It is dropped
    // (as an MCP cancel or a client disconnect would) once the guest runs,
    // which it says with its first progress message.
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions::default().with_progress(std::sync::Arc::new(move |_, _| {
        let _ = started_tx.send(());
    }));
    tokio::select! {
        result = host.call("brk_sleep", r#"{"ms": 60000}"#, &options) => {
            panic!("the probe should still be sleeping: {result:?}")
        }
        _ = started.recv() => {}
    }

    // The probe slot was released: this call probes, succeeds, and closes
    // the circuit.
    let out = host
        .call("brk_sleep", r#"{"ms": 1}"#, &CallOptions::default())
        .await
        .expect("the next call probes instead of being rejected");
    assert_eq!(out.attempts, 1);
    host.call("brk_sleep", r#"{"ms": 1}"#, &CallOptions::default())
        .await
        .expect("closed");
}

#[tokio::test]
async fn per_tenant_budgets_stay_at_their_capacity() {
    let dir = tempfile::tempdir().expect("dir");
    plugin(
        dir.path(),
        "ten",
        "[context]\nallow = [\"tenant\"]\n[resilience.tools.echo]\n\
         rate_limit = { requests = 1, per = \"hour\", throw_on_limit = true, \
         per_context_key = \"tenant\", max_context_keys = 16 }",
    );
    let host = host_over(dir.path()).await;
    let call = |tenant: String| {
        let options =
            CallOptions::default().with_context([("tenant", tenant)].into_iter().collect());
        let host = host.clone();
        async move { host.call("ten_echo", r#"{"text": "x"}"#, &options).await }
    };
    // Each tenant has its own budget of one an hour.
    call("a".into()).await.expect("a's first");
    assert!(matches!(
        call("a".into()).await,
        Err(CallError::RateLimited { .. })
    ));
    call("b".into()).await.expect("b's first");
    for i in 0..64 {
        call(format!("t{i}")).await.expect("each tenant's first");
    }
    let stats = host.runtime_stats();
    assert!(
        stats.tenant_budgets > 0 && stats.tenant_budgets <= 16,
        "{stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_tenants_leave_the_budgets_at_the_default_capacity() {
    // The plugin-wide limit is per tenant (checked first, so every new tenant
    // gets a budget); the tool's own limit, one call an hour for everyone,
    // then refuses all but the first call before any guest runs.
    let dir = tempfile::tempdir().expect("dir");
    plugin(
        dir.path(),
        "ten",
        "[context]\nallow = [\"tenant\"]\n[resilience]\n\
         rate_limit = { requests = 1, per = \"hour\", throw_on_limit = true, \
         per_context_key = \"tenant\" }\n\
         [resilience.tools.echo]\n\
         rate_limit = { requests = 1, per = \"hour\", throw_on_limit = true }",
    );
    let host = host_over(dir.path()).await;
    let tasks: Vec<_> = (0..4)
        .map(|worker| {
            let host = host.clone();
            tokio::spawn(async move {
                let mut refused = 0;
                for i in 0..25_000 {
                    let options = CallOptions::default()
                        .with_context([("tenant", format!("{worker}-{i}"))].into_iter().collect());
                    match host.call("ten_echo", r#"{"text": "x"}"#, &options).await {
                        Err(CallError::RateLimited { limit, .. }) => {
                            assert!(limit.contains("the tool's limit"), "{limit}");
                            refused += 1;
                        }
                        Err(other) => panic!("{other}"),
                        Ok(_) => {}
                    }
                }
                refused
            })
        })
        .collect();
    let mut refused = 0;
    for task in tasks {
        refused += task.await.expect("task");
    }
    assert_eq!(refused, 100_000 - 1, "one call ran, the rest were refused");
    let stats = host.runtime_stats();
    assert!(
        stats.tenant_budgets > 0 && stats.tenant_budgets <= corral::DEFAULT_MAX_CONTEXT_KEYS,
        "{stats:?}"
    );
}

#[tokio::test]
async fn a_zero_limit_override_is_invalid_input() {
    let dir = tempfile::tempdir().expect("dir");
    plugin(dir.path(), "z", "");
    let host = host_over(dir.path()).await;
    for (knob, limits) in [
        ("fuel", Limits::LOOSEST.with_fuel(0)),
        ("timeout_ms", Limits::LOOSEST.with_timeout_ms(0)),
        ("memory_bytes", Limits::LOOSEST.with_memory_bytes(0)),
        ("output_bytes", Limits::LOOSEST.with_output_bytes(0)),
    ] {
        let options = CallOptions::default().with_limits(limits);
        let err = host
            .call("z_echo", r#"{"text": "x"}"#, &options)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "invalid_limits", "{knob}: {err}");
        let message = err.to_string();
        assert!(
            message.contains(&format!("`{knob}` to 0")) && message.contains("z_echo"),
            "{message}"
        );
    }
}
