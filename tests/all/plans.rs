//! `execute_tool_plan`: the built-in meta-tool, through `Host::call` like any
//! tool, on the sample tools and fixtures (the tool-planning guide, docs/references.md).

use corral::{CallError, CallOptions, Host};
use serde_json::{Value, json};

use crate::cli;
use crate::support::{HOSTILE, SAMPLES, host, plugin_dir};

async fn hosts() -> (tempfile::TempDir, Host) {
    let dir = plugin_dir(&[SAMPLES, &[HOSTILE]].concat());
    let host = host(dir.path()).await;
    (dir, host)
}

async fn run(host: &Host, plan: Value) -> Result<Value, CallError> {
    host.call(
        "execute_tool_plan",
        &plan.to_string(),
        &CallOptions::default(),
    )
    .await
    .map(|out| out.into_json().expect("plan results are JSON"))
}

fn step<'a>(result: &'a Value, id: &str) -> &'a Value {
    result["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {result}"))
}

#[tokio::test]
async fn the_plan_tool_is_listed_and_reserved() {
    let (_dir, host) = hosts().await;
    let tool = host.tool("execute_tool_plan").expect("built in");
    assert!(tool.plugin().is_none());
    assert_eq!(tool.spec().parameters["required"], json!(["steps"]));
}

#[tokio::test]
async fn references_carry_data_across_three_waves() {
    let (_dir, host) = hosts().await;
    let result = run(
        &host,
        json!({"steps": [
            {"id": "count", "tool": "word_count", "arguments": "{\"text\": \"one two three\"}"},
            {"id": "double", "tool": "evaluate", "arguments": {"expression": "$ref:count.words * 2"}},
            {"id": "stats", "tool": "statistics", "arguments": {"values": ["$ref:count.words", "$ref:double.result"]}},
            {"id": "whole", "tool": "json_stats", "arguments": {"document": "$ref:count"}},
            {"id": "text", "tool": "echo", "arguments": {"text": "$ref:count.words words, $ref:count.missing"}}
        ]}),
    )
    .await
    .expect("plan runs");
    assert_eq!(result["status"], "succeeded");
    assert_eq!(
        result["waves"],
        json!([["count"], ["double", "whole", "text"], ["stats"]])
    );
    assert_eq!(step(&result, "double")["output"]["result"], 6);
    assert_eq!(step(&result, "stats")["output"]["mean"], 4.5);
    // A whole JSON object is inserted as structured JSON.
    assert_eq!(step(&result, "whole")["output"]["numbers"], 4);
    // Embedded references interpolate as text; a missing field is null.
    assert_eq!(step(&result, "text")["output"]["echo"], "3 words, null");
    assert!(step(&result, "count")["duration_ms"].as_f64().expect("ms") > 0.0);
}

#[tokio::test]
async fn failures_skip_dependents_and_independent_steps_still_run() {
    let (_dir, host) = hosts().await;
    let result = run(
        &host,
        json!({"steps": [
            {"id": "s1", "tool": "fail", "arguments": {"message": "flaky"}},
            {"id": "s2", "tool": "echo", "arguments": {"text": "reliable"}},
            {"id": "s3", "tool": "echo", "arguments": {"text": "$ref:s1.echo"}},
            {"id": "s4", "tool": "echo", "arguments": {"text": "$ref:s3"}}
        ], "output_steps": ["s2", "s3", "s4", "s1"]}),
    )
    .await
    .expect("a plan with failures is still a result");
    assert_eq!(result["status"], "partial");
    let ids: Vec<&str> = result["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["s2", "s3", "s4", "s1"], "output_steps order");
    assert_eq!(step(&result, "s2")["output"]["echo"], "reliable");
    assert_eq!(step(&result, "s1")["status"], "failed");
    assert_eq!(step(&result, "s1")["error"]["kind"], "tool_failed");
    assert_eq!(
        step(&result, "s3")["error"],
        json!({"kind": "skipped", "message": "Skipped because dependency 's1' failed"})
    );
    assert_eq!(
        step(&result, "s4")["error"]["message"],
        "Skipped because dependency 's3' failed"
    );
}

#[tokio::test]
async fn output_steps_filter_the_result() {
    let (_dir, host) = hosts().await;
    let result = run(
        &host,
        json!({"steps": [
            {"id": "a", "tool": "sha256", "arguments": {"text": "abc"}},
            {"id": "b", "tool": "base64_encode", "arguments": {"text": "$ref:a.sha256"}}
        ], "output_steps": ["b"]}),
    )
    .await
    .expect("runs");
    assert_eq!(result["steps"].as_array().expect("steps").len(), 1);
    assert_eq!(step(&result, "b")["status"], "succeeded");
}

#[tokio::test]
async fn substituted_arguments_are_validated_against_the_schema() {
    let (_dir, host) = hosts().await;
    let result = run(
        &host,
        json!({"steps": [
            {"id": "n", "tool": "word_count", "arguments": {"text": "a b"}},
            {"id": "bad", "tool": "slugify", "arguments": {"text": "$ref:n.words"}}
        ]}),
    )
    .await
    .expect("runs");
    let bad = step(&result, "bad");
    assert_eq!(bad["error"]["kind"], "invalid_arguments");
    assert!(
        bad["error"]["message"]
            .as_str()
            .expect("msg")
            .contains("`/text`: 2 is not of type")
    );
}

#[tokio::test]
async fn invalid_plans_name_every_problem_and_run_nothing() {
    let (_dir, host) = hosts().await;
    let err = run(
        &host,
        json!({"steps": [
            {"id": "a", "tool": "counter", "arguments": {}},
            {"id": "loop1", "tool": "echo", "arguments": {"text": "$ref:loop2"}},
            {"id": "loop2", "tool": "echo", "arguments": {"text": "$ref:loop1"}},
            {"id": "inner", "tool": "execute_tool_plan", "arguments": {"steps": []}},
            {"id": "script", "tool": "execute_code", "arguments": {"code": "return 1"}},
            {"id": "x", "tool": "no_such_tool"}
        ], "output_steps": ["nope"]}),
    )
    .await
    .unwrap_err();
    let CallError::InvalidArguments { tool, problems, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(tool, "execute_tool_plan");
    for expected in [
        "step `inner`: a plan cannot call `execute_tool_plan`",
        "step `script`: a plan cannot call `execute_code`",
        "step `x`: unknown tool `no_such_tool`",
        "output_steps: `nope` is not a step",
        "dependency cycle: loop1 -> loop2 -> loop1",
    ] {
        assert!(
            problems.iter().any(|p| p.starts_with(expected)),
            "{expected}: {problems:#?}"
        );
    }
    // The schema catches shape errors first.
    let err = run(&host, json!({"steps": [{"id": "a"}]}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("\"tool\" is a required property"),
        "{err}"
    );
}

#[tokio::test]
async fn the_plan_deadline_bounds_every_step() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = corral::Host::builder()
        .plugin_dir(dir.path())
        .pool(crate::support::pool())
        .cache(crate::support::cache())
        .plan_limits(corral::PlanLimits::default().with_deadline_ms(300))
        .build()
        .await
        .expect("host");
    let started = std::time::Instant::now();
    let result = run(
        &host,
        json!({"steps": [
            {"id": "slow", "tool": "sleep", "arguments": {"ms": 60000}},
            {"id": "after", "tool": "echo", "arguments": {"text": "$ref:slow.slept_ms"}}
        ]}),
    )
    .await
    .expect("a plan past its deadline still returns a result");
    assert!(
        started.elapsed().as_secs() < 30,
        "the hour-long step was cut short"
    );
    assert_eq!(step(&result, "slow")["error"]["kind"], "timeout");
    assert_eq!(step(&result, "after")["status"], "skipped");
}

#[tokio::test]
async fn steps_report_fuel_and_return_behavior_and_the_plan_sums_the_fuel() {
    let (_dir, host) = hosts().await;
    let plan = json!({"steps": [
        {"id": "a", "tool": "sha256", "arguments": {"text": "abc"}},
        {"id": "b", "tool": "word_count", "arguments": {"text": "one two"}},
        {"id": "c", "tool": "fail", "arguments": {"message": "no"}}
    ]});
    let out = host
        .call(
            "execute_tool_plan",
            &plan.to_string(),
            &CallOptions::default(),
        )
        .await
        .expect("plan");
    let json = out.json().expect("json");
    let (a, b) = (
        step(json, "a")["fuel_consumed"].as_u64().expect("fuel"),
        step(json, "b")["fuel_consumed"].as_u64().expect("fuel"),
    );
    assert!(a > 0 && b > 0, "{json}");
    assert_eq!(out.fuel_consumed, a + b, "failed steps add nothing");
    assert_eq!(step(json, "a")["return_behavior"], "to_llm");
    assert_eq!(step(json, "c")["fuel_consumed"], 0);
    assert!(step(json, "c").get("return_behavior").is_none());
}

/// `corral plan` is a call of `execute_tool_plan` like any other.
#[test]
fn plan_takes_the_one_call_path_exclusion_gate_and_record() {
    let dir = plugin_dir(SAMPLES);
    let example = crate::support::repository_root().join("examples/plans/report.json");
    let example = example.to_str().expect("utf-8 path");
    // --exclude-tools hides the plan tool from `corral plan` as from MCP.
    let out = cli::corral(
        dir.path(),
        &["--exclude-tools", "^execute_tool_plan$", "plan", example],
    );
    assert_eq!(out.status.code(), Some(2), "{}", cli::stderr(&out));
    assert!(
        cli::stderr(&out).contains("unknown tool `execute_tool_plan`"),
        "{}",
        cli::stderr(&out)
    );
    assert!(out.stdout.is_empty(), "no step ran");

    // --require-approval gates it: with nobody to decide, nothing runs...
    let gate = ["plan", example, "--require-approval", "execute_tool_plan"];
    let out = cli::corral(dir.path(), &gate);
    assert_eq!(out.status.code(), Some(2), "{}", cli::stderr(&out));
    assert!(
        cli::stderr(&out).contains("pass --approve auto|deny|console|rules:FILE"),
        "{}",
        cli::stderr(&out)
    );
    // ...a denial stops it...
    let state = tempfile::tempdir().expect("temp dir");
    let audit = state.path().join("audit.jsonl");
    let audit_arg = audit.to_str().expect("utf-8");
    let denied = [&gate[..], &["--approve", "deny", "--audit-log", audit_arg]].concat();
    let out = cli::corral(dir.path(), &denied);
    assert_eq!(out.status.code(), Some(1), "{}", cli::stderr(&out));
    assert!(
        cli::stderr(&out).contains("Rejected by reviewer"),
        "{}",
        cli::stderr(&out)
    );
    // ...and an approval runs it, recorded in the audit log and in the
    // per-call log (`-v`) like any call, its steps beside it.
    let approved = [
        &["-v"][..],
        &gate[..],
        &["--approve", "auto", "--audit-log", audit_arg, "--json"],
    ]
    .concat();
    let out = cli::corral(dir.path(), &approved);
    assert_eq!(
        cli::stdout_json(&out)["status"],
        "partial",
        "{}",
        cli::stderr(&out)
    );
    let log = std::fs::read_to_string(&audit).expect("audit log");
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(records.len(), 2, "{log}");
    assert!(
        records.iter().all(|r| r["tool"] == "execute_tool_plan"),
        "{log}"
    );
    assert_eq!(records[0]["decision"], "exit_early", "{log}");
    assert_eq!(records[1]["decision"], "continue", "{log}");
    let stderr = cli::stderr(&out);
    let call_lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("execute_tool_plan(") && l.contains(") -> "))
        .collect();
    assert_eq!(
        call_lines.len(),
        1,
        "one call record of the plan:\n{stderr}"
    );
    assert!(call_lines[0].contains("ms="), "{stderr}");
}
