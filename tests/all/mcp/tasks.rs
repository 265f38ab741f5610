//! MCP tasks (SEP-2663) over stdio, from a minimal 2026-07-28 client: which
//! calls become tasks, `tasks/get` until the end, `tasks/cancel` of a
//! spinning guest, an approval answered with `tasks/update`, tenants that
//! cannot see each other's tasks, the per-tenant cap and the capability
//! checks.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Stdio_, WAIT, stateless_meta, text};
use crate::support::{HOSTILE, plugin_dir_with_policies};

/// The answer that allows a call.
fn allow() -> Value {
    json!({"action": "accept", "content": {"decision": "allow"}})
}

/// A client that takes tasks and answers elicitations.
fn tasks_client() -> Value {
    json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// `_meta` of a request from `tenant` (none: no context) with `capabilities`.
fn meta(capabilities: Value, tenant: Option<&str>) -> Value {
    let mut meta = stateless_meta(capabilities);
    if let Some(tenant) = tenant {
        meta["corral/context"] = json!({"tenant": tenant});
    }
    meta
}

/// A server over the hostile fixture whose `spin` and `gated` are always
/// tasks, with effectively unlimited fuel and time (a cancel stops `spin`).
fn server(extra: &[&str]) -> (tempfile::TempDir, Stdio_) {
    let policy = "version = 1\n[tasks]\n\
                  tools = { spin = \"always\", gated = \"always\", ask = \"always\", echo = \"never\", \
                  panic = \"always\", fail = \"always\" }\n";
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(policy))]);
    let mut args = vec!["--no-watch"];
    args.extend_from_slice(extra);
    let mcp = Stdio_::start_with(
        dir.path(),
        &["--fuel", "100000000000000", "--timeout-ms", "600000"],
        &args,
        std::process::Stdio::null(),
    );
    (dir, mcp)
}

struct Client {
    mcp: Stdio_,
    next: u64,
}

impl Client {
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        self.mcp.request(self.next, method, params)
    }

    fn call(&mut self, tool: &str, arguments: Value, meta: Value) -> Value {
        self.request(
            "tools/call",
            json!({"name": tool, "arguments": arguments, "_meta": meta}),
        )
    }

    /// `tasks/update` of task `id` (no tenant) answering `key` with `answer`.
    fn answer(&mut self, id: &str, key: &str, answer: Value) -> Value {
        self.request(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {key: answer},
                   "_meta": meta(tasks_client(), None)}),
        )
    }

    /// `tasks/get` as `tenant` until the task's status is one of `want`,
    /// waiting the server's `pollIntervalMs` between polls.
    fn poll(&mut self, id: &str, tenant: Option<&str>, want: &[&str]) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let got = self.request(
                "tasks/get",
                json!({"taskId": id, "_meta": meta(tasks_client(), tenant)}),
            );
            let status = got["result"]["status"].as_str().unwrap_or_default();
            if want.contains(&status) {
                return got["result"].clone();
            }
            assert!(
                ["working", "input_required"].contains(&status),
                "unexpected task state: {got}"
            );
            assert!(
                Instant::now() < deadline,
                "task never reached {want:?}: {got}"
            );
            let interval = got["result"]["pollIntervalMs"].as_u64().unwrap_or(100);
            std::thread::sleep(Duration::from_millis(interval));
        }
    }
}

fn created(response: &Value) -> String {
    let result = &response["result"];
    assert_eq!(result["resultType"], "task", "{response}");
    assert_eq!(result["status"], "working", "{response}");
    assert!(
        result["ttlMs"].as_u64().is_some_and(|t| t > 0),
        "{response}"
    );
    let id = result["taskId"].as_str().expect("taskId").to_owned();
    assert_eq!(id.len(), 32, "128 random bits in hex: {id}");
    id
}

#[test]
fn slow_calls_become_tasks_and_fast_ones_answer_in_line() {
    let (_dir, mcp) = server(&[]);
    let mut client = Client { mcp, next: 0 };
    // `sleep` is latency "slow": a task for a client that takes them.
    let response = client.call("sleep", json!({"ms": 200}), meta(tasks_client(), None));
    let id = created(&response);
    let done = client.poll(&id, None, &["completed"]);
    assert_eq!(
        done["result"]["structuredContent"]["slept_ms"], 200,
        "{done}"
    );
    assert_eq!(done["result"]["isError"], false, "{done}");

    // The policy says never for `echo`; and a client without the
    // extension always waits for its result.
    let echo = client.call("echo", json!({"text": "hi"}), meta(tasks_client(), None));
    assert_eq!(echo["result"]["structuredContent"]["echo"], "hi", "{echo}");
    let plain = json!({"elicitation": {"form": {}}});
    let waited = client.call("sleep", json!({"ms": 1}), meta(plain.clone(), None));
    assert_eq!(
        waited["result"]["structuredContent"]["slept_ms"], 1,
        "{waited}"
    );

    // Task methods from a client that did not declare the extension:
    // -32021, the missing capability named (SEP-2663).
    let refused = client.request(
        "tasks/get",
        json!({"taskId": id, "_meta": meta(plain, None)}),
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

#[test]
fn a_crashed_guest_fails_its_task_and_a_tool_error_completes_it() {
    let (_dir, mcp) = server(&[]);
    let mut client = Client { mcp, next: 0 };
    // A panic traps the guest: no result of the tool, so the task is
    // `failed` with a JSON-RPC error and no `result` (SEP-2663).
    let crashed = client.call(
        "panic",
        json!({"message": "boom\u{1b}[31m"}),
        meta(tasks_client(), None),
    );
    let id = created(&crashed);
    let failed = client.poll(&id, None, &["failed", "completed"]);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert_eq!(
        failed["error"]["data"]["corral/errorKind"], "trapped",
        "{failed}"
    );
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("crashed") && message.contains("boom"),
        "{failed}"
    );
    assert!(
        !message.contains('\u{1b}'),
        "the guest's escape code reached the client: {failed}"
    );
    assert!(failed.get("result").is_none(), "{failed}");

    // The tool's own error is a result a model reads: `completed`, isError.
    let reported = client.call("fail", json!({"message": "no"}), meta(tasks_client(), None));
    let id = created(&reported);
    let done = client.poll(&id, None, &["failed", "completed"]);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(done.get("error").is_none(), "{done}");
}

#[test]
fn a_cancel_stops_a_spinning_guest() {
    let (_dir, mcp) = server(&[]);
    let mut client = Client { mcp, next: 0 };
    let id = created(&client.call("spin", json!({}), meta(tasks_client(), None)));
    let working = client.poll(&id, None, &["working"]);
    assert_eq!(working["taskId"], id);
    let ack = client.request(
        "tasks/cancel",
        json!({"taskId": id, "_meta": meta(tasks_client(), None)}),
    );
    assert!(ack.get("error").is_none(), "{ack}");
    // Only the cancel can end a guest with this much fuel and time.
    let cancelled = client.poll(&id, None, &["cancelled"]);
    assert!(cancelled.get("result").is_none(), "{cancelled}");
    // A second cancel of an ended task is acknowledged and changes nothing.
    let again = client.request(
        "tasks/cancel",
        json!({"taskId": id, "_meta": meta(tasks_client(), None)}),
    );
    assert!(again.get("error").is_none(), "{again}");
    assert_eq!(
        client.poll(&id, None, &["cancelled"])["status"],
        "cancelled"
    );
    // The server still serves.
    let echo = client.call("echo", json!({"text": "after"}), meta(tasks_client(), None));
    assert_eq!(echo["result"]["structuredContent"]["echo"], "after");
}

#[test]
fn a_question_inside_a_task_is_answered_with_tasks_update() {
    let (_dir, mcp) = server(&[]);
    let mut client = Client { mcp, next: 0 };
    // `ask` asks mid-call (request-approval): the task waits for the client.
    let id = created(&client.call(
        "ask",
        json!({"message": "wipe"}),
        meta(tasks_client(), None),
    ));
    let asking = client.poll(&id, None, &["input_required"]);
    let question = &asking["inputRequests"]["approval-1"];
    assert_eq!(question["method"], "elicitation/create", "{asking}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("wipe"),
        "{asking}"
    );
    // An answer to a key the task never asked is ignored.
    let answer = allow();
    let ack = client.request(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"approval-1": answer, "other": {}},
               "_meta": meta(tasks_client(), None)}),
    );
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let done = client.poll(&id, None, &["completed"]);
    assert_eq!(
        done["result"]["structuredContent"]["decision"], "continue",
        "{done}"
    );

    // A decline ends the call with the reason, as a completed task whose
    // result is an error (SEP-2663: tool errors are `completed`).
    let id = created(&client.call("ask", json!({"message": "x"}), meta(tasks_client(), None)));
    client.poll(&id, None, &["input_required"]);
    client.answer(&id, "approval-1", json!({"action": "decline"}));
    let done = client.poll(&id, None, &["completed"]);
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(text(&done).contains("declined"), "{done}");
}

#[test]
fn a_declared_gate_is_asked_before_the_task_and_its_retry_becomes_the_task() {
    let (_dir, mcp) = server(&[]);
    let mut client = Client { mcp, next: 0 };
    let asked = client.call(
        "gated",
        json!({"message": "wipe"}),
        meta(tasks_client(), None),
    );
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert!(result.get("taskId").is_none(), "{asked}");
    let state = result["requestState"].as_str().expect("requestState");
    let answer =
        json!({"action": "accept", "content": {"decision": "edit", "edit.message": "tidy"}});
    let retry = client.request(
        "tools/call",
        json!({"name": "gated", "arguments": {"message": "wipe"}, "requestState": state,
               "inputResponses": {"approval": answer}, "_meta": meta(tasks_client(), None)}),
    );
    assert!(retry["result"].get("requestState").is_none(), "{retry}");
    let id = created(&retry);
    let done = client.poll(&id, None, &["completed"]);
    assert_eq!(
        done["result"]["structuredContent"]["message"], "tidy",
        "{done}"
    );
}

#[test]
fn a_tool_that_requires_tasks_refuses_a_client_without_them() {
    let policy = "version = 1\n[tasks]\nmode = \"required\"\n";
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(policy))]);
    let mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    let mut client = Client { mcp, next: 0 };
    let plain = json!({"elicitation": {"form": {}}});
    let refused = client.call("echo", json!({"text": "hi"}), meta(plain, None));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}}),
        "{refused}"
    );
    let id = created(&client.call("echo", json!({"text": "hi"}), meta(tasks_client(), None)));
    let done = client.poll(&id, None, &["completed"]);
    assert_eq!(done["result"]["structuredContent"]["echo"], "hi", "{done}");
}

#[test]
fn a_tenant_sees_only_its_own_tasks_and_runs_at_most_its_cap() {
    let (_dir, mcp) = server(&["--max-tasks-per-tenant", "1"]);
    let mut client = Client { mcp, next: 0 };
    let id = created(&client.call("spin", json!({}), meta(tasks_client(), Some("acme"))));
    for method in ["tasks/get", "tasks/cancel"] {
        for tenant in [Some("globex"), None] {
            let other = client.request(
                method,
                json!({"taskId": id, "_meta": meta(tasks_client(), tenant)}),
            );
            assert_eq!(
                other["error"]["code"], -32602,
                "{method} as {tenant:?}: {other}"
            );
            assert!(
                other["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("no task"),
                "{other}"
            );
        }
    }
    // The same answer as for an id that never existed.
    let never = client.request(
        "tasks/get",
        json!({"taskId": "00".repeat(16), "_meta": meta(tasks_client(), Some("acme"))}),
    );
    assert_eq!(never["error"]["code"], -32602, "{never}");
    // acme's one slot is taken; globex still has its own.
    let second = client.call("spin", json!({}), meta(tasks_client(), Some("acme")));
    assert!(
        second["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("already runs 1 tasks"),
        "{second}"
    );
    let theirs = created(&client.call("spin", json!({}), meta(tasks_client(), Some("globex"))));
    // The spinning task is still acme's, untouched by the others' attempts.
    assert_eq!(client.poll(&id, Some("acme"), &["working"])["taskId"], id);
    for (task, tenant) in [(&id, "acme"), (&theirs, "globex")] {
        client.request(
            "tasks/cancel",
            json!({"taskId": task, "_meta": meta(tasks_client(), Some(tenant))}),
        );
        client.poll(task, Some(tenant), &["cancelled"]);
    }
    // The slot is free again once the task ended.
    let again = created(&client.call("spin", json!({}), meta(tasks_client(), Some("acme"))));
    client.request(
        "tasks/cancel",
        json!({"taskId": again, "_meta": meta(tasks_client(), Some("acme"))}),
    );
}

#[test]
fn a_script_runs_as_a_task_and_its_gated_call_is_answered_inside_it() {
    let (_dir, mcp) = server(&[]);
    let mut client = Client { mcp, next: 0 };
    // `execute_code` is `when_slow` (its calls add up): a task. Its gated
    // call asks through the task, so the script waits in place instead of
    // stopping for a retry with a journal.
    let code = "const r = await tools.gated({message: 'in a task'}); return r.message;";
    let id = created(&client.call(
        "execute_code",
        json!({"code": code}),
        meta(tasks_client(), None),
    ));
    let asking = client.poll(&id, None, &["input_required"]);
    let question = &asking["inputRequests"]["approval-1"];
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("gated"),
        "{asking}"
    );
    client.answer(&id, "approval-1", allow());
    let done = client.poll(&id, None, &["completed"]);
    let out: Value = serde_json::from_str(text(&done)).expect("the run's JSON");
    assert_eq!(out["result"], "in a task", "{done}");
}

#[test]
fn two_questions_of_a_script_wait_in_the_task_at_once() {
    let (_dir, mcp) = server(&[]);
    let mut client = Client { mcp, next: 0 };
    let code = "const [a, b] = await tools.parallel([['gated', {message: 'a'}], \
                ['gated', {message: 'b'}]]); return [a.message, b.message];";
    let id = created(&client.call(
        "execute_code",
        json!({"code": code}),
        meta(tasks_client(), None),
    ));
    // Both gated calls of the wave ask; both questions are outstanding.
    let deadline = Instant::now() + WAIT;
    let both = loop {
        let asking = client.poll(&id, None, &["input_required"]);
        let keys = asking["inputRequests"]
            .as_object()
            .map_or(0, serde_json::Map::len);
        if keys == 2 {
            break asking;
        }
        assert!(
            Instant::now() < deadline,
            "never two questions at once: {asking}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let keys: Vec<String> = both["inputRequests"]
        .as_object()
        .expect("map")
        .keys()
        .cloned()
        .collect();
    client.answer(&id, &keys[0], allow());
    // The answered question goes; the other still waits.
    loop {
        let now = client.poll(&id, None, &["input_required"]);
        let left: Vec<&String> = now["inputRequests"]
            .as_object()
            .expect("map")
            .keys()
            .collect();
        if left == [&keys[1]] {
            break;
        }
        assert!(Instant::now() < deadline, "still {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    client.answer(&id, &keys[1], allow());
    let done = client.poll(&id, None, &["completed"]);
    let out: Value = serde_json::from_str(text(&done)).expect("the run's JSON");
    assert_eq!(out["result"], json!(["a", "b"]), "{done}");
}

#[test]
fn a_plan_run_as_a_task_asks_for_its_gated_step_inside_it() {
    let (_dir, mcp) = server(&[]);
    let mut client = Client { mcp, next: 0 };
    // Under the in-line 2026-07-28 flow a plan's gated step cannot wait for
    // a retry (it fails `approval_pending`); in a task it waits in place.
    let plan = json!({"steps": [
        {"id": "s1", "tool": "echo", "arguments": {"text": "first"}},
        {"id": "s2", "tool": "gated", "arguments": {"message": "$ref:s1.echo"}}
    ]});
    let id = created(&client.call("execute_tool_plan", plan, meta(tasks_client(), None)));
    let asking = client.poll(&id, None, &["input_required"]);
    let question = asking["inputRequests"]["approval-1"]["params"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        question.contains("gated") && question.contains("first"),
        "{asking}"
    );
    client.answer(&id, "approval-1", allow());
    let done = client.poll(&id, None, &["completed"]);
    let out: Value = serde_json::from_str(text(&done)).expect("the plan's JSON");
    assert_eq!(out["status"], "succeeded", "{done}");
    let s2 = out["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["id"] == "s2"))
        .expect("step s2");
    assert_eq!(s2["output"]["message"], "first", "{done}");
}
