//! Pipelines from `pipelines.json`: sequential compound tools with both error
//! strategies, step adapters, and load-time checks (AgentEnsemble's
//! `ToolPipeline`).

use corral::{CallError, CallOptions, Host, LoadErrorReason};
use serde_json::{Value, json};

use crate::support::{HOSTILE, SAMPLES, assert_still_serves, host, plugin_dir};

async fn with_pipelines(pipelines: Value) -> (tempfile::TempDir, Host) {
    let dir = plugin_dir(&[SAMPLES, &[HOSTILE]].concat());
    let file = json!({ "version": 1, "pipelines": pipelines });
    std::fs::write(dir.path().join("pipelines.json"), file.to_string()).expect("write");
    let host = host(dir.path()).await;
    (dir, host)
}

fn object_schema(property: &str) -> Value {
    json!({"type": "object", "properties": {property: {"type": "string"}}, "required": [property]})
}

async fn call(host: &Host, tool: &str, arguments: Value) -> Result<Value, CallError> {
    host.call(tool, &arguments.to_string(), &CallOptions::default())
        .await
        .map(|out| out.into_json().expect("json"))
}

#[tokio::test]
async fn steps_chain_with_adapters_and_references() {
    let (_dir, host) = with_pipelines(json!([
        {
            "name": "hash_slug",
            "description": "Slugify a title, then hash the slug.",
            "parameters": object_schema("title"),
            "steps": [
                {"tool": "slugify", "arguments": {"text": "$ref:input.title"}, "adapter": "slug"},
                {"tool": "sha256", "arguments": {"text": "$ref:prev"}}
            ]
        },
        {
            "name": "text_stats",
            "description": "Count words and lines, then summarise the counts.",
            "parameters": object_schema("text"),
            "steps": [
                {"tool": "word_count"},
                {"tool": "statistics", "arguments": {"values": ["$ref:prev.words", "$ref:prev.lines"]}}
            ]
        }
    ]))
    .await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let tool = host.tool("hash_slug").expect("registered like any tool");
    assert!(tool.pipeline().is_some() && tool.plugin().is_none());

    let out = call(&host, "hash_slug", json!({"title": "Hello World"}))
        .await
        .expect("runs");
    let direct = call(&host, "sha256", json!({"text": "hello-world"}))
        .await
        .expect("runs");
    assert_eq!(out, direct);

    let stats = call(&host, "text_stats", json!({"text": "a b c\nd"}))
        .await
        .expect("runs");
    assert_eq!(stats["sum"], 6.0, "4 words + 2 lines: {stats}");

    // Pipeline arguments are validated against the pipeline's schema first.
    let err = call(&host, "hash_slug", json!({"title": 5}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
}

#[tokio::test]
async fn fail_fast_stops_at_the_failed_step() {
    let (_dir, host) = with_pipelines(json!([{
        "name": "stops",
        "description": "Fails in its first step.",
        "parameters": object_schema("message"),
        "steps": [
            {"tool": "fail"},
            {"tool": "echo", "arguments": {"text": "never"}}
        ]
    }]))
    .await;
    let err = call(&host, "stops", json!({"message": "boom"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CallError::ToolFailed {
            tool: "stops".into(),
            message: "step 1 (`fail`) failed: tool `fail` failed: boom".into(),
            code: Some(42),
            retryable: false,
        }
    );
}

#[tokio::test]
async fn continue_on_failure_forwards_the_error_text() {
    let (_dir, host) = with_pipelines(json!([{
        "name": "carries_on",
        "description": "Fails in its first step and reports it in the second.",
        "parameters": object_schema("message"),
        "error_strategy": "continue_on_failure",
        "steps": [
            {"tool": "fail"},
            {"tool": "echo", "arguments": {"text": "$ref:prev"}}
        ]
    }]))
    .await;
    let out = call(&host, "carries_on", json!({"message": "boom"}))
        .await
        .expect("runs to the end");
    assert_eq!(out["echo"], "Error: tool `fail` failed: boom");
}

#[tokio::test]
async fn bad_pipelines_fail_to_load_alone() {
    let (dir, host) = with_pipelines(json!([
        {"name": "word_count", "description": "Collides.", "parameters": object_schema("t"),
         "steps": [{"tool": "echo"}]},
        {"name": "bad name", "description": "Invalid name.", "parameters": object_schema("t"),
         "steps": [{"tool": "echo"}]},
        {"name": "ghost", "description": "Unknown step tool.", "parameters": object_schema("t"),
         "steps": [{"tool": "no_such_tool"}]},
        {"name": "nested", "description": "Calls the plan tool.", "parameters": object_schema("t"),
         "steps": [{"tool": "execute_tool_plan"}]},
        {"name": "fine", "description": "Works.", "parameters": object_schema("text"),
         "steps": [{"tool": "echo"}]}
    ]))
    .await;
    let path = dir.path().join("pipelines.json");
    let errors = host.load_errors();
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors.iter().all(|e| e.path == path));
    assert!(
        matches!(&errors[0].reason, LoadErrorReason::DuplicateTool { tool, other }
        if tool == "word_count" && other == &dir.path().join("text.wasm"))
    );
    assert!(
        errors[1].to_string().contains("tool `bad name`"),
        "{}",
        errors[1]
    );
    assert!(
        errors[2]
            .to_string()
            .contains("`no_such_tool`, which is not a tool of a loaded plugin")
    );
    assert!(errors[3].to_string().contains("`execute_tool_plan`"));
    let out = call(&host, "fine", json!({"text": "ok"}))
        .await
        .expect("the valid pipeline loads");
    assert_eq!(out["echo"], "ok");
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_malformed_file_is_reported_and_plugins_still_load() {
    let dir = plugin_dir(&[HOSTILE]);
    std::fs::write(
        dir.path().join("pipelines.json"),
        r#"{"version": 1, "pipelinez": []}"#,
    )
    .expect("write");
    let host = host(dir.path()).await;
    let errors = host.load_errors();
    assert_eq!(errors.len(), 1);
    assert!(
        matches!(errors[0].reason, LoadErrorReason::InvalidPipelines(_)),
        "{errors:?}"
    );
    assert!(
        errors[0].to_string().contains("unknown field `pipelinez`"),
        "{}",
        errors[0]
    );
    assert_still_serves(&host).await;
}
