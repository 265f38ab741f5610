//! A deferred review (`ApprovalDecision::Defer`, what MCP 2026-07-28's
//! input-required flow uses): the call ends with `approval_pending` carrying
//! the question, before anything the gate guards happens; a guest's own
//! mid-call request defers only for a tool that is safe to run again; a plan
//! step that defers fails forward and is asked again on the next call; the
//! audit log records the deferral.

use corral::{ApprovalDecision, AuditLog, CallError, Gate};
use serde_json::json;

use super::{DELETE_ALL, Scripted, builder, call};
use crate::support::{HOSTILE, guest, plugin_dir};

#[tokio::test]
async fn a_deferred_declared_gate_ends_the_call_with_the_question() {
    let dir = plugin_dir(&[HOSTILE]);
    let state = tempfile::tempdir().expect("dir");
    let audit = state.path().join("audit.jsonl");
    let reviewer = Scripted::new([ApprovalDecision::Defer]);
    let host = builder(dir.path())
        .reviewer_arc(reviewer.clone())
        .audit_log(AuditLog::open(&audit).expect("audit"))
        .build()
        .await
        .expect("host");
    let err = call(&host, "gated", DELETE_ALL).await.unwrap_err();
    let CallError::ApprovalPending { tool, request, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(tool, "gated");
    assert_eq!(request.gate, Gate::Declared);
    assert_eq!(request.arguments, json!({"message": "delete everything"}));
    assert_eq!(err.kind(), "approval_pending");
    let log = std::fs::read_to_string(&audit).expect("audit log");
    assert!(log.contains("\"decision\":\"deferred\""), "{log}");
}

#[tokio::test]
async fn a_guest_request_defers_only_for_a_tool_safe_to_run_again() {
    // The same tools twice: `ask` can change nothing outside its sandbox;
    // `w_ask` may write to a granted directory and is not idempotent.
    let dir = plugin_dir(&[HOSTILE]);
    std::fs::copy(guest(HOSTILE), dir.path().join("w.wasm")).expect("copy");
    std::fs::create_dir(dir.path().join("w-data")).expect("dir");
    std::fs::write(
        dir.path().join("w.policy.toml"),
        "version = 1\n[presentation]\nprefix = \"w_\"\n\
         [[filesystem]]\nhost = \"w-data\"\nguest = \"/data\"\naccess = \"read-write\"\n",
    )
    .expect("policy");
    let reviewer = Scripted::new([ApprovalDecision::Defer, ApprovalDecision::Defer]);
    let host = builder(dir.path())
        .reviewer_arc(reviewer.clone())
        .build()
        .await
        .expect("host");
    assert!(host.tool("ask").expect("ask").safe_to_rerun());
    assert!(!host.tool("w_ask").expect("w_ask").safe_to_rerun());

    let err = call(&host, "ask", DELETE_ALL).await.unwrap_err();
    let CallError::ApprovalPending { request, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(request.gate, Gate::Requested);
    assert_eq!(request.description, "delete everything");

    let err = call(&host, "w_ask", DELETE_ALL).await.unwrap_err();
    assert_eq!(err.kind(), "configuration", "{err}");
    assert!(
        err.to_string()
            .contains("asked for approval during its run")
            && err.to_string().contains("[approval] require"),
        "{err}"
    );
}

#[tokio::test]
async fn a_deferred_plan_step_fails_forward_and_is_asked_again_next_time() {
    let dir = plugin_dir(&[HOSTILE]);
    let reviewer = Scripted::new([
        ApprovalDecision::Defer,
        ApprovalDecision::Defer,
        ApprovalDecision::Continue,
    ]);
    let host = builder(dir.path())
        .reviewer_arc(reviewer.clone())
        .build()
        .await
        .expect("host");
    let plan = json!({"steps": [
        {"id": "g", "tool": "gated", "arguments": {"message": "m"}},
        {"id": "e", "tool": "echo", "arguments": {"text": "after"}},
    ]});
    let out = call(&host, "execute_tool_plan", &plan.to_string())
        .await
        .expect("the plan reports its steps");
    assert_eq!(out["status"], "partial", "{out}");
    let step = out["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["id"] == "g")
        .expect("step g");
    assert_eq!(step["error"]["kind"], "approval_pending", "{out}");
    assert!(
        step["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("call `gated` on its own")),
        "{out}"
    );

    // Pending, then approved: each call asks the reviewer again.
    let first = call(&host, "gated", r#"{"message": "m"}"#)
        .await
        .unwrap_err();
    assert_eq!(first.kind(), "approval_pending");
    let approved = call(&host, "gated", r#"{"message": "m"}"#).await;
    assert_eq!(approved.unwrap(), json!({"message": "m"}));
    assert_eq!(reviewer.seen().len(), 3);
}
