//! One trivial tool call (`sha256` of "abc" from the bundled `encode` plugin),
//! measured three ways in the same run:
//!
//! - `native`: the same work as a plain Rust function (parse the arguments,
//!   hash, serialize the result);
//! - `wasmtime_floor`: a fresh store and instance from the same `InstancePre`
//!   on corral's engine, and one typed call (the sandbox's call style), with
//!   no validation, limits or bookkeeping: the least any sandboxed call can
//!   cost;
//! - `host_call`: `Host::call`, the full path (schema validation, pool slot,
//!   fresh sandbox with fuel, epoch deadline, memory cap and captured stdio,
//!   call, classification, teardown);
//! - `host_call_no_layers` and `host_call_all_layers`: the same with a new
//!   argument every call, once with no resilience configured and once with
//!   retry, circuit breaker, rate limit and cache all configured (the cache
//!   always missing): what the layers cost.
//!
//! Needs the sample tools: run `scripts/build-guests.sh` first.

#![allow(missing_docs)]

use corral_test_support::Floor;
use criterion::{Criterion, criterion_group, criterion_main};
use sha2::{Digest, Sha256};

const ARGS: &str = r#"{"text":"abc"}"#;

fn native(arguments: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(arguments).expect("json");
    let text = value["text"].as_str().expect("text");
    let digest = hex::encode(Sha256::digest(text.as_bytes()));
    serde_json::json!({ "sha256": digest, "bytes": text.len() }).to_string()
}

fn bench(c: &mut Criterion) {
    let plugin = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/encode.wasm");
    assert!(
        plugin.is_file(),
        "{} is missing: run scripts/build-guests.sh first",
        plugin.display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let mut group = c.benchmark_group("trivial_call");

    let expected = native(ARGS);
    group.bench_function("native", |b| b.iter(|| native(std::hint::black_box(ARGS))));

    // The floor: same engine configuration as the host, no corral code on the
    // path. Measured at three `keep_resident` sizes to back PoolConfig's default.
    for keep in [64usize << 10, 4 << 20] {
        let pool = corral::PoolConfig::default().with_keep_resident_bytes(keep);
        let engine = corral::Engine::new(pool).expect("engine");
        let floor = Floor::new(&engine, &plugin);
        let result = rt.block_on(floor.call("sha256", ARGS));
        assert_eq!(result, expected);
        group.bench_function(
            format!("wasmtime_floor_keep_resident_{}k", keep >> 10),
            |b| b.to_async(&rt).iter(|| floor.call("sha256", ARGS)),
        );
    }

    let host = rt
        .block_on(
            corral::Host::builder()
                .plugin_dir(plugin.parent().expect("dir"))
                .cache(corral_test_support::cache())
                .build(),
        )
        .expect("host");
    let options = corral::CallOptions::default();
    let out = rt
        .block_on(host.call("sha256", ARGS, &options))
        .expect("host call");
    assert_eq!(out.text, expected);
    group.bench_function("host_call", |b| {
        b.to_async(&rt)
            .iter(|| async { host.call("sha256", ARGS, &options).await.expect("call") })
    });

    // Every layer configured, the cache missing (a new argument each call).
    let layered_dir = tempfile::tempdir().expect("dir");
    std::fs::copy(&plugin, layered_dir.path().join("encode.wasm")).expect("copy");
    std::fs::write(
        layered_dir.path().join("encode.policy.toml"),
        "version = 1\n[resilience.tools.sha256]\n\
         retry = { max_attempts = 3 }\n\
         circuit_breaker = { failure_threshold = 5 }\n\
         rate_limit = { requests = 1000000000, per = \"second\" }\n\
         cache = { ttl_ms = 60000, max_size = 100 }\n",
    )
    .expect("policy");
    let plain = host.clone();
    let layered = rt
        .block_on(
            corral::Host::builder()
                .plugin_dir(layered_dir.path())
                .cache(corral_test_support::cache())
                .build(),
        )
        .expect("host");
    assert!(
        layered.load_errors().is_empty(),
        "{:?}",
        layered.load_errors()
    );
    let counter = std::sync::atomic::AtomicU64::new(0);
    let next_args = || {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!(r#"{{"text":"abc{n}"}}"#)
    };
    group.bench_function("host_call_no_layers", |b| {
        b.to_async(&rt).iter(|| {
            let args = next_args();
            let plain = plain.clone();
            async move {
                plain
                    .call("sha256", &args, &corral::CallOptions::default())
                    .await
                    .expect("call")
            }
        })
    });
    group.bench_function("host_call_all_layers", |b| {
        b.to_async(&rt).iter(|| {
            let args = next_args();
            let layered = layered.clone();
            async move {
                let out = layered
                    .call("sha256", &args, &corral::CallOptions::default())
                    .await
                    .expect("call");
                assert!(!out.cache_hit);
                out
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
