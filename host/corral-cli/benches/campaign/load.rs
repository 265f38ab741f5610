//! Mixed hostile load at full size (issue 29, campaign 1): through the
//! library and over MCP streamable HTTP, `CALLS` calls at a concurrency of
//! 64, 10 % hostile. Per transport: a warm-up, then the benign-only baseline
//! (the same number of calls, none hostile), then the mix; RSS after the
//! warm-up and at the end (the server's, for MCP).
//!
//! The warm-up is the same two runs once, unmeasured: a leak grows the
//! second pass as much as the first, while what the first pass leaves
//! resident on purpose stays. RSS is reported in two parts
//! ([`load::rss_split_mib`]). The pooling allocator keeps up to
//! `keep_resident_bytes` (4 MiB) of what a call touched in each
//! linear-memory slot resident after the call, so that part grows as calls
//! use more of the 256 slots (4 per instance) and stays, bounded by design;
//! the rest is the allocator's heap, stacks and code.

use corral_test_support::load::{self, McpServer, Tally};
use corral_test_support::{HOSTILE, cache_dir, plugin_dir};

const CONCURRENCY: usize = 64;
const HOSTILE_PERCENT: usize = 10;

/// What one transport came to.
struct Outcome {
    transport: &'static str,
    baseline: Tally,
    baseline_rate: f64,
    mixed: Tally,
    mixed_rate: f64,
    /// (pool, rest) after the warm-up, MiB.
    rss_warm: (f64, f64),
    /// (pool, rest) at the end, MiB.
    rss_end: (f64, f64),
}

impl Outcome {
    /// The change of the whole RSS.
    fn rss_change(&self) -> f64 {
        (self.rss_end.0 + self.rss_end.1) / (self.rss_warm.0 + self.rss_warm.1) - 1.0
    }

    fn print(&self) {
        let ratio =
            |a: std::time::Duration, b: std::time::Duration| a.as_secs_f64() / b.as_secs_f64();
        println!(
            "{}, no hostile calls: {:.0} calls/s, {}",
            self.transport, self.baseline_rate, self.baseline
        );
        println!(
            "{}, 10 % hostile:     {:.0} calls/s, {}",
            self.transport, self.mixed_rate, self.mixed
        );
        println!(
            "{}: benign p50 {:.2}x and p99 {:.2}x the no-hostile run; RSS {:.1} MiB after warm-up, {:.1} MiB at the end ({:+.1} %): in the pool's slots {:.1} then {:.1} MiB, the rest {:.1} then {:.1} MiB",
            self.transport,
            ratio(self.mixed.benign_p50, self.baseline.benign_p50),
            ratio(self.mixed.benign_p99, self.baseline.benign_p99),
            self.rss_warm.0 + self.rss_warm.1,
            self.rss_end.0 + self.rss_end.1,
            self.rss_change() * 100.0,
            self.rss_warm.0,
            self.rss_end.0,
            self.rss_warm.1,
            self.rss_end.1,
        );
    }
}

/// The campaigns' runtime: two workers, as on the 2-core machines the
/// figures come from.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs the campaign with `calls` calls per transport; prints the figures
/// and the verdict line; true when it passed. The RSS goal counts only
/// with `check_rss` (a full run): a run of a few calls is too short for it,
/// and CI checks correctness only.
pub fn campaign(calls: usize, check_rss: bool) -> bool {
    let runtime = runtime();
    let dir = plugin_dir(&[HOSTILE]);
    let outcomes = runtime.block_on(async {
        let host = load::host(dir.path()).await;
        let library = measure("library", std::process::id(), calls, load::library(host)).await;
        let server = McpServer::start(
            std::path::Path::new(env!("CARGO_BIN_EXE_corral")),
            dir.path(),
            &cache_dir(),
        );
        let client = server.client().await;
        let mcp = measure("MCP HTTP", server.pid(), calls, load::mcp_transport(client)).await;
        [library, mcp]
    });
    let mut passed = true;
    for outcome in &outcomes {
        outcome.print();
        passed &= outcome.mixed.all_as_expected() && outcome.baseline.all_as_expected();
        passed &= !check_rss || outcome.rss_change() <= 0.10;
    }
    let benign: usize = outcomes.iter().map(|o| o.mixed.benign_ok).sum();
    let benign_total: usize = outcomes.iter().map(|o| o.mixed.benign).sum();
    let hostile: usize = outcomes.iter().map(|o| o.mixed.hostile_expected).sum();
    let hostile_total: usize = outcomes.iter().map(|o| o.mixed.hostile).sum();
    println!(
        "load {calls} calls x 2 transports: benign {benign}/{benign_total} right ({:.2} %), hostile {hostile}/{hostile_total} as expected, RSS change {}: {}",
        benign as f64 * 100.0 / benign_total.max(1) as f64,
        outcomes
            .iter()
            .map(|o| format!("{} {:+.1} %", o.transport, o.rss_change() * 100.0))
            .collect::<Vec<_>>()
            .join(", "),
        if passed { "ok" } else { "FAILED" }
    );
    passed
}

async fn measure<F, Fut>(transport: &'static str, pid: u32, calls: usize, call: F) -> Outcome
where
    F: Fn(&'static str, serde_json::Value) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = load::Ended> + Send,
{
    let timed = |kinds: Vec<load::Kind>| {
        let call = call.clone();
        async move {
            let started = std::time::Instant::now();
            let records = load::run(&kinds, CONCURRENCY, call).await;
            (
                Tally::of(&records),
                kinds.len() as f64 / started.elapsed().as_secs_f64(),
            )
        }
    };
    // The warm-up: the same two runs, once, unmeasured.
    for percent in [0, HOSTILE_PERCENT] {
        let (warm, _) = timed(load::mix(calls, percent)).await;
        assert!(warm.all_as_expected(), "{transport} warm-up: {warm}");
    }
    let rss_warm = load::rss_split_mib(pid).expect("RSS after warm-up");
    let (baseline, baseline_rate) = timed(load::mix(calls, 0)).await;
    let (mixed, mixed_rate) = timed(load::mix(calls, HOSTILE_PERCENT)).await;
    let rss_end = load::rss_split_mib(pid).expect("RSS at the end");
    Outcome {
        transport,
        baseline,
        baseline_rate,
        mixed,
        mixed_rate,
        rss_warm,
        rss_end,
    }
}

/// Reload under load: `calls` calls, one every 2 ms, 64 in flight at most,
/// while the plugin directory changes every 100 ms, with a
/// `corral serve --http` watching the same directory for the MCP
/// `list_changed` count; prints the verdict line.
pub fn reload(calls: usize) -> bool {
    let runtime = runtime();
    let ms = std::time::Duration::from_millis;
    let tally = runtime.block_on(load::reload_under_load(
        calls,
        CONCURRENCY,
        ms(2),
        ms(100),
        Some(std::path::Path::new(env!("CARGO_BIN_EXE_corral"))),
    ));
    let passed = tally.passed();
    println!("reload {tally}: {}", if passed { "ok" } else { "FAILED" });
    passed
}

/// Crash safety: `rounds` SIGKILLs of a child (this binary again) that
/// appends audit records and grants standing approvals, each at a moment
/// between 0 and 50 ms after it is ready; prints the verdict line.
pub fn crash(rounds: usize) -> bool {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("exe");
    let tally = load::crash::kill_loop(
        dir.path(),
        rounds,
        std::time::Duration::from_millis(50),
        |dir, round| {
            let mut command = std::process::Command::new(&exe);
            command.env(load::crash::CHILD_ENV, format!("{},{round}", dir.display()));
            command
        },
    );
    let passed = tally.defects.is_empty() && tally.rounds == rounds;
    println!("crash {tally}: {}", if passed { "ok" } else { "FAILED" });
    passed
}

/// Soak: MCP HTTP at 100 calls/s of the mix for `seconds`, and a
/// short-lived session every second, the server sampled every 10 s (every
/// 2 s for a run under a minute); prints every sample, then the verdict
/// line.
pub fn soak(seconds: usize) -> bool {
    let runtime = runtime();
    let dir = plugin_dir(&[HOSTILE]);
    let tally = runtime.block_on(async {
        let server = McpServer::start(
            std::path::Path::new(env!("CARGO_BIN_EXE_corral")),
            dir.path(),
            &cache_dir(),
        );
        let client = server.client().await;
        let every = if seconds < 60 { 2 } else { 10 };
        load::soak::soak(
            &server,
            client,
            std::time::Duration::from_secs(seconds as u64),
            100.0,
            std::time::Duration::from_secs(every),
        )
        .await
    });
    println!("at_s,rss_slots_mib,rss_rest_mib,fds,threads,instances_in_use,listeners");
    for s in &tally.samples {
        println!(
            "{:.0},{:.1},{:.1},{},{},{},{}",
            s.at, s.rss_pool, s.rss_rest, s.fds, s.threads, s.instances, s.listeners
        );
    }
    let passed = tally.passed();
    println!("soak {tally}: {}", if passed { "ok" } else { "FAILED" });
    passed
}
