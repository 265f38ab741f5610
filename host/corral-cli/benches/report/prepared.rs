//! Instances made ahead of calls and stores dropped after them (issue 51):
//! one caller's p50 and p99 with them on and off against the bare wasmtime
//! floor of the same component and call (fresh store, instantiation, call,
//! drop), back to back and after the caller idled 20 µs and 20 ms; the
//! throughput at 1 and 2 callers, on against off; and the RSS of a host
//! whose every bundled sample has instances made ahead, against the same
//! host with none, each in a child process of its own.

use std::io::Write;
use std::time::Duration;

use corral::{CallOptions, Host, PoolConfig};
use corral_test_support::Floor;
use serde_json::{Value as Json, json};

use crate::calls::{
    IDLE, SHA256, floor_latencies, host_latencies, host_pool, rounds, runtime, sample,
};
use crate::table::{Report, Row, Value, median, p50_micros, p99_micros};
use crate::{Effort, root};

const CHILD_ENV: &str = "CORRAL_BENCH_PREPARED_RSS";

/// How many times the latency rows alternate between on, off and the floor.
const BLOCKS: usize = 10;

/// The pool with nothing made ahead: every call instantiates when it
/// arrives (stores are still dropped after the answer).
fn off() -> PoolConfig {
    PoolConfig::default().with_prepared(0, 0)
}

/// One tool of the latency rows: language, sample, call, and its p50 goal
/// in µs (`None`: below the floor's p50).
type Case = (
    &'static str,
    &'static str,
    (&'static str, &'static str),
    Option<f64>,
);

/// p50 and p99 of `samples` (ns), in µs.
fn p50_p99(samples: &mut [u64]) -> (f64, f64) {
    (p50_micros(samples), p99_micros(samples))
}

/// The latency rows of the three tools of the issue.
pub fn latency(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let engine = corral::Engine::new(PoolConfig::default()).expect("engine");
    let cases: [Case; 3] = [
        ("Rust", "encode", SHA256, None),
        (
            "JavaScript",
            "versions",
            ("semver_compare", r#"{"a":"1.2.3","b":"1.10.0"}"#),
            Some(100.0),
        ),
        (
            "Python",
            "tables",
            ("table_render", r#"{"rows":[{"a":1,"b":2},{"a":3,"b":4}]}"#),
            Some(2_000.0),
        ),
    ];
    for (language, name, call, goal) in cases {
        let file = sample(name);
        let (on, _d1) = host_pool(&rt, std::slice::from_ref(&file), PoolConfig::default());
        let (off, _d2) = host_pool(&rt, std::slice::from_ref(&file), off());
        let floor = Floor::new(&engine, &file);
        for idle in [Duration::ZERO, IDLE, Duration::from_millis(20)] {
            let n = match (idle.as_millis() > 0, name) {
                (true, _) => effort.pick(150, 2),
                (false, "tables") => effort.pick(600, 2),
                (false, _) => effort.pick(6_000, 2),
            };
            let block = n / BLOCKS + 1;
            host_latencies(&rt, &on, call, block, idle);
            host_latencies(&rt, &off, call, block, idle);
            floor_latencies(&rt, &floor, call, block, idle);
            let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..BLOCKS {
                a.extend(host_latencies(&rt, &on, call, block, idle));
                b.extend(host_latencies(&rt, &off, call, block, idle));
                c.extend(floor_latencies(&rt, &floor, call, block, idle));
            }
            let ((on50, on99), (off50, off99), (bare50, bare99)) =
                (p50_p99(&mut a), p50_p99(&mut b), p50_p99(&mut c));
            let after = if idle.is_zero() {
                "back to back".to_string()
            } else if idle < Duration::from_millis(1) {
                format!("after the caller slept {} µs", idle.as_micros())
            } else {
                format!("after the caller slept {} ms", idle.as_millis())
            };
            let (target, met) = match goal {
                _ if !idle.is_zero() => ("—".to_string(), None),
                Some(goal) => (format!("p50 ≤ {goal} µs"), Some(on50 <= goal)),
                None => ("p50 below the floor's".to_string(), Some(on50 < bare50)),
            };
            report.push(Row {
                figure: format!(
                    "`{}` ({language}), one caller, {after}: made ahead, p50 (p99 {on99:.1} µs)",
                    call.0
                ),
                value: Value::Micros(on50),
                baseline: Some((
                    format!("bare wasmtime floor, p50 (p99 {bare99:.1} µs)"),
                    Value::Micros(bare50),
                )),
                target,
                met,
            });
            report.push(Row {
                figure: format!(
                    "… made when the call arrives (`with_prepared(0, 0)`), p50 (p99 {off99:.1} µs)"
                ),
                value: Value::Micros(off50),
                baseline: Some(("the floor, p50".into(), Value::Micros(bare50))),
                target: "—".into(),
                met: None,
            });
        }
    }
}

/// Throughput of `sha256` at 1 and 2 callers, made ahead against not.
pub fn throughput(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let file = sample("encode");
    let (on, _d1) = host_pool(&rt, std::slice::from_ref(&file), PoolConfig::default());
    let (off, _d2) = host_pool(&rt, std::slice::from_ref(&file), off());
    // Many short rounds, on and off in turn, compared pair by pair: on
    // this 2-core VM a whole round runs at one of two speeds (about 70 k/s
    // or 105 k/s at 2 callers, whichever the setting), so a few long
    // rounds compare the machine's moods, not the settings.
    let calls = effort.pick(10_000, 8);
    let n = effort.pick(21, 1);
    let caller = |host: Host| {
        move || {
            let host = host.clone();
            async move {
                let options = CallOptions::default();
                host.call(SHA256.0, SHA256.1, &options).await.expect("call");
            }
        }
    };
    let (call_on, call_off) = (caller(on), caller(off));
    let (mut on1, mut on2, mut off1, mut off2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let (one, two) = rounds(&rt, &call_on, 2, calls, 1);
        on1.push(one);
        on2.push(two);
        let (one, two) = rounds(&rt, &call_off, 2, calls, 1);
        off1.push(one);
        off2.push(two);
    }
    let paired =
        |on: &[f64], off: &[f64]| median(on.iter().zip(off).map(|(on, off)| on / off).collect());
    for (callers, ratio, on, off) in [
        (1, paired(&on1, &off1), median(on1), median(off1)),
        (2, paired(&on2, &off2), median(on2), median(off2)),
    ] {
        report.push(Row {
            figure: format!(
                "in-process throughput, `sha256`, {callers} caller(s), made ahead (median of {n} \
                 alternating rounds of {calls} calls; median ratio of each round to the next: {ratio:.2}×)"
            ),
            value: Value::PerSecond(on),
            baseline: Some(("made when the call arrives".into(), Value::PerSecond(off))),
            target: "≥ 0.95× without (paired)".into(),
            met: Some(ratio >= 0.95),
        });
    }
}

/// Arguments that pass `schema`: each required property given a value of
/// its type (the RSS rows need each tool to run, not to succeed).
fn arguments_for(schema: &Json) -> Json {
    let mut out = serde_json::Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let Some(name) = name.as_str() else { continue };
        let property = &schema["properties"][name];
        let value = match property["type"].as_str() {
            Some("string") => json!("a"),
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            _ => json!({}),
        };
        out.insert(name.to_string(), value);
    }
    Json::Object(out)
}

/// The child: a host over the bundled samples, every tool called once,
/// then (made ahead) waiting until the helper has made what it will; prints
/// its RSS.
pub fn child() {
    let made_ahead = std::env::var(CHILD_ENV).is_ok_and(|v| v == "on");
    let rt = runtime();
    let pool = if made_ahead {
        PoolConfig::default()
    } else {
        off()
    };
    let host = rt
        .block_on(
            Host::builder()
                .plugin_dir(root().join("plugins"))
                .cache(corral_test_support::cache())
                .pool(pool)
                .build(),
        )
        .expect("host");
    let plugins = host
        .tools()
        .iter()
        .filter_map(|t| t.plugin().map(|p| p.name().to_owned()))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    rt.block_on(async {
        for spec in host.specs() {
            let arguments = arguments_for(&spec.parameters).to_string();
            drop(
                host.call(&spec.name, &arguments, &CallOptions::default())
                    .await,
            );
        }
    });
    let expected = if made_ahead {
        (plugins * pool.prepared_per_plugin as usize).min(pool.prepared_total as usize)
    } else {
        0
    };
    let start = std::time::Instant::now();
    while host.prepared_stats().ready < expected && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let line = json!({
        "rss_mib": crate::inflight::status_mib("VmRSS:"),
        "ready": host.prepared_stats().ready,
        "plugins": plugins,
    });
    writeln!(std::io::stdout().lock(), "{line}").expect("write");
}

/// Whether this process is the RSS child.
pub fn child_requested() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

fn measure(mode: &str) -> Json {
    crate::inflight::child_json(CHILD_ENV, mode)
}

/// The RSS row.
pub fn rss(effort: Effort, report: &mut Report) {
    if !effort.full {
        // A smoke run would compile every sample into the test cache.
        return;
    }
    // A first child fills the component cache: a measured child that
    // compiled a sample (one `scripts/bench.sh` rebuilt) would count the
    // compiler's memory as its own.
    measure("off");
    let (on, off) = (measure("on"), measure("off"));
    let mib = |r: &Json| r["rss_mib"].as_f64().unwrap_or(f64::NAN);
    report.push(Row {
        figure: format!(
            "RSS, a host over the {} bundled samples with every tool called once, {} instances made ahead",
            on["plugins"], on["ready"]
        ),
        value: Value::Mebibytes(mib(&on)),
        baseline: Some(("the same with none made ahead".into(), Value::Mebibytes(mib(&off)))),
        target: "—".into(),
        met: None,
    });
}

/// The section: latency, throughput, RSS.
pub fn costs(effort: Effort, report: &mut Report) {
    latency(effort, report);
    throughput(effort, report);
    rss(effort, report);
}
