//! The reliability campaigns at CI size (issue 29; the full-size runs are
//! `scripts/load.sh`, figures in BENCHMARKS.md). Mixed hostile load: 1 000
//! calls at a concurrency of 64, one in ten hostile (fuel, deadline, memory,
//! trap, output flood, progress and log floods, stack overflow), through the
//! library and over MCP streamable HTTP. Every benign call must return its
//! right result and every hostile one end in its expected outcome.
//! Reload under load: calls while the plugin directory changes every 100 ms.
//! Crash safety: a writer of the audit log and the standing approvals killed
//! with SIGKILL 20 times.

use corral_test_support::load::{self, McpServer, Tally};

use crate::support::{HOSTILE, cache_dir, plugin_dir};

const CALLS: usize = 1_000;

fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}
const CONCURRENCY: usize = 64;

fn judged(records: &[load::Record]) -> Tally {
    let tally = Tally::of(records);
    assert_eq!(tally.benign + tally.hostile, CALLS);
    assert_eq!(tally.hostile, CALLS / 10);
    assert!(tally.all_as_expected(), "{tally}");
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_hostile_load_through_the_library_ends_every_call_as_expected() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = load::host(dir.path()).await;
    let records = load::run(
        &load::mix(CALLS, 10),
        CONCURRENCY,
        load::library(host.clone()),
    )
    .await;
    judged(&records);
    crate::support::assert_still_serves(&host).await;
    // Every instance went back to the pool, whatever ended its call.
    assert_eq!(host.runtime_stats().instances_in_use, 0);
    // And the count sees one that is running.
    let sleeper = {
        let host = host.clone();
        tokio::spawn(async move {
            host.call("sleep", r#"{"ms": 60000}"#, &corral::CallOptions::default())
                .await
        })
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while host.runtime_stats().instances_in_use != 1 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the running call is counted");
    sleeper.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_hostile_load_over_mcp_http_ends_every_call_as_expected() {
    let dir = plugin_dir(&[HOSTILE]);
    let server = McpServer::start(&crate::mcp::corral_bin(), dir.path(), &cache_dir());
    let client = server.client().await;
    let records = load::run(
        &load::mix(CALLS, 10),
        CONCURRENCY,
        load::mcp_transport(client.clone()),
    )
    .await;
    judged(&records);
    // The server still answers afterwards.
    let after = load::run(&load::mix(10, 0), 1, load::mcp_transport(client)).await;
    assert!(Tally::of(&after).all_as_expected());
}

/// Reload under load, CI size: 1 000 calls while the directory changes every
/// 100 ms (new versions, a plugin added and removed, a broken version, a
/// policy written and removed). No call in flight fails, no invalid version
/// is ever served, and the change made after the storm is announced and
/// served. A `corral serve --http` watching the same directory sends
/// `notifications/tools/list_changed` during the storm and after the last
/// change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_every_100_ms_under_load_fail_no_call_in_flight() {
    // One call every 3 ms: the calls span about 3 s of changes.
    let corral = crate::mcp::corral_bin();
    let tally = load::reload_under_load(1_000, 16, ms(3), ms(100), Some(&corral)).await;
    eprintln!("{tally}");
    assert!(tally.passed(), "{tally}");
    assert_eq!(tally.ok + tally.unknown, 1_000, "{tally}");
    assert!(
        tally.mutations >= 10,
        "the directory changed under the calls: {tally}"
    );
    assert!(
        tally.announced >= 2,
        "reloads while the changes went on: {tally}"
    );
    let mcp = tally.mcp.as_ref().expect("the MCP observer ran");
    assert!(
        mcp.announced >= 2,
        "list_changed over MCP while the changes went on: {tally}"
    );
}

/// Not a check of its own: the kill loop's child. The loop below starts this
/// test binary again with `CORRAL_CRASH_CHILD` set; without it, this returns.
#[test]
fn crash_child() {
    if let Some((dir, round)) = load::crash::child_request() {
        load::crash::child(&dir, round);
    }
}

/// 20 SIGKILLs at random moments of a loop that appends audit records and
/// grants standing approvals: everything acknowledged is kept, both files
/// open again, a torn audit line stays on its own, no temporary file stays.
#[test]
fn sigkill_while_writing_the_audit_log_and_approvals_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tally = load::crash::kill_loop(dir.path(), 20, ms(30), |dir, round| {
        let mut command = std::process::Command::new(std::env::current_exe().expect("exe"));
        command
            .args(["--exact", "campaigns::crash_child", "--nocapture"])
            .env(load::crash::CHILD_ENV, format!("{},{round}", dir.display()));
        command
    });
    assert!(tally.defects.is_empty(), "{tally}");
    assert_eq!(tally.rounds, 20, "{tally}");
    assert!(tally.audited > 0 && tally.granted > 0, "{tally}");
}

// The campaigns' own rules: the mix they issue, and how a call is judged.

#[test]
fn the_mix_has_its_share_of_each_hostile_kind_spread_evenly() {
    let kinds = load::mix(1000, 10);
    let hostile: Vec<usize> = (0..kinds.len())
        .filter(|&i| kinds[i].is_hostile())
        .collect();
    assert_eq!(hostile.len(), 100);
    for kind in load::HOSTILE {
        assert_eq!(
            kinds.iter().filter(|&&k| k == kind).count(),
            100 / 8 + usize::from(load::HOSTILE.iter().position(|&h| h == kind).unwrap() < 100 % 8)
        );
    }
    assert!(hostile.windows(2).all(|w| w[1] - w[0] == 10), "one in ten");
    assert_eq!(
        load::mix(1000, 0).iter().filter(|k| k.is_hostile()).count(),
        0
    );
}

#[test]
fn a_record_is_judged_by_its_kind() {
    use load::Kind;
    use serde_json::json;
    let failed = |kind: &str| Err((kind.to_string(), String::new()));
    // (kind, index in the mix, how it ended, whether that is as expected)
    let cases = [
        (Kind::Echo, 3, Ok(json!({"echo": "call 3"})), true),
        (Kind::Echo, 3, Ok(json!({"echo": "call 4"})), false),
        (Kind::Fuel, 0, failed("out_of_fuel"), true),
        (Kind::Fuel, 0, failed("timeout"), false),
        (Kind::Trap, 0, Ok(json!({})), false),
        (Kind::Crunch, 1, Ok(json!({"state": "1"})), false),
    ];
    for (kind, index, ended, expected) in cases {
        let record = load::Record {
            index,
            kind,
            latency: std::time::Duration::ZERO,
            ended: ended.clone(),
        };
        assert_eq!(
            record.mismatch().is_none(),
            expected,
            "{kind:?} call {index} ending {ended:?}: {:?}",
            record.mismatch()
        );
    }
}
