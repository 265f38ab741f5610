//! A plan of eight independent steps, each a tool that waits 100 ms of
//! wall-clock time (the `sleep` tool of the hostile test fixture, blocked in a
//! WASI poll), against one such step alone, in the same run. Parallel waves
//! should make the plan cost about one step (target: at most 1.1x).
//!
//! Needs the test fixtures: run `cargo build -p corral-test-support` first (its build script builds the guests)
//! (its build script builds them into `target/guests`).

#![allow(missing_docs)]

use std::path::Path;

use corral::{CallOptions, Host};
use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/guests/wasm32-wasip2/release/fixture_hostile.wasm");
    assert!(
        fixture.is_file(),
        "{} is missing: run `cargo build -p corral-test-support` first (its build script builds the guests)",
        fixture.display()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(&fixture, dir.path().join("hostile.wasm")).expect("copy");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let host = rt
        .block_on(
            Host::builder()
                .plugin_dir(dir.path())
                .cache(corral_test_support::cache())
                .build(),
        )
        .expect("host");
    let options = CallOptions::default();
    let single = r#"{"ms": 100}"#;
    let steps: Vec<serde_json::Value> = (0..8)
        .map(|i| serde_json::json!({"id": format!("s{i}"), "tool": "sleep", "arguments": {"ms": 100}}))
        .collect();
    let plan = serde_json::json!({ "steps": steps }).to_string();
    let out = rt
        .block_on(host.call("execute_tool_plan", &plan, &options))
        .expect("plan");
    assert_eq!(out.into_json().expect("json")["status"], "succeeded");

    let mut group = c.benchmark_group("wait_100ms");
    group.sample_size(20);
    group.bench_function("one_step", |b| {
        b.to_async(&rt)
            .iter(|| async { host.call("sleep", single, &options).await.expect("call") })
    });
    group.bench_function("plan_of_8_parallel_steps", |b| {
        b.to_async(&rt).iter(|| async {
            host.call("execute_tool_plan", &plan, &options)
                .await
                .expect("plan")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
