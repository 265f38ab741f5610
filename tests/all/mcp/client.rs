//! A guest's requests to its MCP client (WIT 0.3.0 `elicit`, `sample`,
//! `roots`) over stdio, from a session-based client that answers the
//! server's `sampling/createMessage`, `elicitation/create` and `roots/list`
//! itself: the answers reach the guest, the person's answers are checked
//! against the form, the plugin's words are framed and the sampling request
//! carries the warning; without the grant, past the policy's limits, or to
//! a client without the capability, the guest gets a clear error, and a
//! tool that needs sampling refuses such a client before the call.

use serde_json::{Value, json};

use super::{Stdio_, text};
use crate::support::{REFERENCE_TOOLS, plugin_dir_with_policies};

const GRANTS: &str = "version = 1\n[client]\nelicitation = true\nroots = true\n\
                      sampling = { max_tokens = 100, calls_per_call = 1, \
                      required_by = [\"test_missing_capability\"] }\n";

/// A server over the reference tools under `policy`, its client
/// initialized with `capabilities`.
fn server(policy: &str, capabilities: Value) -> (tempfile::TempDir, Stdio_) {
    let dir = plugin_dir_with_policies(&[(REFERENCE_TOOLS, Some(policy))]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    mcp.initialize(capabilities);
    (dir, mcp)
}

/// Starts `tools/call` `id` of `tool`, answers the server's request of
/// `method` with `answer`, and returns that request and the call's response.
fn call_answering(
    mcp: &mut Stdio_,
    id: u64,
    tool: &str,
    arguments: Value,
    method: &str,
    answer: Value,
) -> (Value, Value) {
    mcp.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": tool, "arguments": arguments}}));
    let request = mcp.wait_for(method, |m| m["method"] == method && m.get("id").is_some());
    mcp.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": answer}));
    (request, mcp.response(id))
}

#[test]
fn a_session_client_answers_sampling_elicitation_and_roots() {
    let caps = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let (_dir, mut mcp) = server(GRANTS, caps);

    let (request, response) = call_answering(
        &mut mcp,
        1,
        "test_sampling",
        json!({"prompt": "What is 2+2?"}),
        "sampling/createMessage",
        json!({"role": "assistant", "content": {"type": "text", "text": "4"},
               "model": "test-model", "stopReason": "endTurn"}),
    );
    let params = &request["params"];
    assert_eq!(
        params["messages"][0]["content"]["text"], "What is 2+2?",
        "{request}"
    );
    assert_eq!(params["maxTokens"], 100);
    assert!(
        params["_meta"]["corral/warning"]
            .as_str()
            .is_some_and(|w| w.contains("plugin")),
        "{request}"
    );
    assert_eq!(text(&response), "LLM response: 4");

    let (request, response) = call_answering(
        &mut mcp,
        2,
        "test_elicitation",
        json!({"message": "Who are you?\u{1b}[2J"}),
        "elicitation/create",
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    let message = request["params"]["message"].as_str().expect("message");
    assert!(
        message.starts_with("The tool `test_elicitation` (plugin `fixture_reference_tools`) asks:"),
        "{message}"
    );
    assert!(
        message.contains("Who are you?") && !message.contains('\u{1b}'),
        "{message}"
    );
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(text(&response), "Hello, Ada!");

    let (_, response) = call_answering(
        &mut mcp,
        3,
        "test_elicitation",
        json!({"message": "Who?"}),
        "elicitation/create",
        json!({"action": "decline"}),
    );
    assert_eq!(text(&response), "The user declined.");

    // An answer that does not fit the form never reaches the guest.
    let (_, response) = call_answering(
        &mut mcp,
        4,
        "test_elicitation",
        json!({"message": "Who?"}),
        "elicitation/create",
        json!({"action": "accept", "content": {"name": 5}}),
    );
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert!(
        text(&response).contains("do not fit the requested schema"),
        "{response}"
    );

    let (_, response) = call_answering(
        &mut mcp,
        5,
        "test_list_roots",
        json!({}),
        "roots/list",
        json!({"roots": [{"uri": "file:///work", "name": "work"}]}),
    );
    assert_eq!(text(&response), "roots: file:///work");
}

#[test]
fn several_requests_asked_at_once_are_each_answered() {
    let caps = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let (_dir, mut mcp) = server(GRANTS, caps);
    mcp.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "test_ask_all", "arguments": {}}}));
    // All three are out before any is answered: they went together.
    let requests: Vec<serde_json::Value> = (0..3)
        .map(|_| {
            mcp.wait_for("a client request", |m| {
                m.get("id").is_some() && m["method"].as_str().is_some_and(|m| m != "tools/call")
            })
        })
        .collect();
    let mut asked = Vec::new();
    for request in requests {
        let method = request["method"].as_str().expect("method").to_string();
        let result = match method.as_str() {
            "elicitation/create" => json!({"action": "accept", "content": {"name": "Ada"}}),
            "sampling/createMessage" => json!({"role": "assistant",
                "content": {"type": "text", "text": "4"}, "model": "m"}),
            "roots/list" => json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}),
            other => panic!("unexpected request {other}"),
        };
        mcp.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
        asked.push(method);
    }
    asked.sort();
    assert_eq!(
        asked,
        ["elicitation/create", "roots/list", "sampling/createMessage"]
    );
    let response = mcp.response(1);
    assert_eq!(
        text(&response),
        "name \"Ada\"; model 4; 2 roots",
        "{response}"
    );
}

#[test]
fn without_a_grant_a_capability_or_budget_the_guest_is_told_why() {
    // No `[client]`: denied, naming the grant to add.
    let caps = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let (_dir, mut mcp) = server("version = 1\n", caps.clone());
    let response = mcp.call(1, "test_list_roots", json!({}));
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert!(
        text(&response).contains("grants no `roots = true`"),
        "{response}"
    );

    // Past the policy's tokens per request: over budget, asked of no one.
    let small = "version = 1\n[client]\nsampling = { max_tokens = 50, calls_per_call = 1 }\n";
    let (_dir, mut mcp) = server(small, caps);
    let response = mcp.call(2, "test_sampling", json!({"prompt": "hi"}));
    assert!(
        text(&response).contains("100 tokens asked; the policy allows at most 50"),
        "{response}"
    );

    // A client that declared no capability: unsupported, naming it; a tool
    // that needs sampling is refused before it runs (-32021).
    let (_dir, mut mcp) = server(GRANTS, json!({}));
    let response = mcp.call(3, "test_elicitation", json!({"message": "Who?"}));
    assert!(
        text(&response).contains("did not declare the `elicitation` capability"),
        "{response}"
    );
    let refused = mcp.call(4, "test_missing_capability", json!({}));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["sampling"].is_object(),
        "{refused}"
    );
}

#[test]
fn a_tenants_sampling_budget_runs_out_and_others_keep_theirs() {
    let policy = "version = 1\n[client]\n\
                  sampling = { max_tokens = 100, calls_per_call = 1, tokens_per_hour = 150 }\n";
    let (_dir, mut mcp) = server(policy, json!({"sampling": {}}));
    let call = |id: u64, tenant: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "test_sampling", "arguments": {"prompt": "hi"},
                          "_meta": {"corral/context": {"tenant": tenant}}}})
    };
    let model = json!({"role": "assistant", "content": {"type": "text", "text": "ok"},
                       "model": "m"});
    let answered = |mcp: &mut Stdio_, id: u64, tenant: &str| {
        mcp.send(call(id, tenant));
        let request = mcp.wait_for("sampling", |m| m["method"] == "sampling/createMessage");
        mcp.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": model.clone()}));
        mcp.response(id)
    };
    // Tenant a's first request (100 of its 150 tokens) goes to the model.
    assert_eq!(text(&answered(&mut mcp, 1, "a")), "LLM response: ok");
    // Its second cannot be paid for: over budget, and the client is not asked.
    mcp.send(call(2, "a"));
    let refused = mcp.response(2);
    assert!(
        text(&refused).contains("sampling budget of 150 per hour"),
        "{refused}"
    );
    assert!(
        mcp.backlog
            .iter()
            .all(|m| m["method"] != "sampling/createMessage"),
        "{:?}",
        mcp.backlog
    );
    // Tenant b has a budget of its own.
    assert_eq!(text(&answered(&mut mcp, 3, "b")), "LLM response: ok");
}

#[test]
fn inside_a_task_a_guests_requests_wait_for_tasks_update_each_on_its_own() {
    use super::stateless_meta;
    let policy = "version = 1\n[client]\nelicitation = true\n\
                  [tasks]\ntools = { multi_input = \"always\" }\n";
    let dir = plugin_dir_with_policies(&[(REFERENCE_TOOLS, Some(policy))]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    let caps = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let meta = stateless_meta(caps);
    let created = mcp.request(
        1,
        "tools/call",
        json!({"name": "multi_input", "arguments": {}, "_meta": meta}),
    );
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_string();
    let mut next = 1;
    let mut get = |mcp: &mut Stdio_| {
        next += 1;
        mcp.request(next, "tasks/get", json!({"taskId": id, "_meta": meta}))["result"].clone()
    };
    // Both questions of the one `ask` wait at once.
    let deadline = std::time::Instant::now() + super::WAIT;
    let waiting = loop {
        let task = get(&mut mcp);
        if task["inputRequests"]
            .as_object()
            .is_some_and(|r| r.len() == 2)
        {
            break task;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never two questions: {task}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let keys: Vec<String> = waiting["inputRequests"]
        .as_object()
        .expect("requests")
        .keys()
        .cloned()
        .collect();
    let first = &waiting["inputRequests"][&keys[0]];
    assert_eq!(first["method"], "elicitation/create", "{waiting}");
    assert!(
        first["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("asks:")),
        "{waiting}"
    );
    let update = |mcp: &mut Stdio_, id_n: u64, key: &str, name: &str| {
        mcp.request(id_n, "tasks/update", json!({"taskId": id, "_meta": meta,
            "inputResponses": {key: {"action": "accept", "content": {"name": name, "confirm": true}}}}))
    };
    let ack = update(&mut mcp, 100, &keys[0], "one");
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    // One answered, the other still waiting.
    let deadline = std::time::Instant::now() + super::WAIT;
    loop {
        let task = get(&mut mcp);
        let left: Vec<&String> = task["inputRequests"]
            .as_object()
            .map(|r| r.keys().collect())
            .unwrap_or_default();
        if left == [&keys[1]] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the first answer never landed: {task}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    update(&mut mcp, 101, &keys[1], "two");
    let deadline = std::time::Instant::now() + super::WAIT;
    let done = loop {
        let task = get(&mut mcp);
        if task["status"] == "completed" {
            break task;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never completed: {task}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        done["result"]["content"][0]["text"], "entries: one, two",
        "{done}"
    );
}
