//! A guest's requests to a 2026-07-28 (stateless) client outside a task:
//! input-required results, each round's retry running the guest again with
//! the answers so far, carried in a signed `requestState`. The state is
//! checked (forged, replayed, for another tool), a request the client did
//! not declare never goes out, an answer the client sends before it is
//! asked counts by key, an unusable one is asked again, and a tool that is
//! not safe to run again is not asked this way at all.

use serde_json::{Value, json};

use super::{Stdio_, stateless_meta};
use crate::support::{REFERENCE_TOOLS, plugin_dir_with_policies};

const GRANTS: &str = "version = 1\n[client]\nelicitation = true\nroots = true\n\
                      sampling = { max_tokens = 100, calls_per_call = 2 }\n";

/// `tools/call` of `tool` (no arguments) from a client with `caps`, with a
/// retry's `state` and `responses` when given.
fn call(tool: &str, caps: &Value, state: Option<&str>, responses: Option<Value>) -> Value {
    let mut params = json!({"name": tool, "arguments": {}, "_meta": stateless_meta(caps.clone())});
    if let Some(state) = state {
        params["requestState"] = json!(state);
    }
    if let Some(responses) = responses {
        params["inputResponses"] = responses;
    }
    params
}

fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[test]
fn rounds_carry_earlier_answers_and_their_state_is_checked() {
    let dir = plugin_dir_with_policies(&[(REFERENCE_TOOLS, Some(GRANTS))]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    let caps = json!({"elicitation": {}, "sampling": {}});
    let tool = "test_input_required_result_multi_round";

    // Round 1: the first question, under the guest's key, in its words.
    let first = mcp.request(1, "tools/call", call(tool, &caps, None, None))["result"].clone();
    assert_eq!(first["resultType"], "input_required", "{first}");
    let asked = &first["inputRequests"]["step1"];
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    let message = asked["params"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("The tool `test_input_required_result_multi_round` (plugin")
            && message.ends_with("Step 1: What is your name?"),
        "{first}"
    );
    let state1 = first["requestState"].as_str().expect("state").to_string();

    // Round 2: the run gets the name and asks the next question.
    let step1 = json!({"step1": accept(json!({"name": "Ada"}))});
    let second = mcp.request(
        2,
        "tools/call",
        call(tool, &caps, Some(&state1), Some(step1.clone())),
    );
    let second = &second["result"];
    assert_eq!(second["resultType"], "input_required", "{second}");
    let keys: Vec<&String> = second["inputRequests"]
        .as_object()
        .expect("requests")
        .keys()
        .collect();
    assert_eq!(keys, ["step2"], "{second}");
    let state2 = second["requestState"].as_str().expect("state").to_string();
    assert_ne!(state1, state2);

    // A state used once is spent; a state altered is refused; a state of
    // this call is not good for another tool.
    let replay = mcp.request(
        3,
        "tools/call",
        call(tool, &caps, Some(&state1), Some(step1)),
    );
    assert!(
        str_of(&replay["error"]["message"]).contains("already used"),
        "{replay}"
    );
    let step2 = json!({"step2": accept(json!({"color": "blue"}))});
    let mut forged: Vec<char> = state2.chars().collect();
    let at = forged.len() / 2;
    forged[at] = if forged[at] == 'A' { 'B' } else { 'A' };
    let forged: String = forged.into_iter().collect();
    let refused = mcp.request(
        4,
        "tools/call",
        call(tool, &caps, Some(&forged), Some(step2.clone())),
    );
    assert!(
        str_of(&refused["error"]["message"]).contains("not one this server issued"),
        "{refused}"
    );
    let other = "test_input_required_result_elicitation";
    let elsewhere = mcp.request(
        5,
        "tools/call",
        call(other, &caps, Some(&state2), Some(step2.clone())),
    );
    assert!(
        str_of(&elsewhere["error"]["message"]).contains("another tool"),
        "{elsewhere}"
    );

    // Round 3: step 1's answer comes from the state, step 2's from the retry.
    let done = mcp.request(
        6,
        "tools/call",
        call(tool, &caps, Some(&state2), Some(step2)),
    );
    assert_eq!(
        done["result"]["content"][0]["text"], "Ada likes blue",
        "{done}"
    );

    // An answer sent before it is asked counts by its key; one that is not
    // an elicitation result is asked for again.
    let early = json!({"user_name": accept(json!({"name": "Cy"})), "extra": accept(json!({}))});
    let done = mcp.request(7, "tools/call", call(other, &caps, None, Some(early)));
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Cy!", "{done}");
    let unusable = mcp.request(
        8,
        "tools/call",
        call(other, &caps, None, Some(json!({"user_name": 12345}))),
    );
    assert_eq!(
        unusable["result"]["resultType"], "input_required",
        "{unusable}"
    );
    // An accepted answer that does not fit the form reaches the guest as a
    // failure, never as its content.
    let misfit = json!({"user_name": accept(json!({"name": 7}))});
    let failed = mcp.request(9, "tools/call", call(other, &caps, None, Some(misfit)));
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert!(
        str_of(&failed["result"]["content"][0]["text"]).contains("requested schema"),
        "{failed}"
    );
}

#[test]
fn only_declared_requests_go_out_and_several_go_in_one_round() {
    let dir = plugin_dir_with_policies(&[(REFERENCE_TOOLS, Some(GRANTS))]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    // A client that can sample but not elicit: only the sampling request
    // goes out, with the warning, and the guest hears `unsupported` for
    // the other.
    let sampling = json!({"sampling": {}});
    let tool = "test_input_required_result_capabilities";
    let asked = mcp.request(1, "tools/call", call(tool, &sampling, None, None))["result"].clone();
    let requests = asked["inputRequests"].as_object().expect("requests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["greeting"], "{asked}");
    assert_eq!(requests["greeting"]["method"], "sampling/createMessage");
    assert!(
        str_of(&requests["greeting"]["params"]["_meta"]["corral/warning"]).contains("plugin"),
        "{asked}"
    );
    let state = asked["requestState"].as_str().expect("state");
    let model = json!({"greeting": {"role": "assistant", "content": {"type": "text", "text": "hi"},
                                   "model": "m", "stopReason": "endTurn"}});
    let done = mcp.request(
        2,
        "tools/call",
        call(tool, &sampling, Some(state), Some(model)),
    );
    let said = str_of(&done["result"]["content"][0]["text"]);
    assert!(
        said.starts_with("error ") && said.contains("elicitation") && said.ends_with("; model hi"),
        "{done}"
    );

    // All three kinds in one round, each under its key.
    let all = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let tool = "test_input_required_result_multiple_inputs";
    let asked = mcp.request(3, "tools/call", call(tool, &all, None, None))["result"].clone();
    let methods: Vec<(&String, &Value)> = asked["inputRequests"]
        .as_object()
        .expect("requests")
        .iter()
        .map(|(key, request)| (key, &request["method"]))
        .collect();
    assert_eq!(
        methods,
        [
            (&"client_roots".to_string(), &json!("roots/list")),
            (&"greeting".to_string(), &json!("sampling/createMessage")),
            (&"user_name".to_string(), &json!("elicitation/create")),
        ],
        "{asked}"
    );
}

#[test]
fn a_tool_that_may_write_is_not_asked_by_a_retry() {
    let policy = format!(
        "{GRANTS}[[filesystem]]\nhost = \"data\"\nguest = \"/data\"\naccess = \"read-write\"\n"
    );
    let dir = plugin_dir_with_policies(&[(REFERENCE_TOOLS, Some(&policy))]);
    std::fs::create_dir(dir.path().join("data")).expect("data dir");
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    let caps = json!({"elicitation": {}});
    // Not idempotent, and it may write: a retry would run what it did before
    // it asked again. The call fails saying what works, and nothing is
    // written.
    let refused = mcp.request(1, "tools/call", call("remember_name", &caps, None, None));
    let result = &refused["result"];
    assert_eq!(result["isError"], true, "{refused}");
    let message = str_of(&result["content"][0]["text"]);
    assert!(
        message.contains("retry of the whole call") && message.contains("[tasks]"),
        "{refused}"
    );
    assert!(!dir.path().join("data/name").exists());
    // An answer sent before it is asked needs no retry: the tool runs once.
    let early = json!({"user_name": accept(json!({"name": "Dee"}))});
    let done = mcp.request(
        2,
        "tools/call",
        call("remember_name", &caps, None, Some(early)),
    );
    assert_eq!(
        done["result"]["content"][0]["text"], "remembered Dee",
        "{done}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("data/name")).expect("written"),
        "Dee"
    );
}

#[test]
fn a_sampling_request_is_charged_once_however_many_rounds_ask_it() {
    let policy = "version = 1\n[client]\n\
                  sampling = { max_tokens = 100, calls_per_call = 1, tokens_per_hour = 100 }\n";
    let dir = plugin_dir_with_policies(&[(REFERENCE_TOOLS, Some(policy))]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    let caps = json!({"sampling": {}});
    let tool = "test_input_required_result_sampling";
    // The request goes out once: the tenant's 100 tokens are spent on it.
    let asked = mcp.request(1, "tools/call", call(tool, &caps, None, None))["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].as_str().expect("state");
    // The retry runs the guest again, which asks again: answered from the
    // retry, not charged twice.
    let model = json!({"capital_question": {"role": "assistant", "model": "m",
                       "content": {"type": "text", "text": "Paris"}}});
    let done = mcp.request(2, "tools/call", call(tool, &caps, Some(state), Some(model)));
    assert_eq!(
        done["result"]["content"][0]["text"], "LLM response: Paris",
        "{done}"
    );
    // A new call's request finds the budget spent: refused, never sent.
    let again = mcp.request(3, "tools/call", call(tool, &caps, None, None));
    assert_eq!(again["result"]["isError"], true, "{again}");
    assert!(
        str_of(&again["result"]["content"][0]["text"]).contains("sampling budget of 100 per hour"),
        "{again}"
    );
}
