//! Hostile plugins at load time: terminal escapes and bidi controls in specs,
//! context flooding (10 000 tools, huge descriptions and schemas), `describe`
//! that sleeps, spins or overflows its stack, a 1 GiB static, and schemas that
//! try to reach files or the network, recurse or backtrack.

use std::time::{Duration, Instant};

use corral::{ComponentError, DescribeCaps, Host, Limits, LoadErrorReason};

use crate::support::{
    BIG_STATIC, DESCRIBE_RECURSE, DESCRIBE_SLEEP, DESCRIBE_SPIN, ESCAPE_DESCRIBE, FLOOD_DESCRIBE,
    HOSTILE, UNKNOWN_IMPORT, assert_still_serves, cache, guest, host, plugin_dir, pool,
};

/// The one load error of a directory holding the hostile fixture and `bad`.
async fn only_error(bad: &str) -> (String, LoadErrorReason) {
    let dir = plugin_dir(&[HOSTILE, bad]);
    let host = host(dir.path()).await;
    let errors = host.load_errors();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_still_serves(&host).await;
    (errors[0].to_string(), errors[0].reason.clone())
}

#[tokio::test]
async fn escape_codes_in_a_description_keep_the_plugin_out() {
    let (message, _) = only_error(ESCAPE_DESCRIBE).await;
    assert!(
        message.contains("tool `innocent`: the description contains U+001B (ESC) at character 0"),
        "{message}"
    );
    assert!(
        !message.contains('\u{1b}'),
        "the message itself is clean: {message:?}"
    );
}

#[tokio::test]
async fn ten_thousand_tools_exceed_the_tool_cap() {
    let (message, reason) = only_error(FLOOD_DESCRIBE).await;
    assert!(
        matches!(
            reason,
            LoadErrorReason::OverCap {
                found: 10_000,
                cap: 128,
                knob: "max_tools",
                ..
            }
        ),
        "{message}"
    );
    assert!(message.contains("`max_tools`"), "names the knob: {message}");
}

#[tokio::test]
async fn a_policy_raises_a_cap_for_its_plugin() {
    let dir = plugin_dir(&[FLOOD_DESCRIBE]);
    std::fs::write(
        dir.path().join("fixture_flood_describe.policy.toml"),
        "version = 1\n[describe]\nmax_tools = 20000\n",
    )
    .expect("policy");
    let host = host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    assert!(host.tool("flood_9999").is_some());
    // And the host's own knob lowers it for everyone.
    let dir = plugin_dir(&[HOSTILE]);
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .describe_caps(DescribeCaps::default().with_max_tools(3))
        .build()
        .await
        .expect("host");
    assert!(
        matches!(
            host.load_errors()[0].reason,
            LoadErrorReason::OverCap {
                knob: "max_tools",
                cap: 3,
                ..
            }
        ),
        "{:?}",
        host.load_errors()
    );
}

#[tokio::test]
async fn slow_describes_run_concurrently_under_a_short_deadline() {
    // Four plugins whose describe sleeps a minute: all four fail at the
    // describe deadline (2 000 ms by default), together, not one after another.
    let dir = tempfile::tempdir().expect("dir");
    for i in 0..4 {
        std::fs::copy(
            guest(DESCRIBE_SLEEP),
            dir.path().join(format!("slow{i}.wasm")),
        )
        .expect("copy");
    }
    std::fs::copy(guest(HOSTILE), dir.path().join("hostile.wasm")).expect("copy");
    let started = Instant::now();
    let host = host(dir.path()).await;
    let took = started.elapsed();
    let errors = host.load_errors();
    assert_eq!(errors.len(), 4, "{errors:#?}");
    for err in &errors {
        assert!(
            err.to_string()
                .contains("exceeded its deadline of 2000 ms (raise `[describe] timeout_ms`"),
            "{err}"
        );
    }
    // One after another they would take four deadlines (8 s); together,
    // one. Three is a generous bound for a loaded 2-core machine that still
    // tells the two apart.
    assert!(
        took < Duration::from_millis(3 * Limits::DEFAULT_DESCRIBE_TIMEOUT_MS),
        "four slow describes took {took:?}, more than three deadlines: they ran in sequence"
    );
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_policy_sets_its_plugins_describe_deadline() {
    let dir = plugin_dir(&[DESCRIBE_SLEEP]);
    std::fs::write(
        dir.path().join("fixture_describe_sleep.policy.toml"),
        "version = 1\n[describe]\ntimeout_ms = 300\n",
    )
    .expect("policy");
    let started = Instant::now();
    let host = host(dir.path()).await;
    // Its describe sleeps a minute: cut at 300 ms (a generous bound on a
    // deadline, not a speed measurement).
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        host.load_errors()[0]
            .to_string()
            .contains("deadline of 300 ms"),
        "{:?}",
        host.load_errors()
    );
}

#[tokio::test]
async fn describe_waits_for_a_slot_of_the_call_pool() {
    // With one instance slot held by a running call, a reload's describe
    // waits for it instead of creating an instance beyond the pool.
    let dir = plugin_dir(&[HOSTILE]);
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool().with_max_concurrent_instances(1))
        .cache(cache())
        .build()
        .await
        .expect("host");
    let (options, mut running) = super::running();
    let busy = {
        let host = host.clone();
        tokio::spawn(async move { host.call("sleep", r#"{"ms": 800}"#, &options).await })
    };
    // The guest runs, so the call holds the slot: add a plugin and reload.
    running.recv().await.expect("the call reports progress");
    std::fs::copy(
        guest(crate::support::ENCODE),
        dir.path().join("encode.wasm"),
    )
    .expect("copy");
    let started = Instant::now();
    let report = host.reload().await.expect("reload");
    assert!(report.added.contains(&"sha256".to_string()), "{report:?}");
    // The guest sleeps 800 ms after its progress report; a describe that
    // did not wait for the slot would finish long before (a generous bound
    // on a wait, not a speed measurement).
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "describe ran while the only slot was taken ({:?})",
        started.elapsed()
    );
    busy.await.expect("task").expect("the call finishes");
}

#[tokio::test]
async fn describe_that_spins_or_overflows_is_stopped() {
    for (fixture, expected) in [
        (DESCRIBE_SPIN, "ran out of fuel"),
        (DESCRIBE_RECURSE, "overflowed its stack"),
    ] {
        let (message, reason) = only_error(fixture).await;
        assert!(
            matches!(reason, LoadErrorReason::DescribeFailed(_)),
            "{message}"
        );
        assert!(message.contains(expected), "{fixture}: {message}");
    }
}

#[tokio::test]
async fn a_one_gib_static_is_refused_before_guest_code_runs() {
    // Its memory's minimum size is over the pool's slot size, so the engine
    // refuses it when compiling: no instance, no guest code.
    let (message, reason) = only_error(BIG_STATIC).await;
    assert!(
        matches!(
            reason,
            LoadErrorReason::Component(ComponentError::MemoryTooLarge(_))
        ),
        "{message}"
    );
    assert!(message.contains("more linear memory than"), "{message}");
}

#[tokio::test]
async fn an_unknown_import_keeps_the_plugin_out() {
    let (message, reason) = only_error(UNKNOWN_IMPORT).await;
    assert!(
        matches!(reason, LoadErrorReason::UnsatisfiedImports(_)),
        "{message}"
    );
    assert!(message.contains("evil:fixture/backdoor"), "{message}");
}
