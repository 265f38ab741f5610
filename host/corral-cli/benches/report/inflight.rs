//! Concurrency at scale: 1 000 `fetch_url` calls in flight at once against a
//! local HTTP server that answers each request after 1 s (how I/O-bound
//! tools live). Each pool size runs in a child process of its own, so its
//! peak RSS is its own; the baseline is the same process's RSS with the
//! host built and one call made, before the load.

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use corral::{CallOptions, ComponentCache, Host, PoolConfig};
use serde_json::{Value as Json, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::Effort;
use crate::calls::{runtime, sample};
use crate::table::{Report, Row, Value};

const CHILD_ENV: &str = "CORRAL_BENCH_INFLIGHT";
/// How long the server takes to answer.
const DELAY: Duration = Duration::from_secs(1);

/// The pool size this process was started to measure, if it is a child.
pub fn child_request() -> Option<(u32, usize)> {
    let value = std::env::var(CHILD_ENV).ok()?;
    let (slots, calls) = value.split_once(',')?;
    Some((slots.parse().ok()?, calls.parse().ok()?))
}

/// A field of `/proc/self/status` (in kB) as MiB.
pub fn status_mib(name: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches(" kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// A server on 127.0.0.1 that reads a request head and answers `ok` after
/// [`DELAY`]; returns its port.
async fn slow_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                tokio::time::sleep(DELAY).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                    .await;
            });
        }
    });
    port
}

/// The child: `calls` calls at once on a pool of `slots`; prints one JSON line.
pub fn child(slots: u32, calls: usize) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(sample("fetch"), dir.path().join("fetch.wasm")).expect("copy");
    let port = rt.block_on(slow_server());
    // The bundled policy's 5 requests a second would be the bottleneck:
    // here the upstream is ours, and the budget is the pool.
    std::fs::write(
        dir.path().join("fetch.policy.toml"),
        format!(
            "version = 1\n[http]\nallow = [\"http://127.0.0.1:{port}\"]\n\
             [resilience.tools.fetch_url]\n\
             rate_limit = {{ requests = 1000000, per = \"second\", burst_size = 1000000 }}\n"
        ),
    )
    .expect("policy");
    let building = Instant::now();
    let host = rt
        .block_on(
            Host::builder()
                .plugin_dir(dir.path())
                .cache(ComponentCache::in_dir(dir.path().join(".cache")))
                .pool(PoolConfig::default().with_max_concurrent_instances(slots))
                .build(),
        )
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let build_ms = building.elapsed().as_secs_f64() * 1e3;
    let arguments = json!({ "url": format!("http://127.0.0.1:{port}/") }).to_string();
    let options = CallOptions::default();
    rt.block_on(host.call("fetch_url", &arguments, &options))
        .expect("one call");
    let before = status_mib("VmRSS:");
    let start = Instant::now();
    let outcomes: Vec<Result<f64, String>> = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..calls {
            let host = host.clone();
            let arguments = arguments.clone();
            set.spawn(async move {
                let began = Instant::now();
                host.call("fetch_url", &arguments, &CallOptions::default())
                    .await
                    .map(|_| began.elapsed().as_secs_f64())
                    .map_err(|e| e.to_string())
            });
        }
        let mut out = Vec::new();
        while let Some(done) = set.join_next().await {
            out.push(done.expect("task"));
        }
        out
    });
    let elapsed = start.elapsed().as_secs_f64();
    let peak = status_mib("VmHWM:");
    let mut latencies: Vec<f64> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().ok().copied())
        .collect();
    latencies.sort_by(f64::total_cmp);
    let failed: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    let line = json!({
        "completed": latencies.len(),
        "failed": failed.len(),
        "first_error": failed.first(),
        "elapsed_s": elapsed,
        "max_latency_s": latencies.last(),
        "rss_before_mib": before,
        "rss_peak_mib": peak,
        "virtual_gib": status_mib("VmSize:") / 1024.0,
        "build_ms": build_ms,
    });
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}").expect("write");
}

/// Runs this bench again as a child with `env` set to `value`, and returns
/// the JSON line it prints last.
pub fn child_json(env: &str, value: &str) -> Json {
    let out = Command::new(std::env::current_exe().expect("this bench"))
        .env(env, value)
        .output()
        .expect("run the child");
    assert!(
        out.status.success(),
        "the child ({env}={value}) failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().expect("a line")).expect("json")
}

/// Runs the child for `slots` and returns its JSON line.
fn measure(slots: u32, calls: usize) -> Json {
    child_json(CHILD_ENV, &format!("{slots},{calls}"))
}

/// The rows: the default pool and one sized for the load.
pub fn thousand_in_flight(effort: Effort, report: &mut Report) {
    let calls = effort.pick(1_000, 4);
    for slots in [PoolConfig::default().max_concurrent_instances, 1_024] {
        let r = measure(slots, calls);
        let completed = r["completed"].as_u64().unwrap_or(0) as usize;
        let peak = r["rss_peak_mib"].as_f64().unwrap_or(f64::NAN);
        let elapsed = r["elapsed_s"].as_f64().unwrap_or(f64::NAN);
        report.push(Row {
            figure: format!(
                "{calls} `fetch_url` calls in flight, server answers after 1 s, pool of {slots}: \
                 {completed} completed in {elapsed:.1} s (slowest {:.1} s){}; peak RSS",
                r["max_latency_s"].as_f64().unwrap_or(f64::NAN),
                r["first_error"]
                    .as_str()
                    .map(|e| format!(", first error: {e}"))
                    .unwrap_or_default()
            ),
            value: Value::Mebibytes(peak),
            baseline: Some((
                "RSS after one call, before the load".into(),
                Value::Mebibytes(r["rss_before_mib"].as_f64().unwrap_or(f64::NAN)),
            )),
            target: "all complete, RSS < 1 GiB".into(),
            met: Some(completed == calls && peak < 1024.0),
        });
    }
}
