//! Start-up with the bundled samples and a warm cache: `Host::build` in
//! process against a host with no plugins and against wasmtime alone
//! deserializing the same cache entries; and `corral serve` from spawn to
//! its first `tools/list` answer against the echo responder's.

use std::path::{Path, PathBuf};
use std::time::Instant;

use corral::{ComponentCache, Host, PoolConfig};
use wasmtime::component::Component;

use crate::calls::runtime;
use crate::mcp;
use crate::table::{Report, Row, Value};
use crate::{Effort, root};

/// Milliseconds of the fastest of `runs` runs of `f` (start-up noise is
/// one-sided: the minimum is the repeatable figure), and of the median.
fn millis(runs: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[0], times[times.len() / 2])
}

fn build(rt: &tokio::runtime::Runtime, plugins: &Path, cache: &Path) -> Host {
    rt.block_on(
        Host::builder()
            .plugin_dir(plugins)
            .cache(ComponentCache::in_dir(cache))
            .build(),
    )
    .expect("host")
}

/// The plugin directory to start with: `plugins/`, the bundled samples.
/// In smoke mode, a directory under `scratch` with one small Rust sample
/// (`encode`, which needs no policy): the first start compiles into a cold
/// cache, and compiling every sample in a debug build (the Python one alone
/// takes half a minute) is the tests' work, not a smoke run's.
fn plugin_dir(effort: Effort, scratch: &Path) -> PathBuf {
    let bundled = root().join("plugins");
    if effort.full {
        return bundled;
    }
    let dir = scratch.join("plugins");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::copy(bundled.join("encode.wasm"), dir.join("encode.wasm"))
        .expect("copy plugins/encode.wasm (scripts/build-guests.sh builds it)");
    dir
}

/// The start-up rows.
pub fn warm_start(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let scratch = tempfile::tempdir().expect("temp dir");
    let plugins = plugin_dir(effort, scratch.path());
    let samples = std::fs::read_dir(&plugins)
        .expect("plugins/")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "wasm"))
        })
        .count();
    let cache = scratch.path().join("cache");
    let empty = scratch.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let first = build(&rt, &plugins, &cache);
    assert!(first.load_errors().is_empty(), "{:?}", first.load_errors());
    drop(first);
    let runs = effort.pick(11, 1);
    let (ours, ours_median) = millis(runs, || drop(build(&rt, &plugins, &cache)));
    let (bare, _) = millis(runs, || drop(build(&rt, &empty, &cache)));
    let engine = corral::Engine::new(PoolConfig::default()).expect("engine");
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .expect("cache")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    let (floor, _) = millis(runs, || {
        for entry in &entries {
            let bytes = std::fs::read(entry).expect("read");
            // SAFETY: corral wrote these entries moments ago, for this
            // engine configuration; nothing else writes the private dir.
            if let Ok(component) = unsafe { Component::deserialize(engine.wasmtime(), &bytes) } {
                drop(component);
            }
        }
    });
    report.push(Row {
        figure: format!(
            "`Host::build`, {samples} bundled samples, warm cache (min; median {ours_median:.1} ms)"
        ),
        value: Value::Millis(ours),
        baseline: Some(("`Host::build` with no plugins".into(), Value::Millis(bare))),
        target: "≤ 100 ms".into(),
        met: Some(ours <= 100.0),
    });
    report.push(Row {
        figure: format!(
            "… wasmtime alone reading and deserializing the {} cache entries in turn",
            entries.len()
        ),
        value: Value::Millis(floor),
        baseline: None,
        target: "—".into(),
        met: None,
    });
    let (served, echo) = mcp::first_list(&plugins, &cache, runs);
    report.push(Row {
        figure: format!(
            "`corral serve`, spawn to first `tools/list` answer, {samples} samples (min)"
        ),
        value: Value::Millis(served),
        baseline: Some((
            "echo responder, spawn to first answer".into(),
            Value::Millis(echo),
        )),
        target: "≤ 80 ms".into(),
        met: Some(served <= 80.0),
    });
}
