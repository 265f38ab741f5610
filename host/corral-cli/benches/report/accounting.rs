//! What least privilege and fair shares cost on the per-call path: evidence
//! recording on against off (interleaved blocks, the p50 of each), and a
//! tenant quota check against no quota, with the buckets in this process
//! and in a Redis on loopback (`redis-server`, which the test command
//! installs; the row is skipped without it).

use std::sync::Arc;
use std::time::Instant;

use corral::{CallOptions, Host, QuotaRules};
use tokio::runtime::Runtime;

use crate::Effort;
use crate::calls::{runtime, sample};
use crate::table::{Report, Row, Value, p50_micros};

const SHA256: (&str, &str) = ("sha256", r#"{"text":"abc"}"#);

/// A host over the `encode` sample, built by `configure`.
fn host(
    rt: &Runtime,
    configure: impl FnOnce(corral::HostBuilder) -> corral::HostBuilder,
) -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = sample("encode");
    std::fs::copy(&plugin, dir.path().join("encode.wasm")).expect("copy");
    let builder = Host::builder()
        .plugin_dir(dir.path())
        .cache(corral_test_support::cache());
    let host = rt.block_on(configure(builder).build()).expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (host, dir)
}

/// `n` latencies (ns) of `sha256` calls on `host`, as `options`' tenant.
fn latencies(rt: &Runtime, host: &Host, options: &CallOptions, n: usize) -> Vec<u64> {
    rt.block_on(async {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            host.call(SHA256.0, SHA256.1, options).await.expect("call");
            out.push(start.elapsed().as_nanos() as u64);
        }
        out
    })
}

/// p50s of `a` and `b` over interleaved blocks.
fn interleaved(rt: &Runtime, a: &Host, b: &Host, options: &CallOptions, n: usize) -> (f64, f64) {
    const BLOCKS: usize = 20;
    let block = n / BLOCKS + 1;
    latencies(rt, a, options, block);
    latencies(rt, b, options, block);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for _ in 0..BLOCKS {
        xs.extend(latencies(rt, a, options, block));
        ys.extend(latencies(rt, b, options, block));
    }
    (p50_micros(&mut xs), p50_micros(&mut ys))
}

/// Quotas that never refuse in a run: a calls and a fuel quota per tenant.
fn generous() -> QuotaRules {
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(
        file.path(),
        "version = 1\n[tenant]\ncalls = { limit = 1000000000, per = \"1h\" }\n\
         fuel = { limit = 1000000000000000, per = \"1h\" }\n",
    )
    .expect("write");
    QuotaRules::from_file(file.path()).expect("quotas")
}

pub fn costs(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let n = effort.pick(20_000, 3);
    let (on, _a) = host(&rt, |b| b);
    let (off, _b) = host(&rt, |b| b.record_evidence(false));
    let none = CallOptions::default();
    let (with, without) = interleaved(&rt, &on, &off, &none, n);
    report.push(Row {
        figure: "`Host::call`, `sha256`, evidence recorded, p50".into(),
        value: Value::Micros(with),
        baseline: Some(("recording off, p50".into(), Value::Micros(without))),
        target: "≤ 1.05×".into(),
        met: Some(with <= 1.05 * without),
    });

    let tenant =
        CallOptions::default().with_context([("tenant", "acme".to_string())].into_iter().collect());
    let (local, _c) = host(&rt, |b| b.quotas(generous()));
    let (with, without) = interleaved(&rt, &local, &on, &tenant, n);
    report.push(Row {
        figure: format!(
            "… with a tenant's calls and fuel quota, buckets in memory, p50 (+{:.1} µs)",
            with - without
        ),
        value: Value::Micros(with),
        baseline: Some(("no quota, p50".into(), Value::Micros(without))),
        target: "—".into(),
        met: None,
    });

    if which("redis-server") {
        let redis = corral_test_support::RedisServer::start();
        let store: Arc<dyn corral_store::SharedStore> =
            Arc::new(corral_store::RedisStore::open(&redis.url()).expect("url"));
        let (shared, _d) = host(&rt, |b| b.quotas(generous()).shared_store(store));
        let n = effort.pick(5_000, 3);
        let (with, without) = interleaved(&rt, &shared, &on, &tenant, n);
        report.push(Row {
            figure: format!(
                "… the same quota, buckets in Redis on loopback, p50 (+{:.1} µs)",
                with - without
            ),
            value: Value::Micros(with),
            baseline: Some(("no quota, p50".into(), Value::Micros(without))),
            target: "—".into(),
            met: None,
        });
        assert!(
            !shared.quota_status().fallback,
            "the Redis store never answered"
        );
    }
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
