//! Hostile guests during a call: floods of progress and log lines, UDP and
//! DNS, exhausting host resources, a symlink out of a granted directory,
//! escape codes in error messages, and the empty result.

use std::time::Instant;

use corral::{CallError, CallOptions};
use serde_json::{Value, json};

use crate::mcp::Stdio_;
use crate::support::{
    HOSTILE, assert_still_serves, call, host, plugin_dir, plugin_dir_with_policies,
};

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

#[test]
fn a_million_progress_messages_are_coalesced_and_memory_stays_bounded() {
    let dir = plugin_dir(&[HOSTILE]);
    // A million host calls need more than the default fuel.
    let mut mcp = Stdio_::start_with(
        dir.path(),
        &["--fuel", "9000000000", "--timeout-ms", "120000"],
        &["--no-watch"],
        std::process::Stdio::null(),
    );
    mcp.initialize(json!({}));
    // Warm up (compile cache, first instance), then measure.
    mcp.call(1, "echo", json!({"text": "warm"}));
    let before = rss_kib(mcp.pid());
    let started = Instant::now();
    mcp.send(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "flood_progress", "arguments": {"count": 1_000_000},
                   "_meta": {"progressToken": "flood"}}
    }));
    let response = mcp.response(2);
    let took = started.elapsed();
    assert_eq!(
        response["result"]["structuredContent"]["sent"], 1_000_000,
        "{response}"
    );
    let after = rss_kib(mcp.pid());
    let progress: Vec<&Value> = mcp
        .backlog
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| &m["params"])
        .collect();
    // At most one per 100 ms, plus the last one.
    let bound = (took.as_millis() / 100 + 2) as usize;
    assert!(
        !progress.is_empty() && progress.len() <= bound,
        "{} notifications in {took:?} (bound {bound})",
        progress.len()
    );
    let last = progress.last().expect("last");
    assert_eq!(last["progress"], 1_000_000.0);
    assert_eq!(last["message"], "1000000 of 1000000");
    let counts: Vec<f64> = progress
        .iter()
        .filter_map(|p| p["progress"].as_f64())
        .collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "{counts:?}");
    assert!(
        after.saturating_sub(before) < 64 * 1024,
        "server RSS grew from {before} KiB to {after} KiB"
    );
}

#[test]
fn a_log_flood_is_cut_with_one_summary_line() {
    let dir = plugin_dir(&[HOSTILE]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .arg("--plugins")
        .arg(dir.path())
        .arg("--cache-dir")
        .arg(crate::support::cache_dir())
        .args(["-v", "call", "flood_log", r#"{"count": 100000}"#])
        .env_remove("RUST_LOG")
        .output()
        .expect("run corral");
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = stderr.lines().filter(|l| l.contains(" line ")).count();
    assert!(
        lines <= corral::MAX_LOG_LINES as usize,
        "{lines} guest lines logged"
    );
    assert!(
        stderr.contains(&format!(
            "{} guest log and progress messages dropped",
            100_000 - corral::MAX_LOG_LINES
        )),
        "{stderr}"
    );
}

#[tokio::test]
async fn udp_and_dns_are_denied() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let udp = call(&host, "open_udp", json!({"addr": "127.0.0.1:9"}))
        .await
        .unwrap_err();
    assert!(matches!(udp, CallError::ToolFailed { .. }), "{udp}");
    let dns = call(&host, "lookup", json!({"name": "localhost"}))
        .await
        .unwrap_err();
    assert!(
        dns.to_string().contains("cannot resolve localhost"),
        "{dns}"
    );
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn host_resources_are_capped_per_call() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let out = call(&host, "http_handles", json!({"count": 1_000}))
        .await
        .expect("under the cap");
    assert_eq!(out["created"], 1_000);
    let err = call(&host, "http_handles", json!({"count": 1_000_000}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "trapped", "{err}");
    assert!(err.to_string().contains("resource table"), "{err}");
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_symlink_cannot_leave_a_granted_directory() {
    let granted = tempfile::tempdir().expect("dir");
    let outside = tempfile::tempdir().expect("dir");
    std::fs::write(outside.path().join("secret.txt"), "host secret").expect("write");
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        granted.path().join("link.txt"),
    )
    .expect("symlink");
    std::os::unix::fs::symlink(outside.path(), granted.path().join("dirlink")).expect("symlink");
    std::fs::write(granted.path().join("inside.txt"), "fine").expect("write");
    let policy = format!(
        "version = 1\n[[filesystem]]\nhost = \"{}\"\nguest = \"/data\"\n",
        granted.path().display()
    );
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(&policy))]);
    let host = host(dir.path()).await;
    let inside = call(&host, "read_file", json!({"path": "/data/inside.txt"}))
        .await
        .expect("inside");
    assert_eq!(inside["content"], "fine");
    for path in [
        "/data/link.txt",
        "/data/dirlink/secret.txt",
        "/data/../../etc/passwd",
    ] {
        let err = call(&host, "read_file", json!({ "path": path }))
            .await
            .unwrap_err();
        assert!(!err.to_string().contains("host secret"), "{path}: {err}");
        assert_eq!(err.kind(), "tool_failed", "{path}: {err}");
    }
}

#[tokio::test]
async fn guest_error_text_reaches_every_surface_escaped_with_its_code() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let spoof = "\u{1b}[2J\u{1b}[1;1HAll good\u{7}";
    let err = call(&host, "fail", json!({ "message": spoof }))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        !text.chars().any(corral::untrusted_text::is_forbidden),
        "{text:?}"
    );
    assert!(text.contains("\\u{1b}[2J"), "{text}");
    assert_eq!(err.code(), Some(42));
    assert_eq!(err.to_json()["code"], 42);

    // The same code in a plan step's error.
    let plan = json!({"steps": [{"id": "f", "tool": "fail", "arguments": {"message": "x"}}]});
    let out = host
        .call(
            "execute_tool_plan",
            &plan.to_string(),
            &CallOptions::default(),
        )
        .await
        .expect("plan");
    let step = &out.into_json().expect("json")["steps"][0];
    assert_eq!(step["error"]["code"], 42, "{step}");
    assert_eq!(step["error"]["kind"], "tool_failed", "{step}");
}

#[tokio::test]
async fn a_tool_that_returns_nothing_succeeds_with_the_empty_string() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let out = host
        .call("nothing", "{}", &CallOptions::default())
        .await
        .expect("nothing");
    assert_eq!(out.text, "");
    assert_eq!(out.json(), None);
}

#[tokio::test]
async fn a_reload_mid_call_keeps_the_limits_the_call_started_with() {
    // The call starts under a policy that allows 3 s; the policy is tightened
    // to 100 ms while it runs. The call in flight keeps its limits; the next
    // call gets the new ones.
    let dir =
        plugin_dir_with_policies(&[(HOSTILE, Some("version = 1\n[limits]\ntimeout_ms = 3000\n"))]);
    let host = host(dir.path()).await;
    let (options, mut started) = super::running();
    let running = {
        let host = host.clone();
        tokio::spawn(async move { host.call_value("sleep", json!({"ms": 700}), &options).await })
    };
    // The guest runs under the 3 s policy: now tighten it.
    started.recv().await.expect("the call reports progress");
    std::fs::write(
        dir.path().join("fixture_hostile.policy.toml"),
        "version = 1\n[limits]\ntimeout_ms = 100\n",
    )
    .expect("policy");
    let report = host.reload().await.expect("reload");
    assert!(report.updated.contains(&"sleep".to_string()), "{report:?}");
    running
        .await
        .expect("task")
        .expect("the call in flight keeps 3 s");
    let err = call(&host, "sleep", json!({"ms": 700})).await.unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Timeout {
                timeout_ms: 100,
                ..
            }
        ),
        "{err}"
    );
}
