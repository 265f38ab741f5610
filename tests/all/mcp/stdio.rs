//! MCP over stdio: initialize, tools/list, tools/call, progress,
//! cancellation, elicitation and list_changed, through [`Stdio_`].

use std::io::Read as _;
use std::process::Stdio;
use std::time::Instant;

use serde_json::{Value, json};

use super::{Stdio_, WAIT, text};
use crate::support::{DUP_A, HOSTILE, REFERENCE_TOOLS, SAMPLES, guest, plugin_dir};

#[test]
fn stdio_initializes_lists_and_calls() {
    let dir = plugin_dir(&[SAMPLES, &[HOSTILE]].concat());
    std::fs::write(
        dir.path().join("fetch.policy.toml"),
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:9\"]\n\
         [environment]\nset = { API_TOKEN = \"s3cret\" }\n",
    )
    .expect("policy");
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    let init = mcp.initialize(json!({}));
    assert_eq!(init["result"]["serverInfo"]["name"], "corral");
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
    // The instructions point to the built-ins this host serves.
    let instructions = init["result"]["instructions"]
        .as_str()
        .expect("instructions");
    assert!(instructions.contains("execute_code"), "{instructions}");
    assert!(instructions.contains("execute_tool_plan"), "{instructions}");
    let mut excluded = Stdio_::start(
        dir.path(),
        &["--no-watch", "--exclude-tools", "^execute_code$"],
    );
    let init = excluded.initialize(json!({}));
    let instructions = init["result"]["instructions"]
        .as_str()
        .expect("instructions");
    assert!(!instructions.contains("execute_code"), "{instructions}");
    assert!(instructions.contains("execute_tool_plan"), "{instructions}");
    drop(excluded);

    let list = mcp.request(1, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .clone()
    };
    let sha = tool("sha256");
    assert_eq!(sha["inputSchema"]["required"], json!(["text"]));
    assert_eq!(
        sha["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(sha["_meta"]["corral/plugin"], "encode");
    assert_eq!(sha["_meta"]["corral/returnBehavior"], "to_llm");
    assert_eq!(
        sha["_meta"]["corral/grants"],
        json!({"files": [], "environment": [], "http": [], "privateNetworks": false})
    );
    // Grants name what a tool reaches; an environment value never leaves the host.
    let fetch = tool("fetch_url");
    assert_eq!(
        fetch["_meta"]["corral/grants"],
        json!({"files": [], "environment": ["API_TOKEN"], "http": ["http://127.0.0.1:9"], "privateNetworks": false})
    );
    assert_eq!(fetch["annotations"]["openWorldHint"], true);
    assert!(!list.to_string().contains("s3cret"), "{list}");
    assert_eq!(tool("notes_delete")["annotations"]["destructiveHint"], true);
    assert!(tools.iter().any(|t| t["name"] == "execute_tool_plan"));

    let ok = mcp.call(2, "sha256", json!({"text": "abc"}));
    assert_eq!(ok["result"]["isError"], false);
    assert_eq!(
        ok["result"]["structuredContent"]["sha256"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );

    let invalid = mcp.call(3, "sha256", json!({"text": 5}));
    assert_eq!(invalid["result"]["isError"], true, "{invalid}");
    assert_eq!(
        text(&invalid),
        "Error: invalid arguments for `sha256`: `/text`: 5 is not of type \"string\""
    );

    let unknown = mcp.call(4, "sha265", json!({}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    let plan = mcp.call(
        5,
        "execute_tool_plan",
        json!({"steps": [
            {"id": "w", "tool": "word_count", "arguments": {"text": "one two three"}},
            {"id": "h", "tool": "sha256", "arguments": {"text": "words: $ref:w.words"}}
        ]}),
    );
    assert_eq!(
        plan["result"]["structuredContent"]["status"], "succeeded",
        "{plan}"
    );

    let trapped = mcp.call(6, "panic", json!({"message": "boom"}));
    assert_eq!(trapped["result"]["isError"], true);
    let after = mcp.call(7, "echo", json!({"text": "still here"}));
    assert_eq!(after["result"]["structuredContent"]["echo"], "still here");
}

/// Progress is coalesced (at most one notification per 100 ms, the latest
/// message wins), and the last message arrives before the result.
#[test]
fn progress_becomes_notifications_in_order() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch", "--approve", "auto"]);
    mcp.initialize(json!({}));
    mcp.send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask", "arguments": {"message": "m"}, "_meta": {"progressToken": "tok"}}
    }));
    let response = mcp.response(1);
    assert_eq!(
        response["result"]["structuredContent"]["decision"],
        "continue"
    );
    let progress: Vec<Value> = mcp
        .backlog
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"].clone())
        .collect();
    // The guest sent two messages back to back: the client gets one or two
    // notifications, in order, the last being the guest's last, before the
    // result.
    assert!(
        !progress.is_empty() && progress.len() <= 2,
        "{:?}",
        mcp.backlog
    );
    assert_eq!(
        progress.last(),
        Some(&json!({"progressToken": "tok", "progress": 2.0, "message": "step 2 of 2"})),
        "{:?}",
        mcp.backlog
    );
    if let [first, _] = progress.as_slice() {
        assert_eq!(first["message"], "step 1 of 2");
    }
}

#[test]
fn cancellation_stops_a_spinning_guest() {
    let dir = plugin_dir(&[HOSTILE]);
    let log_dir = tempfile::tempdir().expect("log dir");
    let log_path = log_dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).expect("log");
    // Effectively unlimited fuel and time: only the cancellation can stop it.
    let mut mcp = Stdio_::start_with(
        dir.path(),
        &["--fuel", "100000000000000", "--timeout-ms", "600000"],
        &["--no-watch"],
        Stdio::from(log),
    );
    mcp.initialize(json!({}));
    mcp.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "spin", "arguments": {}}}));
    mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}}));
    let echo = mcp.call(2, "echo", json!({"text": "after"}));
    assert_eq!(echo["result"]["structuredContent"]["echo"], "after");
    // The server logs the cancellation when it drops the call (and with it the
    // store); wait for that line rather than for a time.
    let deadline = Instant::now() + WAIT;
    loop {
        let mut text = String::new();
        std::fs::File::open(&log_path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .expect("read log");
        if text.contains("call cancelled by the client; sandbox torn down") {
            break;
        }
        assert!(Instant::now() < deadline, "no cancellation logged:\n{text}");
        std::thread::yield_now();
    }
    assert!(
        mcp.backlog.iter().all(|m| m["id"] != 1),
        "a cancelled request gets no response: {:?}",
        mcp.backlog
    );
}

#[test]
fn gated_calls_ask_through_elicitation_when_the_client_can() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    mcp.initialize(json!({"elicitation": {}}));
    mcp.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "gated", "arguments": {"message": "wipe"}}}));
    let ask = mcp.wait_for("an elicitation request", |m| {
        m["method"] == "elicitation/create"
    });
    let message = ask["params"]["message"].as_str().expect("message");
    assert!(
        message.contains("tool:      gated\nplugin:    fixture_hostile (sha256 "),
        "{message}"
    );
    let form = &ask["params"]["requestedSchema"]["properties"];
    assert!(form["decision"].get("default").is_none(), "{ask}");
    assert_eq!(form["edit.message"]["default"], "wipe", "{ask}");
    mcp.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"decision": "deny", "reason": "not today"}}}));
    let result = mcp.response(1);
    assert_eq!(result["result"]["isError"], true);
    assert_eq!(text(&result), "Error: Rejected by reviewer: not today");

    mcp.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gated", "arguments": {"message": "tidy"}}}));
    let ask = mcp.wait_for("an elicitation request", |m| {
        m["method"] == "elicitation/create"
    });
    mcp.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"decision": "allow"}}}));
    assert_eq!(
        mcp.response(2)["result"]["structuredContent"]["message"],
        "tidy"
    );
}

/// The `_meta` of a 2026-07-28 request from a client with elicitation.
fn stateless_meta() -> serde_json::Value {
    super::stateless_meta(json!({"elicitation": {"form": {}}}))
}

#[test]
fn a_2026_07_28_client_answers_an_input_required_result_and_retries() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    // No initialize: the revision travels in each request's `_meta`.
    let call = |state: Option<&str>, answer: Option<serde_json::Value>| {
        let mut params = json!({"name": "gated", "arguments": {"message": "wipe"},
                                "_meta": stateless_meta()});
        if let Some(state) = state {
            params["requestState"] = json!(state);
            params["inputResponses"] = json!({"approval": answer});
        }
        params
    };
    let asked = mcp.request(1, "tools/call", call(None, None));
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let question = &result["inputRequests"]["approval"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    assert!(
        question["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("tool:      gated")),
        "{asked}"
    );
    let state = result["requestState"].as_str().expect("requestState");

    let allow =
        json!({"action": "accept", "content": {"decision": "edit", "edit.message": "tidy"}});
    let done = mcp.request(2, "tools/call", call(Some(state), Some(allow.clone())));
    assert_eq!(
        done["result"]["structuredContent"]["message"], "tidy",
        "{done}"
    );
    // The same state again is a replay.
    let replay = mcp.request(3, "tools/call", call(Some(state), Some(allow)));
    assert!(
        replay["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("already used")),
        "{replay}"
    );
}

#[test]
fn without_elicitation_or_a_reviewer_a_gated_call_is_refused() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    mcp.initialize(json!({}));
    // No one can decide: refused before the call as MCP says, naming the
    // capability that would make it work (-32021).
    let result = mcp.call(1, "gated", json!({"message": "wipe"}));
    assert_eq!(result["error"]["code"], -32021, "{result}");
    assert_eq!(
        result["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}}),
        "{result}"
    );
    let message = result["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`gated` needs approval"), "{result}");
    // A standing approval or a reviewer of the host's own decides instead.
    let mut decided = Stdio_::start(dir.path(), &["--no-watch", "--approve", "deny"]);
    decided.initialize(json!({}));
    let denied = decided.call(1, "gated", json!({"message": "wipe"}));
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(
        mcp.backlog
            .iter()
            .all(|m| m["method"] != "elicitation/create")
    );
}

#[test]
fn a_new_plugin_in_the_directory_notifies_list_changed() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut mcp = Stdio_::start(dir.path(), &[]);
    mcp.initialize(json!({}));
    // A request round trip proves the session is up before the change.
    mcp.request(1, "tools/list", json!({}));
    let tmp = dir.path().join("incoming.tmp");
    std::fs::copy(guest(DUP_A), &tmp).expect("copy");
    std::fs::rename(&tmp, dir.path().join(DUP_A)).expect("drop in");
    mcp.wait_for("list_changed", |m| {
        m["method"] == "notifications/tools/list_changed"
    });
    let list = mcp.request(2, "tools/list", json!({}));
    assert!(
        list["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["name"] == "dup_tool")
    );
}

#[test]
fn tool_errors_carry_their_kind_and_code_in_meta() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    mcp.initialize(json!({}));
    let response = mcp.call(1, "fail", json!({"message": "\u{1b}[2Jboom"}));
    let result = &response["result"];
    assert_eq!(result["isError"], true, "{response}");
    assert_eq!(
        result["_meta"]["corral/errorKind"], "tool_failed",
        "{response}"
    );
    assert_eq!(result["_meta"]["corral/errorCode"], 42, "{response}");
    assert!(text(&response).contains("\\u{1b}[2Jboom"), "{response}");
    // A tool that returns nothing: an empty text result, not "null".
    let response = mcp.call(2, "nothing", json!({}));
    assert_eq!(response["result"]["isError"], false, "{response}");
    assert_eq!(text(&response), "", "{response}");
}

#[test]
fn health_shows_in_tools_list_a_resource_and_list_changed() {
    let server = crate::support::TestServer::start_failing(100, "never");
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n\
         [resilience.tools.fetch_url]\nretry = {{ max_attempts = 1 }}\nhealth = {{ window = 2 }}\n",
        server.port
    );
    let dir = crate::support::plugin_dir_with_policies(&[(crate::support::FETCH, Some(&policy))]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    mcp.initialize(json!({}));
    let find = |list: &Value| {
        list["result"]["tools"]
            .as_array()
            .and_then(|tools| tools.iter().find(|t| t["name"] == "fetch_url"))
            .cloned()
            .expect("fetch_url listed")
    };
    let list = mcp.request(1, "tools/list", json!({}));
    let fetch = find(&list);
    assert_eq!(fetch["outputSchema"]["type"], "object", "{fetch}");
    assert_eq!(
        fetch["_meta"]["corral/health"]["status"], "UNKNOWN",
        "{fetch}"
    );
    let url = json!({"url": format!("http://127.0.0.1:{}/", server.port)});
    for id in 2..4 {
        let response = mcp.call(id, "fetch_url", url.clone());
        assert_eq!(response["result"]["isError"], true, "{response}");
    }
    mcp.wait_for("list_changed after the tool went DOWN", |m| {
        m["method"] == "notifications/tools/list_changed"
    });
    let list = mcp.request(4, "tools/list", json!({}));
    let fetch = find(&list);
    assert_eq!(fetch["_meta"]["corral/health"]["status"], "DOWN", "{fetch}");
    let description = fetch["description"].as_str().expect("description");
    assert!(
        description.contains("this tool is failing right now"),
        "{description}"
    );
    let resources = mcp.request(5, "resources/list", json!({}));
    assert_eq!(
        resources["result"]["resources"][0]["uri"], "corral://health",
        "{resources}"
    );
    let read = mcp.request(6, "resources/read", json!({"uri": "corral://health"}));
    let report: Value = serde_json::from_str(
        read["result"]["contents"][0]["text"]
            .as_str()
            .expect("text"),
    )
    .expect("json");
    assert_eq!(report["status"], "DOWN", "{report}");
    let tools = report["tools"].as_array().expect("tools");
    assert!(
        tools
            .iter()
            .any(|t| t["tool"] == "fetch_url" && t["status"] == "DOWN")
    );
}

#[test]
fn a_string_output_is_its_text_and_an_object_also_structured_content() {
    let dir = plugin_dir(&[REFERENCE_TOOLS, HOSTILE]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    mcp.initialize(json!({}));
    // A JSON string is shown unquoted, as a model reads it.
    let greeting = mcp.call(1, "greet", json!({"name": "Ada \"the first\""}));
    assert_eq!(text(&greeting), "Hello, Ada \"the first\"!", "{greeting}");
    assert!(
        greeting["result"].get("structuredContent").is_none(),
        "{greeting}"
    );
    // An object stays JSON text, and is also structured content.
    let echo = mcp.call(2, "echo", json!({"text": "hi"}));
    assert_eq!(text(&echo), r#"{"echo":"hi"}"#, "{echo}");
    assert_eq!(echo["result"]["structuredContent"]["echo"], "hi", "{echo}");
}
