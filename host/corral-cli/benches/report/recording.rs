//! What record and replay cost (`corral::replay`): a call recorded by its
//! plugin's policy (`[record]`, every call: the tape, the recording and its
//! write off the caller's path) against the same call unrecorded
//! (interleaved blocks, the p50 of each), for a tool with few imports
//! (`sha256`), one with an HTTP body (`fetch_url` against a local server)
//! and one with many imports at start-up (Python's `table_render`); a call
//! whose caller waits for its recording to be written; a replay's run
//! against the original call's; and what deterministic floats (canonical
//! NaNs, deterministic relaxed SIMD, on for every engine so that replays
//! are faithful on any CPU) cost a float-heavy guest, on the bare floor.

use std::time::Instant;

use corral::replay::{RecordRequest, Recording, RecordingsConfig, ReplayOptions, replay};
use corral::{CallOptions, Host};
use tokio::runtime::Runtime;

use crate::Effort;
use crate::calls::{runtime, sample};
use crate::table::{Report, Row, Value, p50_micros};
use corral_test_support::Floor;

/// A host over copies of `plugins`, each with `policy` (its `{port}`
/// replaced), recording into a directory of its own.
fn host(rt: &Runtime, plugins: &[&str], policy: &str, port: u16) -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in plugins {
        std::fs::copy(sample(name), dir.path().join(format!("{name}.wasm"))).expect("copy");
        let text = policy.replace("{port}", &port.to_string());
        std::fs::write(dir.path().join(format!("{name}.policy.toml")), text).expect("policy");
    }
    let host = rt
        .block_on(
            Host::builder()
                .plugin_dir(dir.path())
                .cache(corral_test_support::cache())
                .recordings(RecordingsConfig::new(dir.path().join("recordings")))
                .build(),
        )
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (host, dir)
}

fn latencies(
    rt: &Runtime,
    host: &Host,
    call: (&str, &str),
    options: &CallOptions,
    n: usize,
) -> Vec<u64> {
    rt.block_on(async {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            host.call(call.0, call.1, options).await.expect("call");
            out.push(start.elapsed().as_nanos() as u64);
        }
        out
    })
}

/// p50s of `call` on `a` and on `b`, over interleaved blocks.
fn interleaved(rt: &Runtime, a: &Host, b: &Host, call: (&str, &str), n: usize) -> (f64, f64) {
    const BLOCKS: usize = 20;
    let block = n / BLOCKS + 1;
    let options = CallOptions::default();
    latencies(rt, a, call, &options, block);
    latencies(rt, b, call, &options, block);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for _ in 0..BLOCKS {
        xs.extend(latencies(rt, a, call, &options, block));
        ys.extend(latencies(rt, b, call, &options, block));
    }
    (p50_micros(&mut xs), p50_micros(&mut ys))
}

/// One call recorded at the caller's request: the recording.
fn recorded(rt: &Runtime, host: &Host, call: (&str, &str)) -> Recording {
    let request = RecordRequest::new();
    let options = CallOptions::default().with_record(request.clone());
    rt.block_on(host.call(call.0, call.1, &options))
        .expect("call");
    Recording::read(&request.written()[0]).expect("recording")
}

pub fn costs(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let server = corral_test_support::TestServer::start("a body of a few words, as a page has");
    let url = format!(r#"{{"url":"http://127.0.0.1:{}/page"}}"#, server.port);
    let cases: [(&str, &str, (&str, &str), usize); 3] = [
        (
            "few imports",
            "encode",
            ("sha256", r#"{"text":"abc"}"#),
            20_000,
        ),
        ("an HTTP body", "fetch", ("fetch_url", url.as_str()), 5_000),
        (
            "Python start-up",
            "tables",
            ("table_render", r#"{"rows":[{"a":1,"b":2},{"a":3,"b":4}]}"#),
            2_000,
        ),
    ];
    let allow = "version = 1\n[http]\nallow = [\"http://127.0.0.1:{port}\"]\n";
    // `fetch_url` hints five requests a second: lifted, so that the
    // figures are the calls' own.
    let unlimited = "[resilience.tools.fetch_url]\nrate_limit = { requests = 1000000, \
                     per = \"second\", burst_size = 1000000 }\n";
    let record = "[record]\nrate = 1.0\n";
    for (what, plugin, call, n) in cases {
        let n = effort.pick(n, 3);
        let allow = if plugin == "fetch" {
            format!("{allow}{unlimited}")
        } else {
            allow.to_owned()
        };
        let (on, _a) = host(&rt, &[plugin], &format!("{allow}{record}"), server.port);
        let (off, _b) = host(&rt, &[plugin], &allow, server.port);
        let (with, without) = interleaved(&rt, &on, &off, call, n);
        let made = (n / 20 + 1) * 21;
        let dropped = on
            .recordings()
            .map_or(0, corral::replay::Recordings::dropped);
        report.push(Row {
            figure: format!(
                "`{}` ({what}), every call sampled by policy ({}), p50",
                call.0,
                if dropped == 0 {
                    format!("all {made} written")
                } else {
                    format!(
                        "{} of {made} written, the rest dropped: the writer was behind",
                        made as u64 - dropped
                    )
                }
            ),
            value: Value::Micros(with),
            baseline: Some(("not recorded, p50".into(), Value::Micros(without))),
            target: "≤ 1.3×".into(),
            met: Some(with <= 1.3 * without),
        });

        // The caller waits for the write (`call --record`, MCP `_meta`).
        let m = effort.pick(n / 10, 2).max(2);
        let request = RecordRequest::new();
        let waited = CallOptions::default().with_record(request);
        let mut xs = latencies(&rt, &off, call, &waited, m);
        let mut ys = latencies(&rt, &off, call, &CallOptions::default(), m);
        let (with, without) = (p50_micros(&mut xs), p50_micros(&mut ys));
        report.push(Row {
            figure: "… the caller waits for the recording's write, p50".into(),
            value: Value::Micros(with),
            baseline: Some(("not recorded, p50".into(), Value::Micros(without))),
            target: "—".into(),
            met: None,
        });

        // A replay's run (a fresh instance answered from the recording)
        // against the call's.
        let recording = recorded(&rt, &off, call);
        let mut replays: Vec<u64> = rt.block_on(async {
            let mut out = Vec::new();
            for _ in 0..m {
                let report = replay(&off, &recording, ReplayOptions::default())
                    .await
                    .expect("replay");
                assert_eq!(report.verdict, corral::replay::Verdict::Identical);
                out.push(report.elapsed.as_nanos() as u64);
            }
            out
        });
        report.push(Row {
            figure: "… its replay's run, p50".into(),
            value: Value::Micros(p50_micros(&mut replays)),
            baseline: Some(("the call, p50".into(), Value::Micros(without))),
            target: "—".into(),
            met: None,
        });
    }
    floats(effort, report);
}

/// The bare floor of `call` on `floor`, `n` times: latencies in ns.
fn floor_latencies(rt: &Runtime, floor: &Floor, call: (&str, &str), n: usize) -> Vec<u64> {
    rt.block_on(async {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            drop(floor.call(call.0, call.1).await);
            out.push(start.elapsed().as_nanos() as u64);
        }
        out
    })
}

fn floats(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let pool = corral::PoolConfig::default();
    let on = corral::Engine::new(pool).expect("engine");
    let off = corral::Engine::with_floats(pool, false).expect("engine");
    let cases: [(&str, (&str, &str)); 2] = [
        (
            "chart",
            (
                "bar_chart",
                r#"{"title":"Calls","labels":["a","b","c","d"],"values":[3.0,-1.5,7.25,2.0],"width":320,"height":200}"#,
            ),
        ),
        (
            "tables",
            (
                "table_render",
                r#"{"rows":[{"a":1.5,"b":2},{"a":3.25,"b":4}]}"#,
            ),
        ),
    ];
    // A smoke run (`cargo test`) takes the chart alone: the Python guest
    // would compile a second time, for the other engine, in a debug host.
    let cases = if effort.full { &cases[..] } else { &cases[..1] };
    for &(name, call) in cases {
        let (with, without) = (
            Floor::new(&on, &sample(name)),
            Floor::new(&off, &sample(name)),
        );
        let n = effort.pick(600, 2);
        floor_latencies(&rt, &with, call, n / 10 + 1);
        floor_latencies(&rt, &without, call, n / 10 + 1);
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for _ in 0..10 {
            xs.extend(floor_latencies(&rt, &with, call, n / 10 + 1));
            ys.extend(floor_latencies(&rt, &without, call, n / 10 + 1));
        }
        report.push(Row {
            figure: format!(
                "`{}` (`{name}`), deterministic floats, bare floor p50",
                call.0
            ),
            value: Value::Micros(p50_micros(&mut xs)),
            baseline: Some((
                "without them, p50".into(),
                Value::Micros(p50_micros(&mut ys)),
            )),
            target: "—".into(),
            met: None,
        });
    }
}
