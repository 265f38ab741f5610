//! One effective-limits rule on every call path: a plugin policy's fuel,
//! timeout, memory and output limits hold the same for a direct call, a plan
//! step, a pipeline step and an MCP `tools/call`, and a policy that raises a
//! limit above the host's default keeps it inside a plan too (plans used to
//! run their steps under the host's limits, dropping the policy's).
//! And the pool: `--max-instances` sizes it.

use std::path::Path;

use corral::{CallError, CallOptions, Host, Limits};
use serde_json::{Value, json};

use crate::mcp::{Stdio_, text};
use crate::support::{HOSTILE, host_with};

/// (prefix, policy limits, tool, arguments, expected kind, expected text).
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
    &'static str,
);

/// One copy of the hostile fixture per case, each under its own policy and
/// tool-name prefix: (prefix, policy limits, tool, arguments, expected error
/// kind or `None` for success, text the error must contain).
const CASES: &[Case] = &[
    (
        "fuel",
        "fuel = 5000000",
        "spin",
        "{}",
        Some("out_of_fuel"),
        "after 5000000 units",
    ),
    (
        "time",
        "timeout_ms = 200",
        "sleep",
        r#"{"ms": 5000}"#,
        Some("timeout"),
        "deadline of 200 ms",
    ),
    (
        "mem",
        "memory_mib = 16",
        "allocate",
        r#"{"mib": 64}"#,
        Some("memory_limit"),
        "16 MiB",
    ),
    (
        "out",
        "output_bytes = 1000",
        "big_result",
        r#"{"bytes": 5000}"#,
        Some("output_too_large"),
        "cap of 1000 bytes",
    ),
    // The host's default timeout is 300 ms (see `host`); this policy raises it.
    (
        "slow",
        "timeout_ms = 5000",
        "sleep",
        r#"{"ms": 1000}"#,
        None,
        "",
    ),
];

/// The host's call timeout in these tests, in milliseconds.
const HOST_TIMEOUT_MS: u64 = 300;

/// A plugin directory with every case's plugin and a pipeline per case
/// (`p_<prefix>`) that calls that case's tool.
fn plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut pipelines = Vec::new();
    for (prefix, limits, tool, args, _, _) in CASES {
        std::fs::copy(
            crate::support::guest(HOSTILE),
            dir.path().join(format!("{prefix}.wasm")),
        )
        .expect("copy");
        std::fs::write(
            dir.path().join(format!("{prefix}.policy.toml")),
            format!("version = 1\n[limits]\n{limits}\n[presentation]\nprefix = \"{prefix}_\"\n"),
        )
        .expect("policy");
        let args: Value = serde_json::from_str(args).expect("args");
        pipelines.push(json!({
            "name": format!("p_{prefix}"),
            "description": format!("Calls {prefix}_{tool}."),
            "parameters": {"type": "object"},
            "steps": [{"tool": format!("{prefix}_{tool}"), "arguments": args}],
        }));
    }
    std::fs::write(
        dir.path().join("pipelines.json"),
        json!({"version": 1, "pipelines": pipelines}).to_string(),
    )
    .expect("pipelines");
    dir
}

async fn host(dir: &Path) -> Host {
    let host = host_with(dir, Limits::default().with_timeout_ms(HOST_TIMEOUT_MS)).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    host
}

/// Checks one path's outcome: `Ok(())`, or `Err((kind, message))` where the
/// kind is `None` when the path does not report the inner kind (a pipeline
/// wraps its step's error; the message still names the limit).
fn check(path: &str, case: &str, outcome: Result<(), (Option<String>, String)>) {
    let (_, _, _, _, kind, needle) = CASES.iter().find(|c| c.0 == case).expect("case");
    match (outcome, kind) {
        (Ok(()), None) => {}
        (Err((got, message)), Some(want)) => {
            if let Some(got) = got {
                assert_eq!(&got, want, "{path}, {case}: {message}");
            }
            assert!(message.contains(needle), "{path}, {case}: {message}");
        }
        (outcome, _) => panic!("{path}, {case}: expected {kind:?}, got {outcome:?}"),
    }
}

fn error_parts(err: &CallError) -> (Option<String>, String) {
    (Some(err.kind().to_string()), err.to_string())
}

#[tokio::test]
async fn a_policy_limit_holds_on_every_path() {
    let dir = plugin_dir();
    let host = host(dir.path()).await;
    let options = CallOptions::default();
    for (prefix, _, tool, args, _, _) in CASES {
        let name = format!("{prefix}_{tool}");
        // A direct call.
        let direct = host.call(&name, args, &options).await;
        check(
            "direct",
            prefix,
            direct.map(|_| ()).map_err(|e| error_parts(&e)),
        );

        // The same call as a plan step.
        let plan = json!({"steps": [{"id": "s", "tool": name, "arguments": args}]});
        let out = host
            .call("execute_tool_plan", &plan.to_string(), &options)
            .await
            .expect("the plan itself runs");
        let step = &out.into_json().expect("json")["steps"][0];
        let outcome = match step["status"].as_str() {
            Some("succeeded") => Ok(()),
            _ => Err((
                step["error"]["kind"].as_str().map(str::to_string),
                step["error"]["message"].as_str().unwrap_or("").to_string(),
            )),
        };
        check("plan step", prefix, outcome);

        // The same call as a pipeline step: the pipeline's error wraps it.
        let piped = host.call(&format!("p_{prefix}"), "{}", &options).await;
        let outcome = match piped {
            Ok(_) => Ok(()),
            Err(CallError::ToolFailed { message, .. }) => Err((None, message)),
            Err(other) => panic!("pipeline {prefix}: {other:?}"),
        };
        check("pipeline step", prefix, outcome);
    }
}

#[test]
fn a_policy_limit_holds_over_mcp() {
    let dir = plugin_dir();
    let mut mcp = Stdio_::start_with(
        dir.path(),
        &["--timeout-ms", &HOST_TIMEOUT_MS.to_string()],
        &["--no-watch"],
        std::process::Stdio::null(),
    );
    mcp.initialize(json!({}));
    for (i, (prefix, _, tool, args, _, _)) in CASES.iter().enumerate() {
        let args: Value = serde_json::from_str(args).expect("args");
        let response = mcp.call(i as u64 + 1, &format!("{prefix}_{tool}"), args);
        let result = &response["result"];
        let outcome = if result["isError"] == true {
            Err((
                result["_meta"]["corral/errorKind"]
                    .as_str()
                    .map(str::to_string),
                text(&response).to_string(),
            ))
        } else {
            Ok(())
        };
        check("mcp", prefix, outcome);
    }
}

/// `--max-instances` sizes the pool: with one slot, two independent plan
/// steps that each sleep 300 ms in the host cannot overlap (the plan takes
/// at least 600 ms, where parallel waves take about 300); zero is refused.
#[test]
fn max_instances_sizes_the_pool() {
    let dir = crate::support::plugin_dir(&[crate::support::HOSTILE]);
    let plan = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(
        plan.path(),
        r#"{"steps": [
            {"id": "a", "tool": "sleep", "arguments": {"ms": 300}},
            {"id": "b", "tool": "sleep", "arguments": {"ms": 300}}
        ]}"#,
    )
    .expect("write the plan");
    let plan = plan.path().to_str().expect("utf-8 path");
    let start = std::time::Instant::now();
    let out = crate::cli::corral(
        dir.path(),
        &["--max-instances", "1", "plan", plan, "--json"],
    );
    let elapsed = start.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", crate::cli::stderr(&out));
    assert_eq!(crate::cli::stdout_json(&out)["status"], "succeeded");
    assert!(
        elapsed >= std::time::Duration::from_millis(600),
        "one slot runs the two steps one after the other: {elapsed:?}"
    );

    let zero = crate::cli::corral(dir.path(), &["--max-instances", "0", "list"]);
    assert_eq!(zero.status.code(), Some(2));
    assert!(
        crate::cli::stderr(&zero).contains("--max-instances"),
        "{}",
        crate::cli::stderr(&zero)
    );
}
