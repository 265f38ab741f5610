//! The library API around a call: argument validation, the two tool error
//! kinds, progress, serial tools, concurrent calls, and the metrics of calls
//! naming no tool. Approval gates and
//! context have their own modules.

use std::sync::{Arc, Mutex};

use corral::AutoApprove;
use corral::{CallError, CallOptions, Host, ToolResult};

use crate::support::{HOSTILE, cache, host, plugin_dir, pool};

#[tokio::test]
async fn schema_violations_are_reported_before_guest_code_runs() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let cases = [
        ("{}", "`(root)`: \"text\" is a required property"),
        (r#"{"text": 5}"#, "`/text`: 5 is not of type \"string\""),
        ("not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
    ];
    for (arguments, expected) in cases {
        let err = host
            .call("echo", arguments, &CallOptions::default())
            .await
            .unwrap_err();
        let CallError::InvalidArguments {
            tool,
            problems,
            code,
        } = &err
        else {
            panic!("{arguments}: {err:?}");
        };
        assert_eq!((tool.as_str(), *code), ("echo", None));
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{arguments}: {problems:?} should mention {expected}"
        );
    }
    // Several problems are all listed.
    let err = host
        .call(
            "allocate",
            r#"{"mib": "many", "extra": 1}"#,
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`/mib`"), "{err}");
}

#[tokio::test]
async fn the_two_tool_error_kinds_keep_message_and_code() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let err = host
        .call(
            "fail",
            r#"{"message": "upstream is down"}"#,
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CallError::ToolFailed {
            tool: "fail".into(),
            message: "upstream is down".into(),
            code: Some(42),
            retryable: false,
        }
    );
    assert_eq!(
        err.llm_text(),
        "Error: tool `fail` failed: upstream is down"
    );
    let err = host
        .call(
            "reject",
            r#"{"message": "date must be in the future"}"#,
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CallError::InvalidArguments {
            tool: "reject".into(),
            problems: vec!["date must be in the future".into()],
            code: Some(7)
        }
    );
}

#[tokio::test]
async fn unknown_tools_get_a_suggestion() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let err = host
        .call("ecoh", "{}", &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CallError::UnknownTool {
            name: "ecoh".into(),
            suggestion: Some("echo".into())
        }
    );
    assert!(err.to_string().contains("did you mean `echo`?"), "{err}");
}

#[tokio::test]
async fn progress_messages_reach_the_sink_in_order() {
    let dir = plugin_dir(&[HOSTILE]);
    // `ask` also requests approval, after its progress messages.
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .reviewer(AutoApprove)
        .build()
        .await
        .expect("host");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let options =
        CallOptions::default().with_progress(Arc::new(move |tool: &str, message: &str| {
            sink_seen
                .lock()
                .expect("lock")
                .push(format!("{tool}: {message}"));
        }));
    host.call("ask", r#"{"message": "x"}"#, &options)
        .await
        .expect("call");
    assert_eq!(
        *seen.lock().expect("lock"),
        ["ask: step 1 of 2", "ask: step 2 of 2"]
    );
}

#[tokio::test]
async fn concurrent_calls_all_succeed() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = Arc::new(host(dir.path()).await);
    // More calls than pool slots (8): the rest wait instead of failing.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..32 {
        let host = host.clone();
        tasks.spawn(async move {
            let args = format!(r#"{{"text": "call {i}"}}"#);
            let out = host
                .call("echo", &args, &CallOptions::default())
                .await
                .expect("call");
            assert_eq!(out.into_json().expect("json")["echo"], format!("call {i}"));
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("task");
    }
}

#[tokio::test]
async fn a_sequential_tool_never_overlaps_itself() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = Arc::new(host(dir.path()).await);
    assert!(
        !host
            .tool("one_at_a_time")
            .expect("tool")
            .spec()
            .metadata
            .parallelizable
    );
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let host = host.clone();
        tasks.spawn(async move {
            let out = host
                .call("one_at_a_time", r#"{"ms": 30}"#, &CallOptions::default())
                .await
                .expect("call");
            let json = out.into_json().expect("json");
            (
                json["start_us"].as_u64().expect("start"),
                json["end_us"].as_u64().expect("end"),
            )
        });
    }
    let mut spans = Vec::new();
    while let Some(done) = tasks.join_next().await {
        spans.push(done.expect("task"));
    }
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "calls overlapped: {spans:?}");
    }
}

#[tokio::test]
async fn results_follow_the_reference_contract() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let ok = host
        .call("echo", r#"{"text": "hi"}"#, &CallOptions::default())
        .await;
    let result = ToolResult::from(&ok);
    assert!(result.success && result.error_message.is_none());
    assert_eq!(result.llm_text(), r#"{"echo":"hi"}"#);
    let out = ok.expect("ok");
    assert!(out.fuel_consumed > 0);
    assert_eq!(out.return_behavior, corral::ReturnBehavior::ToLlm);

    let failed = host
        .call("fail", r#"{"message": "m"}"#, &CallOptions::default())
        .await;
    let result = ToolResult::from(&failed);
    assert!(!result.success && result.output.is_empty());
    assert_eq!(result.llm_text(), "Error: tool `fail` failed: m");
}

/// A call naming no tool is counted under one fixed `tool` label, so that
/// callers making up names cannot grow the metrics without bound (an
/// operator's `/metrics` would otherwise hold every name ever tried).
#[test]
fn calls_naming_no_tool_share_one_metrics_label() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = crate::support::plugin_dir(&[crate::support::HOSTILE]);
    // The recorder is this thread's for the closure; the current-thread
    // runtime runs every call on it.
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let host = crate::support::host(dir.path()).await;
            for name in ["made_up_1", "made_up_2", "echo"] {
                let _ = host
                    .call(name, r#"{"text": "x"}"#, &corral::CallOptions::default())
                    .await;
            }
        });
    });
    let text = handle.render();
    assert!(!text.contains("made_up"), "{text}");
    assert!(
        text.contains("corral_calls_total{tool=\"(unknown)\"} 2"),
        "{text}"
    );
    assert!(
        text.contains("corral_call_errors_total{tool=\"(unknown)\",kind=\"unknown_tool\"} 2"),
        "{text}"
    );
    assert!(
        text.contains("corral_calls_total{tool=\"echo\"} 1"),
        "{text}"
    );
}

/// A tool name a caller made up reaches error text (and so terminals and
/// logs) with its control characters escaped.
#[tokio::test]
async fn an_unknown_tool_name_is_escaped_in_the_error() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let err = host
        .call("bad\u{1b}[2Jname", "{}", &CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownTool { .. }), "{err:?}");
    assert!(
        err.to_string().contains("unknown tool `bad\\u{1b}[2Jname`"),
        "{err}"
    );
    assert!(!err.llm_text().contains('\u{1b}'));
}
