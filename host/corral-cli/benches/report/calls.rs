//! Calls through `Host::call`: one caller in a loop against the bare
//! wasmtime floor, many callers at once against one, and a call per guest
//! language against that component's own floor.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use corral::{CallOptions, Host, PoolConfig};
use corral_test_support::Floor;
use tokio::runtime::Runtime;

use crate::table::{Report, Row, Value, p50_micros};
use crate::{Effort, root};

/// The trivial Rust tool every call figure starts from.
pub const SHA256: (&str, &str) = ("sha256", r#"{"text":"abc"}"#);

/// A 2-worker runtime: the machine the targets are stated for has 2 cores.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A bundled sample's component: `plugins/NAME.wasm`, or the language
/// guests' build output for the Python and JavaScript samples.
pub fn sample(name: &str) -> PathBuf {
    let bundled = root().join("plugins").join(format!("{name}.wasm"));
    let built = root()
        .join("target/guests/lang")
        .join(format!("{name}.wasm"));
    let path = if built.is_file() { built } else { bundled };
    assert!(
        path.is_file(),
        "{} is missing: run scripts/build-guests.sh first",
        path.display()
    );
    path
}

/// A host serving copies of `files`, from the cache the tests share (the
/// calls measured here do not compile; a Python guest takes seconds to in a
/// debug build, and the tests have usually spent them already).
pub fn host(rt: &Runtime, files: &[PathBuf]) -> (Host, tempfile::TempDir) {
    host_pool(rt, files, PoolConfig::default())
}

/// [`host`] with its own pool configuration.
pub fn host_pool(rt: &Runtime, files: &[PathBuf], pool: PoolConfig) -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    for file in files {
        std::fs::copy(file, dir.path().join(file.file_name().expect("name"))).expect("copy");
    }
    let host = rt
        .block_on(
            Host::builder()
                .plugin_dir(dir.path())
                .cache(corral_test_support::cache())
                .pool(pool)
                .build(),
        )
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (host, dir)
}

/// How long a caller sleeps before each call in the "after idling" rows:
/// about what a server's worker waits between one client's requests over
/// stdio, long enough for the core to go idle.
pub const IDLE: Duration = Duration::from_micros(20);

/// Latencies in nanoseconds of `n` sequential `Host::call`s of `tool`, each
/// after the calling thread slept `idle` (none when zero).
pub fn host_latencies(
    rt: &Runtime,
    host: &Host,
    (tool, args): (&str, &str),
    n: usize,
    idle: Duration,
) -> Vec<u64> {
    rt.block_on(async {
        let options = CallOptions::default();
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            idle_for(idle);
            let start = Instant::now();
            host.call(tool, args, &options).await.expect("call");
            out.push(start.elapsed().as_nanos() as u64);
        }
        out
    })
}

/// Latencies of `n` floor calls, each after `idle` as above.
pub fn floor_latencies(
    rt: &Runtime,
    floor: &Floor,
    (tool, args): (&str, &str),
    n: usize,
    idle: Duration,
) -> Vec<u64> {
    rt.block_on(async {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            idle_for(idle);
            let start = Instant::now();
            drop(floor.call(tool, args).await);
            out.push(start.elapsed().as_nanos() as u64);
        }
        out
    })
}

/// Sleeps the calling thread for `idle`, if not zero.
fn idle_for(idle: Duration) {
    if !idle.is_zero() {
        std::thread::sleep(idle);
    }
}

/// `Host::call` of the trivial tool, one caller, against the floor of the
/// same component and call on the same engine configuration: back to back,
/// then each call after the caller idled (as a server's calls are: the
/// caches the call needs have gone cold, and both slow down).
/// p50s of `n` calls of `Host::call` and `n` of the floor's, in blocks
/// that alternate [`BLOCKS`] times, so that a slow spell of the machine
/// falls on both alike; each call after `idle`.
fn interleaved(rt: &Runtime, host: &Host, floor: &Floor, n: usize, idle: Duration) -> (f64, f64) {
    let block = n / BLOCKS + 1;
    let (mut ours, mut bare) = (Vec::new(), Vec::new());
    for _ in 0..BLOCKS {
        ours.extend(host_latencies(rt, host, SHA256, block, idle));
        bare.extend(floor_latencies(rt, floor, SHA256, block, idle));
    }
    (p50_micros(&mut ours), p50_micros(&mut bare))
}

/// How many times the one-call rows alternate between corral and the floor.
const BLOCKS: usize = 20;

/// One caller's `Host::call` p50 against the bare-wasmtime floor's, back to
/// back and after an idle spell of [`IDLE`].
pub fn sequential(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let plugin = sample("encode");
    let (host, _dir) = host(&rt, std::slice::from_ref(&plugin));
    let engine = corral::Engine::new(PoolConfig::default()).expect("engine");
    let floor = Floor::new(&engine, &plugin);
    let n = effort.pick(20_000, 3);
    // Warm both, then interleave blocks so drift hits both alike.
    let zero = Duration::ZERO;
    host_latencies(&rt, &host, SHA256, n / 10 + 1, zero);
    floor_latencies(&rt, &floor, SHA256, n / 10 + 1, zero);
    let (ours, bare) = interleaved(&rt, &host, &floor, n, zero);
    report.push(Row {
        figure: "`Host::call`, `sha256` of \"abc\" (Rust), one caller, p50".into(),
        value: Value::Micros(ours),
        baseline: Some(("bare wasmtime floor, p50".into(), Value::Micros(bare))),
        target: "≤ 1.15× the floor".into(),
        met: Some(ours <= 1.15 * bare),
    });
    // The absolute target, apart: it sits within a microsecond of the floor
    // itself, which no sandboxed call of this component can go below.
    report.push(Row {
        figure: "… the same p50 against the absolute target".into(),
        value: Value::Micros(ours),
        baseline: Some(("floor, p50".into(), Value::Micros(bare))),
        target: "≤ 12 µs".into(),
        met: Some(ours <= 12.0),
    });
    let n = effort.pick(5_000, 3);
    let (ours, bare) = interleaved(&rt, &host, &floor, n, IDLE);
    report.push(Row {
        figure: format!(
            "… each call after the caller slept {} µs, p50",
            IDLE.as_micros()
        ),
        value: Value::Micros(ours),
        baseline: Some((
            "floor after the same sleep, p50".into(),
            Value::Micros(bare),
        )),
        target: "—".into(),
        met: None,
    });
}

/// Calls per second from `callers` tasks sharing `calls` calls, each made
/// by `one` (a `Host::call` or the bare-wasmtime floor's call).
fn rate<F, Fut>(rt: &Runtime, one: &F, callers: usize, calls: usize) -> f64
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let start = Instant::now();
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..callers {
            let one = one.clone();
            set.spawn(async move {
                for _ in 0..calls / callers {
                    one().await;
                }
            });
        }
        while let Some(done) = set.join_next().await {
            done.expect("caller");
        }
    });
    (calls / callers * callers) as f64 / start.elapsed().as_secs_f64()
}

/// The median of `rounds` rounds of (one caller, `callers` callers),
/// alternating (a round is short, and one round can catch the machine busy).
pub fn rounds<F, Fut>(
    rt: &Runtime,
    one: &F,
    callers: usize,
    calls: usize,
    rounds: usize,
) -> (f64, f64)
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (mut single, mut many) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        single.push(rate(rt, one, 1, calls));
        many.push(rate(rt, one, callers, calls));
    }
    single.sort_by(f64::total_cmp);
    many.sort_by(f64::total_cmp);
    (single[rounds / 2], many[rounds / 2])
}

/// In-process throughput at 2 and 8 concurrent callers, each against one
/// caller, and the bare-wasmtime floor's own scaling from 1 to 2 callers in
/// the same run: on this 2-core VM the floor's ratio moves between about
/// 1.1× and 1.9× from round to round too, so it tells the machine's share
/// from corral's.
pub fn throughput(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let (host, _dir) = host(&rt, &[sample("encode")]);
    let engine = corral::Engine::new(PoolConfig::default()).expect("engine");
    let floor = std::sync::Arc::new(Floor::new(&engine, &sample("encode")));
    let calls = effort.pick(30_000, 8);
    let n = effort.pick(7, 1);
    let call_host = move || {
        let host = host.clone();
        async move {
            let options = CallOptions::default();
            host.call(SHA256.0, SHA256.1, &options).await.expect("call");
        }
    };
    let call_floor = move || {
        let floor = floor.clone();
        async move {
            floor.call(SHA256.0, SHA256.1).await;
        }
    };
    rate(&rt, &call_host, 8, calls / 4 + 8);
    rate(&rt, &call_floor, 8, calls / 4 + 8);
    for callers in [2usize, 8] {
        let (one, many) = rounds(&rt, &call_host, callers, calls, n);
        report.push(Row {
            figure: format!(
                "in-process throughput, `sha256`, {callers} callers (2 workers; median of {n} rounds)"
            ),
            value: Value::PerSecond(many),
            baseline: Some(("1 caller".into(), Value::PerSecond(one))),
            target: if callers == 2 {
                "≥ 80 000/s and ≥ 1.7× one caller".into()
            } else {
                "—".into()
            },
            met: (callers == 2).then_some(many >= 80_000.0 && many >= 1.7 * one),
        });
    }
    let (one, two) = rounds(&rt, &call_floor, 2, calls, n);
    report.push(Row {
        figure: format!(
            "… the bare wasmtime floor's own scaling: the floor's call of `sha256`, 2 callers (median of {n} rounds)"
        ),
        value: Value::PerSecond(two),
        baseline: Some(("floor, 1 caller".into(), Value::PerSecond(one))),
        target: "—".into(),
        met: None,
    });
}

/// One call per guest language, p50, against the bare-wasmtime floor of the
/// same component and call (the interpreter's start-up and the tool's work,
/// with nothing of corral's around them), interleaved.
pub fn languages(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let engine = corral::Engine::new(PoolConfig::default()).expect("engine");
    let cases: [(&str, &str, (&str, &str), f64); 2] = [
        (
            "Python",
            "tables",
            ("table_render", r#"{"rows":[{"a":1,"b":2},{"a":3,"b":4}]}"#),
            1_000.0,
        ),
        (
            "JavaScript",
            "versions",
            ("semver_compare", r#"{"a":"1.2.3","b":"1.10.0"}"#),
            500.0,
        ),
    ];
    for (language, name, call, target_micros) in cases {
        let (host, _dir) = host(&rt, &[sample(name)]);
        let floor = Floor::new(&engine, &sample(name));
        let n = effort.pick(400, 2);
        host_latencies(&rt, &host, call, n / 10 + 1, Duration::ZERO);
        floor_latencies(&rt, &floor, call, n / 10 + 1, Duration::ZERO);
        let mut ours = host_latencies(&rt, &host, call, n / 2 + 1, Duration::ZERO);
        let mut bare = floor_latencies(&rt, &floor, call, n / 2 + 1, Duration::ZERO);
        ours.extend(host_latencies(&rt, &host, call, n / 2 + 1, Duration::ZERO));
        bare.extend(floor_latencies(
            &rt,
            &floor,
            call,
            n / 2 + 1,
            Duration::ZERO,
        ));
        let ours = p50_micros(&mut ours);
        report.push(Row {
            figure: format!("{language} tool per call (`{}` from `{name}`), p50", call.0),
            value: Value::Micros(ours),
            baseline: Some((
                "bare wasmtime floor of the same component and call, p50".into(),
                Value::Micros(p50_micros(&mut bare)),
            )),
            target: format!("≤ {target_micros} µs"),
            met: Some(ours <= target_micros),
        });
        let [instantiate, call, drop] = floor_phases(&rt, &floor, call, n / 2 + 1);
        report.push(Row {
            figure: format!(
                "… its floor in phases, p50 of each: store and instantiation {instantiate:.1} µs, \
                 the guest's `call` {call:.1} µs, dropping the store {drop:.1} µs"
            ),
            value: Value::Micros(instantiate + call + drop),
            baseline: None,
            target: "—".into(),
            met: None,
        });
    }
}

/// The p50 of each phase of `n` floor calls, in microseconds.
fn floor_phases(rt: &Runtime, floor: &Floor, (tool, args): (&str, &str), n: usize) -> [f64; 3] {
    let mut phases: [Vec<u64>; 3] = Default::default();
    rt.block_on(async {
        for _ in 0..n {
            let (_, took) = floor.phases(tool, args).await;
            for (all, one) in phases.iter_mut().zip(took) {
                all.push(one);
            }
        }
    });
    phases.map(|mut all| p50_micros(&mut all))
}
