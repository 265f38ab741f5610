//! Code mode's cost, measured against direct calls in the same run (issue
//! 46's "Measure"), on the bundled `encode` plugin:
//!
//! - start: the first `execute_code` of a new host whose component cache is
//!   empty (the runner is compiled) and of one whose cache holds the runner
//!   (it is loaded), beside the first direct `sha256` call of a new host;
//!   timed once each over a few fresh hosts and printed (a cold start is
//!   not a loop criterion can repeat);
//! - overhead: `execute_code` of `return 1` against one direct `sha256`
//!   call (`Host::call`), and a script making 10 `sha256` calls one after
//!   another against 10 direct calls, and the same script with a local
//!   function in place of the tool (its parse, rewrite and loop: the run's
//!   own start). The goal: the 10-call script within 1.5x the 10 direct
//!   calls plus one run's start.
//!
//! Needs the sample tools: run `scripts/build-guests.sh` first.

#![allow(missing_docs)]

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const TEN: &str = "let last;\nfor (let i = 0; i < 10; i++) last = await tools.sha256({text: 'abc' + i});\n\
                   return last.bytes;";

/// [`TEN`] with a local function in place of the tool: the same parse,
/// rewrite and loop, no tool call (the script's own share).
const TEN_LOCAL: &str = "let last; const sha = async (a) => ({bytes: a.text.length});\n\
                         for (let i = 0; i < 10; i++) last = await sha({text: 'abc' + i});\n\
                         return last.bytes;";

async fn host(plugins: &std::path::Path, cache: &std::path::Path) -> corral::Host {
    corral::Host::builder()
        .plugin_dir(plugins)
        .cache(corral::ComponentCache::in_dir(cache))
        .build()
        .await
        .expect("host")
}

async fn script(host: &corral::Host, code: &str) -> serde_json::Value {
    host.call_value(
        corral::CODE_TOOL,
        json!({ "code": code }),
        &corral::CallOptions::default(),
    )
    .await
    .expect("script")
    .into_json()
    .expect("json")
}

/// The median of `runs`.
fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn starts(rt: &tokio::runtime::Runtime, plugins: &std::path::Path) {
    // Five of each under `cargo bench`; one (the path checked, nothing
    // measured) in criterion's test mode, which CI runs.
    let runs = if std::env::args().any(|a| a == "--bench") {
        5
    } else {
        1
    };
    let (mut cold, mut warm, mut direct) = (Vec::new(), Vec::new(), Vec::new());
    let warm_cache = tempfile::tempdir().expect("cache");
    rt.block_on(async {
        // Fill the warm cache (the plugin and the runner).
        script(&host(plugins, warm_cache.path()).await, "return 1").await;
        for _ in 0..runs {
            let empty = tempfile::tempdir().expect("cache");
            let fresh = host(plugins, empty.path()).await;
            let started = Instant::now();
            script(&fresh, "return 1").await;
            cold.push(started.elapsed());

            let fresh = host(plugins, warm_cache.path()).await;
            let started = Instant::now();
            script(&fresh, "return 1").await;
            warm.push(started.elapsed());

            let fresh = host(plugins, warm_cache.path()).await;
            let started = Instant::now();
            fresh
                .call(
                    "sha256",
                    r#"{"text":"abc"}"#,
                    &corral::CallOptions::default(),
                )
                .await
                .expect("call");
            direct.push(started.elapsed());
        }
    });
    let (cold, warm, direct) = (median(cold), median(warm), median(direct));
    println!(
        "code_start/first_execute_code_cold_cache: median of {runs} {:.1} ms",
        cold.as_secs_f64() * 1e3
    );
    println!(
        "code_start/first_execute_code_warm_cache: median of {runs} {:.1} ms",
        warm.as_secs_f64() * 1e3
    );
    println!(
        "code_start/first_direct_call_warm_cache: median of {runs} {:.3} ms",
        direct.as_secs_f64() * 1e3
    );
}

fn bench(c: &mut Criterion) {
    let plugins = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins");
    let encode = plugins.join("encode.wasm");
    assert!(
        encode.is_file(),
        "{} is missing: run scripts/build-guests.sh first",
        encode.display()
    );
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(&encode, dir.path().join("encode.wasm")).expect("copy");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    starts(&rt, dir.path());

    let cache = tempfile::tempdir().expect("cache");
    let host = rt.block_on(host(dir.path(), cache.path()));
    let options = corral::CallOptions::default();
    assert_eq!(rt.block_on(script(&host, "return 1"))["result"], 1);
    assert_eq!(rt.block_on(script(&host, TEN))["result"], 4);
    assert_eq!(rt.block_on(script(&host, TEN_LOCAL))["result"], 4);

    let mut group = c.benchmark_group("code_mode");
    group.bench_function("direct_sha256", |b| {
        b.to_async(&rt).iter(|| async {
            host.call("sha256", r#"{"text":"abc"}"#, &options)
                .await
                .expect("call")
        })
    });
    group.bench_function("script_return_1", |b| {
        b.to_async(&rt).iter(|| script(&host, "return 1"))
    });
    group.bench_function("direct_10_sha256", |b| {
        b.to_async(&rt).iter(|| async {
            let mut last = None;
            for i in 0..10 {
                let args = format!(r#"{{"text":"abc{i}"}}"#);
                last = Some(host.call("sha256", &args, &options).await.expect("call"));
            }
            last
        })
    });
    group.bench_function("script_10_sha256", |b| {
        b.to_async(&rt).iter(|| script(&host, TEN))
    });
    group.bench_function("script_10_local_calls", |b| {
        b.to_async(&rt).iter(|| script(&host, TEN_LOCAL))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
