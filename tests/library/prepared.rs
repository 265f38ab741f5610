//! Instances made ahead of calls (`corral_sandbox::Instances`): each serves
//! exactly one call, takes the call's limits, context and hooks when the
//! call takes it, is dropped when its plugin is reloaded, and counts
//! against the pool, which still runs calls when it is full.

use std::time::Duration;

use corral::{CallContext, CallError, CallOptions, Host, Limits, PoolConfig};
use serde_json::{Value, json};

use crate::replay::dup_dir;
use crate::support::{DUP_A, DUP_B, ENCODE, HOSTILE, builder, guest, plugin_dir};

/// Waits until `host` has at least `n` instances made ahead and ready.
/// The helper thread makes them; this is the test's only way to know.
async fn ready(host: &Host, n: usize) {
    tokio::time::timeout(Duration::from_secs(60), async {
        while host.prepared_stats().ready < n {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {n} instance(s) made ahead: {:?}", host.prepared_stats()));
}

/// The pause of a caller that leaves more than [`corral::MIN_GAP`] between
/// its calls: the pace at which instances are made ahead (the gap is the
/// behaviour under test, not a wait for something to happen).
async fn paced() {
    tokio::time::sleep(corral::MIN_GAP * 2).await;
}

/// A call at that pace: its JSON output.
async fn json_call(host: &Host, tool: &str, arguments: Value, options: &CallOptions) -> Value {
    paced().await;
    host.call(tool, &arguments.to_string(), options)
        .await
        .unwrap_or_else(|err| panic!("{tool}: {err}"))
        .into_json()
        .expect("json")
}

/// A call at that pace that must fail: its error.
async fn failing_call(
    host: &Host,
    tool: &str,
    arguments: &Value,
    options: &CallOptions,
) -> CallError {
    paced().await;
    host.call(tool, &arguments.to_string(), options)
        .await
        .unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_made_ahead_serves_exactly_one_call() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path()).build().await.expect("host");
    json_call(&host, "counter", json!({}), &CallOptions::default()).await;
    ready(&host, 1).await;

    // 200 calls at once, over 8 slots: each instance's global counter says 1.
    let calls = 200;
    let answers = futures_util::future::join_all((0..calls).map(|_| {
        let host = host.clone();
        tokio::spawn(async move {
            json_call(&host, "counter", json!({}), &CallOptions::default()).await
        })
    }))
    .await;
    for answer in answers {
        assert_eq!(
            answer.expect("task")["calls"],
            1,
            "an instance served two calls"
        );
    }
    // Instantiations against calls: each call took one instance made ahead
    // or made its own; every instance made ahead was taken by one call, or
    // is still ready, or was dropped unused.
    let stats = host.prepared_stats();
    assert_eq!(stats.taken + stats.fresh, calls + 1, "{stats:?}");
    assert!(
        stats.taken >= 1,
        "no call took an instance made ahead: {stats:?}"
    );
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let s = host.prepared_stats();
            if s.prepared == s.taken + s.ready as u64 + s.discarded {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "instances made ahead unaccounted for: {:?}",
            host.prepared_stats()
        )
    });
    // Their start-up's fuel counted for no call, but is reported.
    assert!(host.prepared_stats().fuel > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_binds_its_limits_and_context_when_it_takes_an_instance() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .default_context_policy(corral::ContextPolicy::PassThrough)
        .build()
        .await
        .expect("host");
    let crunch = json!({"rounds": 200_000});
    let full = json_call(&host, "crunch", crunch.clone(), &CallOptions::default()).await;
    assert!(full["state"].is_string());

    // A tighter fuel override stops the call, on an instance made ahead.
    ready(&host, 1).await;
    let before = host.prepared_stats();
    let tight = CallOptions::default().with_limits(Limits::default().with_fuel(100_000));
    let err = failing_call(&host, "crunch", &crunch, &tight).await;
    assert!(matches!(err, CallError::OutOfFuel { .. }), "{err:?}");
    let after = host.prepared_stats();
    assert_eq!(
        after.taken,
        before.taken + 1,
        "it ran on an instance made ahead"
    );

    // Below what the start-up used (its memory; a Rust guest's start-up
    // uses about 1 unit of fuel): the instance made ahead is dropped and
    // the call starts fresh, where its instantiation meets the cap too.
    ready(&host, 1).await;
    let before = host.prepared_stats();
    let starved = CallOptions::default().with_limits(Limits::default().with_memory_bytes(64 << 10));
    let err = failing_call(&host, "crunch", &crunch, &starved).await;
    assert!(matches!(err, CallError::MemoryLimit { .. }), "{err:?}");
    let after = host.prepared_stats();
    assert_eq!(
        (after.taken, after.fresh, after.discarded),
        (before.taken, before.fresh + 1, before.discarded + 1),
        "{after:?}"
    );

    // Each call's own context, on instances made ahead.
    for tenant in ["acme", "globex"] {
        ready(&host, 1).await;
        let before = host.prepared_stats().taken;
        let options = CallOptions::default()
            .with_context([("tenant", tenant)].into_iter().collect::<CallContext>());
        let seen = json_call(&host, "context_echo", json!({}), &options).await;
        assert_eq!(seen["context"]["tenant"], tenant);
        assert_eq!(host.prepared_stats().taken, before + 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_drops_the_instances_made_for_the_old_build() {
    let dir = dup_dir(DUP_A);
    let host = builder(dir.path()).build().await.expect("host");
    let from = |out: Value| out["from"].as_str().map(str::to_owned);
    let first = json_call(&host, "dup_tool", json!({}), &CallOptions::default()).await;
    assert_eq!(from(first).as_deref(), Some("fixture-dup-a"));
    ready(&host, 1).await;

    std::fs::copy(guest(DUP_B), dir.path().join("dup.wasm")).expect("copy");
    let before = host.prepared_stats();
    host.reload().await.expect("reload");
    let after = host.prepared_stats();
    assert_eq!(after.ready, 0, "{after:?}");
    assert!(after.discarded > before.discarded, "{after:?}");
    // No call runs on the old build once the reload returned.
    for _ in 0..20 {
        let out = json_call(&host, "dup_tool", json!({}), &CallOptions::default()).await;
        assert_eq!(from(out).as_deref(), Some("fixture-dup-b"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_made_ahead_count_against_the_pool_and_yield_to_calls() {
    // Two slots: at most one instance made ahead (half the slots).
    let dir = plugin_dir(&[HOSTILE, ENCODE]);
    let host = builder(dir.path())
        .pool(PoolConfig::default().with_max_concurrent_instances(2))
        .build()
        .await
        .expect("host");
    json_call(
        &host,
        "sha256",
        json!({"text": "abc"}),
        &CallOptions::default(),
    )
    .await;
    ready(&host, 1).await;
    let stats = host.runtime_stats();
    assert_eq!((stats.instances_in_use, stats.instances_ready), (0, 1));

    // One slot runs a long call, the other holds `encode`'s instance.
    let sleeper = {
        let host = host.clone();
        tokio::spawn(async move {
            host.call("sleep", r#"{"ms": 30000}"#, &CallOptions::default())
                .await
        })
    };
    tokio::time::timeout(Duration::from_secs(30), async {
        while host.runtime_stats().instances_in_use != 1 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the sleeper holds a slot");

    // A call of another plugin finds no free slot: it takes the slot of
    // `encode`'s instance (dropped unused) and runs at once, fresh.
    let before = host.prepared_stats();
    let out = json_call(&host, "counter", json!({}), &CallOptions::default()).await;
    assert_eq!(out["calls"], 1);
    let after = host.prepared_stats();
    assert_eq!(after.discarded, before.discarded + 1, "{after:?}");
    assert!(
        !sleeper.is_finished(),
        "the call did not wait for the sleeper"
    );
    sleeper.abort();
}
