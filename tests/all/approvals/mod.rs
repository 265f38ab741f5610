//! Approval gates: every decision at each gate, edits checked against the
//! schema, no reviewer, timeouts, the paused call deadline, standing approvals
//! bound to the plugin's sha256, the audit log, gated plan steps, and console
//! prompts from concurrent calls driven through a pseudo-terminal.

use std::collections::VecDeque;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use corral::AuditLog;
use corral::{ApprovalDecision, CallError, CallOptions, Host, HostBuilder, Limits};
use corral::{DenyAll, Gate, ReviewFuture, ReviewRequest, Reviewer};
use serde_json::{Value, json};

use crate::support::{HOSTILE, assert_still_serves, cache, guest_sha256, plugin_dir, pool};

mod console;
mod defer;
mod standing;

/// A reviewer that answers from a script and remembers what it was asked.
#[derive(Debug, Default)]
struct Scripted {
    answers: Mutex<VecDeque<ApprovalDecision>>,
    seen: Mutex<Vec<ReviewRequest>>,
}

impl Scripted {
    fn new(answers: impl IntoIterator<Item = ApprovalDecision>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers.into_iter().collect()),
            seen: Mutex::default(),
        })
    }

    fn seen(&self) -> Vec<ReviewRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl Reviewer for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a> {
        self.seen.lock().unwrap().push(request.clone());
        let answer = self.answers.lock().unwrap().pop_front();
        Box::pin(async move {
            Ok(answer.unwrap_or_else(|| ApprovalDecision::ExitEarly("script exhausted".into())))
        })
    }
}

/// Never answers.
#[derive(Debug)]
struct Silent;

impl Reviewer for Silent {
    fn name(&self) -> &str {
        "silent"
    }

    fn review<'a>(&'a self, _request: &'a ReviewRequest) -> ReviewFuture<'a> {
        Box::pin(std::future::pending())
    }
}

/// Takes `delay` to say yes, like a person reading the prompt.
#[derive(Debug)]
struct Slow {
    delay: Duration,
}

impl Reviewer for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn review<'a>(&'a self, _request: &'a ReviewRequest) -> ReviewFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Ok(ApprovalDecision::Continue)
        })
    }
}

pub(crate) fn builder(dir: &Path) -> HostBuilder {
    Host::builder().plugin_dir(dir).pool(pool()).cache(cache())
}

pub(crate) async fn call(host: &Host, tool: &str, arguments: &str) -> Result<Value, CallError> {
    host.call(tool, arguments, &CallOptions::default())
        .await
        .map(|out| out.into_json().expect("json output"))
}

pub(crate) const DELETE_ALL: &str = r#"{"message": "delete everything"}"#;

#[tokio::test]
async fn declared_gate_every_decision() {
    let dir = plugin_dir(&[HOSTILE]);
    let reviewer = Scripted::new([
        ApprovalDecision::Continue,
        ApprovalDecision::ExitEarly("not today".into()),
        ApprovalDecision::Edit(r#"{"message": "delete one file"}"#.into()),
        ApprovalDecision::Edit(r#"{"message": 3}"#.into()),
        ApprovalDecision::Edit("{not json".into()),
    ]);
    let host = builder(dir.path())
        .reviewer_arc(reviewer.clone())
        .build()
        .await
        .expect("host");
    assert!(host.requires_approval("gated"));

    assert_eq!(
        call(&host, "gated", DELETE_ALL).await.unwrap(),
        json!({"message": "delete everything"})
    );
    let err = call(&host, "gated", DELETE_ALL).await.unwrap_err();
    assert_eq!(
        err,
        CallError::Rejected {
            tool: "gated".into(),
            reason: "not today".into()
        }
    );
    assert_eq!(err.llm_text(), "Error: Rejected by reviewer: not today");
    assert_eq!(
        call(&host, "gated", DELETE_ALL).await.unwrap(),
        json!({"message": "delete one file"}),
        "the guest runs with the reviewer's arguments"
    );
    for expected in ["`/message`: 3 is not of type \"string\"", "not JSON"] {
        let err = call(&host, "gated", DELETE_ALL).await.unwrap_err();
        let CallError::Rejected { reason, .. } = &err else {
            panic!("{err:?}");
        };
        assert!(
            reason.starts_with("the reviewer's edited arguments are invalid"),
            "{reason}"
        );
        assert!(reason.contains(expected), "{reason}");
    }

    let seen = reviewer.seen();
    assert_eq!(seen.len(), 5);
    let first = &seen[0];
    assert_eq!(first.gate, Gate::Declared);
    assert_eq!(first.tool, "gated");
    assert_eq!(first.plugin, "fixture_hostile");
    assert_eq!(first.plugin_sha256, guest_sha256(HOSTILE));
    assert_eq!(
        first.description,
        host.tool("gated").unwrap().spec().description
    );
    assert_eq!(first.arguments, json!({"message": "delete everything"}));
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn invalid_arguments_never_reach_the_reviewer() {
    let dir = plugin_dir(&[HOSTILE]);
    let reviewer = Scripted::new([]);
    let host = builder(dir.path())
        .reviewer_arc(reviewer.clone())
        .build()
        .await
        .expect("host");
    let err = call(&host, "gated", r#"{"message": 1}"#).await.unwrap_err();
    assert_eq!(err.kind(), "invalid_arguments");
    assert!(reviewer.seen().is_empty());
}

#[tokio::test]
async fn requested_gate_every_decision() {
    let dir = plugin_dir(&[HOSTILE]);
    let reviewer = Scripted::new([
        ApprovalDecision::Continue,
        ApprovalDecision::ExitEarly("not today".into()),
        ApprovalDecision::Edit(r#"{"message": "delete one file"}"#.into()),
        ApprovalDecision::Edit(r#"{"message": 3}"#.into()),
    ]);
    let host = builder(dir.path())
        .reviewer_arc(reviewer.clone())
        .build()
        .await
        .expect("host");

    assert_eq!(
        call(&host, "ask", DELETE_ALL).await.unwrap()["decision"],
        "continue"
    );
    assert_eq!(
        call(&host, "ask", DELETE_ALL).await.unwrap_err(),
        CallError::Rejected {
            tool: "ask".into(),
            reason: "not today".into()
        }
    );
    let edited = call(&host, "ask", DELETE_ALL).await.unwrap();
    assert_eq!(edited["decision"], "edit");
    assert_eq!(edited["arguments"], r#"{"message": "delete one file"}"#);
    let err = call(&host, "ask", DELETE_ALL).await.unwrap_err();
    let CallError::Rejected { reason, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(reason.contains("edited arguments are invalid"), "{reason}");

    let seen = reviewer.seen();
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[0].gate, Gate::Requested);
    assert_eq!(seen[0].description, "delete everything");
    assert_eq!(seen[0].arguments, json!({"message": "delete everything"}));
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_guest_that_ignores_a_denial_still_fails_the_call() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .reviewer(DenyAll)
        .build()
        .await
        .expect("host");
    let err = call(&host, "ignore_denial", DELETE_ALL).await.unwrap_err();
    assert_eq!(
        err.llm_text(),
        "Error: Rejected by reviewer: denied by policy (deny-all reviewer)",
        "the model never sees the output of a denied action"
    );
}

#[tokio::test]
async fn no_reviewer_is_a_configuration_error_not_a_silent_run() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path()).build().await.expect("host");
    for tool in ["gated", "ask"] {
        let err = call(&host, tool, DELETE_ALL).await.unwrap_err();
        let CallError::Configuration { tool: t, message } = &err else {
            panic!("{tool}: {err:?}");
        };
        assert_eq!(t, tool);
        assert!(message.contains("no reviewer is configured"), "{message}");
        // The library names no CLI flag (models read this text); the CLI adds
        // its own hint (tested in `cli`).
        assert!(message.contains("configure one"), "{message}");
        assert!(!message.contains("--"), "{message}");
        assert_eq!(err.kind(), "configuration");
    }
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_review_without_an_answer_is_denied_at_the_timeout() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .reviewer(Silent)
        .review_timeout(Duration::from_millis(100))
        .build()
        .await
        .expect("host");
    for tool in ["gated", "ask"] {
        let err = call(&host, tool, DELETE_ALL).await.unwrap_err();
        assert_eq!(
            err,
            CallError::Rejected {
                tool: tool.into(),
                reason: "no decision within 100 ms; denied by default".into()
            }
        );
    }
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn review_time_does_not_count_against_the_call_deadline() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .limits(Limits::default().with_timeout_ms(300))
        .reviewer(Slow {
            delay: Duration::from_millis(900),
        })
        .build()
        .await
        .expect("host");
    let started = Instant::now();
    let out = call(&host, "ask", DELETE_ALL).await.expect("call");
    assert_eq!(out["decision"], "continue");
    assert!(started.elapsed() >= Duration::from_millis(900));
    // The deadline still holds for the guest's own time.
    let err = call(&host, "sleep", r#"{"ms": 5000}"#).await.unwrap_err();
    assert_eq!(err.kind(), "timeout");
}

#[tokio::test]
async fn configuration_can_require_approval_for_any_tool() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .reviewer(DenyAll)
        .require_approval("echo")
        .build()
        .await
        .expect("host");
    assert!(host.requires_approval("echo"));
    assert!(!host.requires_approval("context_echo"));
    let err = call(&host, "echo", r#"{"text": "hi"}"#).await.unwrap_err();
    assert_eq!(
        err.llm_text(),
        "Error: Rejected by reviewer: denied by policy (deny-all reviewer)"
    );
    call(&host, "context_echo", "{}").await.expect("ungated");
}

/// Appends a custom section: the same component, a different sha256.
fn rebuild(path: &Path) {
    let name = b"corral-test";
    let payload = b"v2";
    let mut section = vec![
        0u8,
        (1 + name.len() + payload.len()) as u8,
        name.len() as u8,
    ];
    section.extend_from_slice(name);
    section.extend_from_slice(payload);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open plugin");
    file.write_all(&section).expect("append");
}

#[tokio::test]
async fn the_audit_log_records_every_gated_call() {
    let dir = plugin_dir(&[HOSTILE]);
    let state = tempfile::tempdir().expect("temp dir");
    let path = state.path().join("audit").join("gates.jsonl");
    let host = builder(dir.path())
        .reviewer_arc(Scripted::new([
            ApprovalDecision::Continue,
            ApprovalDecision::ExitEarly("not today".into()),
            ApprovalDecision::Edit(r#"{"message": "delete one file"}"#.into()),
            ApprovalDecision::Continue,
        ]))
        .audit_log(AuditLog::open(&path).expect("audit log"))
        .build()
        .await
        .expect("host");
    call(&host, "gated", DELETE_ALL).await.expect("continue");
    call(&host, "gated", DELETE_ALL).await.unwrap_err();
    call(&host, "gated", DELETE_ALL).await.expect("edit");
    call(&host, "ask", DELETE_ALL).await.expect("requested");
    call(&host, "echo", r#"{"text": "not gated"}"#)
        .await
        .expect("ungated");

    let text = std::fs::read_to_string(&path).expect("audit log");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 4, "ungated calls are not audited:\n{text}");
    let args_hash = {
        use sha2::Digest as _;
        let compact = serde_json::from_str::<Value>(DELETE_ALL)
            .unwrap()
            .to_string();
        hex::encode(sha2::Sha256::digest(compact.as_bytes()))
    };
    for line in &lines {
        assert_eq!(line["plugin"], "fixture_hostile");
        assert_eq!(line["plugin_sha256"], guest_sha256(HOSTILE));
        assert_eq!(line["arguments_sha256"], args_hash);
        assert_eq!(line["reviewer"], "scripted");
        assert!(line["time"].as_str().unwrap().ends_with('Z'), "{line}");
        assert!(line["review_ms"].is_u64());
    }
    let decisions: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["tool"].as_str().unwrap(),
                l["gate"].as_str().unwrap(),
                l["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("gated", "declared", "continue"),
            ("gated", "declared", "exit_early"),
            ("gated", "declared", "edit"),
            ("ask", "requested", "continue"),
        ]
    );
    assert_eq!(lines[1]["reason"], "not today");
    assert_eq!(lines[0]["reason"], Value::Null);
    assert_eq!(
        lines[2]["edited_arguments"],
        json!({"message": "delete one file"})
    );
}

#[tokio::test]
async fn a_rejected_plan_step_fails_forward() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .reviewer(DenyAll)
        .build()
        .await
        .expect("host");
    let plan = json!({
        "steps": [
            {"id": "wipe", "tool": "gated", "arguments": {"message": "wipe"}},
            {"id": "after", "tool": "echo", "arguments": {"text": "$ref:wipe.message"}},
            {"id": "other", "tool": "echo", "arguments": {"text": "independent"}}
        ]
    });
    let out = call(&host, "execute_tool_plan", &plan.to_string())
        .await
        .expect("plan runs");
    let step = |id: &str| {
        out["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no step {id} in {out}"))
    };
    assert_eq!(step("wipe")["status"], "failed", "{out}");
    assert_eq!(
        step("wipe")["error"]["message"],
        "Rejected by reviewer: denied by policy (deny-all reviewer)",
        "{out}"
    );
    assert_eq!(step("after")["status"], "skipped", "{out}");
    assert_eq!(step("other")["status"], "succeeded", "{out}");
}
