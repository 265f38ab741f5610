//! Code mode through the library: `execute_code` runs a script in the
//! runner, and every tool call it makes is a call through the host.

use corral::{CODE_TOOL, CallError, CodeLimits, Host, Limits};
use serde_json::{Value, json};

use crate::support::{ENCODE, HOSTILE, TEXT, builder, call, failure, host, plugin_dir};

async fn code_host() -> (tempfile::TempDir, Host) {
    let dir = plugin_dir(&[ENCODE, TEXT, HOSTILE]);
    let host = host(dir.path()).await;
    (dir, host)
}

async fn run(host: &Host, code: &str) -> Result<Value, CallError> {
    call(host, CODE_TOOL, json!({ "code": code })).await
}

#[tokio::test]
async fn a_script_returns_every_json_type() {
    let (_dir, host) = code_host().await;
    for (code, expected) in [
        ("return 1.5", json!(1.5)),
        ("return 'text'", json!("text")),
        ("return true", json!(true)),
        ("return null", json!(null)),
        ("return [1, [2]]", json!([1, [2]])),
        ("return {a: {b: 'c'}}", json!({"a": {"b": "c"}})),
        ("const x = 1", json!(null)),
    ] {
        let out = run(&host, code).await.expect(code);
        assert_eq!(out["result"], expected, "{code}");
        assert_eq!(out["calls"], json!([]), "{code}");
    }
}

#[tokio::test]
async fn tool_calls_go_through_the_host_and_are_listed() {
    let (_dir, host) = code_host().await;
    let direct = call(&host, "sha256", json!({"text": "abc"}))
        .await
        .expect("direct");
    let out = run(
        &host,
        "const words = ['abc', 'def'];\n\
         const hashes = [];\n\
         for (const w of words) hashes.push(await tools.sha256({text: w}));\n\
         const wave = await tools.parallel([['sha256', {text: 'abc'}], ['slugify', {text: 'A B'}]]);\n\
         console.log('hashed', hashes.length);\n\
         return { first: hashes[0], wave };",
    )
    .await
    .expect("script");
    assert_eq!(out["result"]["first"], direct);
    assert_eq!(out["result"]["wave"][0], direct);
    assert_eq!(
        out["result"]["wave"][1],
        call(&host, "slugify", json!({"text": "A B"}))
            .await
            .unwrap()
    );
    let tools: Vec<&str> = out["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["tool"].as_str().expect("tool"))
        .collect();
    // Consecutive calls of one tool with one outcome are one entry.
    assert_eq!(tools, ["sha256", "slugify"]);
    assert_eq!(out["calls"][0]["count"], json!(3));
    assert!(out["calls"][1].get("count").is_none(), "{out}");
    assert!(
        out["calls"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["ok"] == json!(true))
    );
    assert_eq!(out["logs"], json!([{"level": "info", "text": "hashed 2"}]));
}

#[tokio::test]
async fn a_failed_call_throws_a_tool_error_the_script_can_catch() {
    let (_dir, host) = code_host().await;
    let out = run(
        &host,
        "try { await tools.sha256({wrong: 1}); return 'no error' }\n\
         catch (e) { return [e.name, e.kind, e instanceof ToolError, e.tool] }",
    )
    .await
    .expect("caught");
    assert_eq!(
        out["result"],
        json!(["ToolError", "invalid_arguments", true, "sha256"])
    );
    assert_eq!(out["calls"][0]["ok"], json!(false));

    let err = failure(run(&host, "const a = 1;\nawait tools.no_such_tool({});").await);
    let text = err.to_string();
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err:?}");
    assert!(text.contains("ToolError (invalid_arguments"), "{text}");
    assert!(text.contains("no_such_tool"), "{text}");
    assert!(text.contains("line 2"), "{text}");
}

#[tokio::test]
async fn exceptions_and_syntax_errors_name_the_line_and_column() {
    let (_dir, host) = code_host().await;
    let err = failure(run(&host, "let x = 1;\nx = y + 2;\nreturn x").await);
    let text = err.to_string();
    assert!(text.contains("ReferenceError"), "{text}");
    assert!(text.contains("line 2, column"), "{text}");

    let err = failure(run(&host, "return (").await);
    assert!(err.to_string().contains("SyntaxError"), "{err}");
    assert!(err.to_string().contains("line 1, column 9"), "{err}");
}

#[tokio::test]
async fn a_script_cannot_reach_the_built_in_tools() {
    let (_dir, host) = code_host().await;
    for name in [CODE_TOOL, "execute_tool_plan"] {
        let out = run(
            &host,
            &format!(
                "try {{ await tools.{name}({{}}) }} catch (e) {{ return [e.kind, e.message] }}"
            ),
        )
        .await
        .expect(name);
        assert_eq!(out["result"][0], json!("denied"), "{name}");
        assert!(out["result"][1].as_str().unwrap().contains(name), "{out}");
    }
}

#[tokio::test]
async fn the_call_cap_stops_a_script_that_calls_too_often() {
    let dir = plugin_dir(&[ENCODE]);
    let host = builder(dir.path())
        .code_limits(CodeLimits::default().with_max_calls(3))
        .build()
        .await
        .expect("host");
    let out = run(
        &host,
        "let n = 0;\n\
         try { while (true) { await tools.sha256({text: 'x'}); n++ } }\n\
         catch (e) { return [n, e.kind, e.code] }",
    )
    .await
    .expect("caught");
    assert_eq!(out["result"], json!([3, "limit", "too_many_calls"]));
}

#[tokio::test]
async fn hostile_scripts_are_stopped_by_the_sandbox() {
    let dir = plugin_dir(&[ENCODE]);
    let host = builder(dir.path())
        .limits(
            Limits::default()
                .with_timeout_ms(5_000)
                .with_memory_bytes(48 << 20),
        )
        .build()
        .await
        .expect("host");
    let err = failure(run(&host, "while (true) {}").await);
    assert!(
        matches!(err, CallError::OutOfFuel { .. } | CallError::Timeout { .. }),
        "{err:?}"
    );
    let err = failure(
        run(
            &host,
            "const a = []; while (true) a.push(new Uint8Array(1 << 24).fill(1));",
        )
        .await,
    );
    // The memory cap refuses QuickJS's allocation, which it reports as an
    // exception the script could catch; nothing past the cap was allocated.
    assert!(
        matches!(&err, CallError::ToolFailed { message, .. } if message.contains("out of memory")),
        "{err:?}"
    );
    let err = failure(run(&host, "function f(n) { return f(n + 1) + 1 }\nreturn f(0)").await);
    assert!(matches!(err, CallError::StackOverflow { .. }), "{err:?}");
    // Nothing of the host's: no network, module system or process.
    let out = run(
        &host,
        "return [typeof fetch, typeof require, typeof process, typeof WebAssembly]",
    )
    .await
    .expect("typeof");
    assert_eq!(
        out["result"],
        json!(["undefined", "undefined", "undefined", "undefined"])
    );
    // The real clock is out of reach: the runner's own `Date`, reached
    // around the replacement, asks WASI for the time, and WASI is stubbed
    // out of the runner (it traps).
    let err = failure(run(&host, "return new Date.prototype.constructor().getTime()").await);
    assert!(matches!(err, CallError::Trapped { .. }), "{err:?}");
}

#[tokio::test]
async fn random_and_time_are_deterministic_within_a_run() {
    let (_dir, host) = code_host().await;
    let out = run(
        &host,
        "const a = Date.now(); const b = Date.now(); const d = new Date().getTime();\n\
         const r = [Math.random(), Math.random()];\n\
         return { step: b - a, d: d - b, r, inRange: r.every(x => x >= 0 && x < 1) }",
    )
    .await
    .expect("script");
    assert_eq!(out["result"]["step"], json!(1));
    assert_eq!(out["result"]["d"], json!(1));
    assert_eq!(out["result"]["inRange"], json!(true));
    assert_ne!(out["result"]["r"][0], out["result"]["r"][1]);
}

#[tokio::test]
async fn excluding_execute_code_takes_it_off_every_path() {
    let dir = plugin_dir(&[ENCODE]);
    let host = builder(dir.path())
        .exclude_tools(regex::Regex::new("^execute_code$").expect("regex"))
        .build()
        .await
        .expect("host");
    assert!(host.tool(CODE_TOOL).is_none());
    let err = failure(run(&host, "return 1").await);
    assert!(matches!(err, CallError::UnknownTool { .. }), "{err:?}");
}

#[tokio::test]
async fn the_description_declares_the_tools_a_script_can_call() {
    let (_dir, host) = code_host().await;
    let spec = host.tool(CODE_TOOL).expect("served").spec().clone();
    let text = &spec.description;
    assert!(text.contains("declare const tools: {"), "{text}");
    assert!(text.contains("  sha256(args: {\n"), "{text}");
    assert!(text.contains("  slugify(args: {\n"), "{text}");
    assert!(text.contains("parallel(calls:"), "{text}");
    // Built-in tools are not callable from a script, so not declared.
    assert!(!text.contains("execute_tool_plan(args"), "{text}");
    assert!(!text.contains("execute_code(args"), "{text}");
}

#[tokio::test]
async fn a_large_catalog_points_to_tool_search_for_its_declarations() {
    let dir = crate::support::catalog_dir();
    let host = builder(dir.path())
        .tool_search(true)
        .build()
        .await
        .expect("host");
    let text = host
        .tool(CODE_TOOL)
        .expect("served")
        .spec()
        .description
        .clone();
    // 200 tools do not fit the budget: no declarations, and where to get them.
    assert!(!text.contains("declare const tools"), "{text}");
    assert!(text.contains("`info:NAME`"), "{text}");
    let info = call(
        &host,
        corral::SEARCH_TOOL,
        json!({"query": "info:cal_create_event"}),
    )
    .await
    .expect("info");
    let declaration = info["typescript"].as_str().expect("typescript");
    assert!(
        declaration.contains("  cal_create_event(args: {\n"),
        "{declaration}"
    );
    assert!(declaration.contains("title"), "{declaration}");
}

/// Approves every request and keeps what it was shown.
#[derive(Debug, Default)]
struct Recording {
    seen: std::sync::Mutex<Vec<corral::ReviewRequest>>,
}

impl corral::Reviewer for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn review<'a>(&'a self, request: &'a corral::ReviewRequest) -> corral::ReviewFuture<'a> {
        self.seen.lock().unwrap().push(request.clone());
        Box::pin(async { Ok(corral::ApprovalDecision::Continue) })
    }
}

#[tokio::test]
async fn each_gated_call_of_a_script_is_reviewed_and_shows_the_script() {
    let dir = plugin_dir(&[ENCODE]);
    let reviewer = std::sync::Arc::new(Recording::default());
    let host = builder(dir.path())
        .require_approval("sha256")
        .reviewer_arc(reviewer.clone())
        .build()
        .await
        .expect("host");
    let code = "// hash two words\nconst a = await tools.sha256({text: 'a'});\n\
                const b = await tools.sha256({text: 'b'});\nreturn [a.bytes, b.bytes];";
    let out = run(&host, code).await.expect("approved");
    assert_eq!(out["result"], json!([1, 1]));
    let seen = reviewer.seen.lock().unwrap().clone();
    // Two reviews, one per gated call; the script itself is not gated.
    assert_eq!(seen.len(), 2, "{seen:?}");
    let calls: Vec<_> = seen
        .iter()
        .map(|r| r.script.as_ref().and_then(|s| s.call))
        .collect();
    assert_eq!(calls, [Some(0), Some(1)]);
    for request in &seen {
        assert_eq!(request.tool, "sha256");
        let script = request
            .script
            .as_ref()
            .expect("the review names the script");
        assert_eq!(script.excerpt.lines().next(), Some("// hash two words"));
        let text = request.render();
        let call = request
            .script
            .as_ref()
            .and_then(|s| s.call)
            .expect("numbered")
            + 1;
        assert!(
            text.contains(&format!(
                "from:      call {call} of a script (execute_code, sha256 "
            )),
            "{text}"
        );
        assert!(text.contains("│ // hash two words"), "{text}");
    }
    // A direct call's review names no script.
    call(&host, "sha256", json!({"text": "c"}))
        .await
        .expect("direct");
    assert!(reviewer.seen.lock().unwrap()[2].script.is_none());
}

#[tokio::test]
async fn a_scripts_calls_are_audited_as_children_of_its_run() {
    let dir = plugin_dir(&[ENCODE]);
    std::fs::write(
        dir.path().join("encode.policy.toml"),
        "version = 1\n[resilience]\naudit = { level = \"all\" }\n",
    )
    .expect("policy");
    let state = tempfile::tempdir().expect("temp dir");
    let log = state.path().join("audit.jsonl");
    let host = builder(dir.path())
        .require_approval("sha256")
        .reviewer_arc(std::sync::Arc::new(Recording::default()))
        .audit_log(corral::AuditLog::open(&log).expect("audit log"))
        .build()
        .await
        .expect("host");
    run(
        &host,
        "await tools.sha256({text: 'a'});\nreturn (await tools.base64_encode({text: 'b'}));",
    )
    .await
    .expect("script");
    call(&host, "sha256", json!({"text": "direct"}))
        .await
        .expect("direct");
    let records: Vec<Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let of = |event: &str, tool: &str| -> Vec<&Value> {
        records
            .iter()
            .filter(|r| r["event"] == event && r["tool"] == tool)
            .collect()
    };
    let script = of("call", CODE_TOOL);
    assert_eq!(script.len(), 1, "{records:#?}");
    assert_eq!(script[0]["outcome"], "ok");
    assert_eq!(script[0]["parent_id"], Value::Null);
    let id = script[0]["call_id"].as_str().expect("call_id");
    assert_eq!(id.len(), 32);
    // Both inner calls and the inner call's approval name the run; the
    // direct call and its approval name none.
    let hashes = of("call", "sha256");
    let approvals = of("approval", "sha256");
    let encoded = of("call", "base64_encode");
    assert_eq!((hashes.len(), approvals.len(), encoded.len()), (2, 2, 1));
    for child in [hashes[0], approvals[0], encoded[0]] {
        assert_eq!(child["parent_id"], json!(id), "{child}");
    }
    assert_eq!(hashes[1]["parent_id"], Value::Null);
    assert_eq!(approvals[1]["parent_id"], Value::Null);
    assert_ne!(hashes[0]["call_id"], hashes[1]["call_id"]);
}

#[tokio::test]
async fn scripts_filling_every_slot_still_get_their_calls_through() {
    // Two plugin slots, and more scripts at once than there are script
    // slots: every script waits on inner calls while others wait for a
    // script slot, and all of them finish.
    let dir = plugin_dir(&[ENCODE]);
    let host = builder(dir.path())
        .pool(crate::support::pool().with_max_concurrent_instances(2))
        .build()
        .await
        .expect("host");
    let script = "const out = [];\n\
                  for (let i = 0; i < 5; i++) out.push((await tools.sha256({text: String(i)})).bytes);\n\
                  const wave = await tools.parallel([0, 1, 2, 3].map(i => ['sha256', {text: 'w' + i}]));\n\
                  return out.length + wave.length;";
    let runs = (0..3 * corral::SCRIPT_INSTANCES).map(|_| {
        let host = host.clone();
        async move { run(&host, script).await }
    });
    // A deadlock would hang here: the guard turns it into a failure.
    let results = tokio::time::timeout(
        std::time::Duration::from_secs(300),
        futures_util::future::join_all(runs),
    )
    .await
    .expect("every script finished");
    for result in results {
        assert_eq!(result.expect("script")["result"], json!(9));
    }
}

/// Approves after taking longer than the script's whole deadline, as a
/// person at a prompt might.
#[derive(Debug)]
struct Slow;

impl corral::Reviewer for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn review<'a>(&'a self, _request: &'a corral::ReviewRequest) -> corral::ReviewFuture<'a> {
        Box::pin(async {
            tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
            Ok(corral::ApprovalDecision::Continue)
        })
    }
}

#[tokio::test]
async fn the_deadline_stands_still_while_a_reviewer_decides_an_inner_call() {
    let dir = plugin_dir(&[ENCODE]);
    let host = builder(dir.path())
        .require_approval("sha256")
        .reviewer(Slow)
        .build()
        .await
        .expect("host");
    // Two slow reviews, 3 s in all, inside a script given 1 s.
    let out = call(
        &host,
        CODE_TOOL,
        json!({
            "code": "const a = await tools.sha256({text: 'a'});\n\
                     const [b] = await tools.parallel([['sha256', {text: 'b'}]]);\n\
                     return [a.bytes, b.bytes];",
            "timeout_ms": 1_000
        }),
    )
    .await
    .expect("the reviews did not count against the script's deadline");
    assert_eq!(out["result"], json!([1, 1]));
    // Without a review, the same deadline still stops a spinning script.
    let err = failure(
        call(
            &host,
            CODE_TOOL,
            json!({"code": "while (true) {}", "timeout_ms": 200}),
        )
        .await,
    );
    assert!(
        matches!(err, CallError::Timeout { .. } | CallError::OutOfFuel { .. }),
        "{err:?}"
    );
}
