//! Replicas that share a real Redis (`--store redis://`): a task started on
//! one replica is read, answered and cancelled on another; a replica killed
//! during a task leaves it `failed` once its lease passes; an unreachable
//! Redis refuses new tasks and nothing else; an approval's request state
//! used on one replica is refused on another.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::WAIT;
use super::http::{HttpServer, message_of};
use crate::support::{HOSTILE, RedisServer, plugin_dir_with_policies};

const POLICY: &str = "version = 1\n[tasks]\ntools = { spin = \"always\", ask = \"always\" }\n";

/// A 2026-07-28 request to `server`, with the routing headers SEP-2575 asks
/// for; returns the HTTP status and the JSON-RPC response.
fn rpc(server: &HttpServer, method: &str, params: Value) -> (u16, Value) {
    let name = params
        .get("taskId")
        .or_else(|| params.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut params = params;
    params["_meta"] = super::stateless_meta(json!({
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    }));
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name.as_str()),
    ];
    let (status, body) = server.send("POST", "/mcp", &headers, &message.to_string());
    (status, message_of(&body))
}

/// `tasks/get` on `server` until the status is one of `want`.
fn poll(server: &HttpServer, id: &str, want: &[&str]) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, got) = rpc(server, "tasks/get", json!({"taskId": id}));
        let status = got["result"]["status"].as_str().unwrap_or_default();
        if want.contains(&status) {
            return got["result"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "task never reached {want:?}: {got}"
        );
        let interval = got["result"]["pollIntervalMs"].as_u64().unwrap_or(100);
        std::thread::sleep(Duration::from_millis(interval.min(200)));
    }
}

fn replicas(redis: &str, n: usize, extra: &[&str]) -> (tempfile::TempDir, Vec<HttpServer>) {
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(POLICY))]);
    let key = dir.path().join("state.key");
    std::fs::write(&key, "k".repeat(64)).expect("state key");
    let key = key.display().to_string();
    let mut args = vec!["--store", redis, "--state-key-file", key.as_str()];
    args.extend_from_slice(extra);
    let servers = (0..n)
        .map(|_| HttpServer::start(dir.path(), &args))
        .collect();
    (dir, servers)
}

fn start_task(server: &HttpServer, tool: &str, arguments: Value) -> String {
    let (status, response) = rpc(
        server,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["result"]["resultType"], "task", "{response}");
    response["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

#[test]
fn any_replica_reads_answers_and_cancels_a_task_another_runs() {
    let redis = RedisServer::start();
    let (_dir, servers) = replicas(&redis.url(), 2, &[]);
    let (a, b) = (&servers[0], &servers[1]);

    // Answered on B, run on A.
    let id = start_task(a, "ask", json!({"message": "ship it"}));
    let asking = poll(b, &id, &["input_required"]);
    assert!(
        asking["inputRequests"]["approval-1"].is_object(),
        "{asking}"
    );
    let answer = json!({"action": "accept", "content": {"decision": "allow"}});
    let (_, ack) = rpc(
        b,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"approval-1": answer}}),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = poll(b, &id, &["completed"]);
    assert_eq!(
        done["result"]["structuredContent"]["decision"], "continue",
        "{done}"
    );

    // Cancelled on B, spinning on A (its fuel and deadline are ample).
    let id = start_task(a, "spin", json!({}));
    assert_eq!(poll(b, &id, &["working"])["taskId"], id);
    let (_, ack) = rpc(b, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert_eq!(poll(a, &id, &["cancelled"])["status"], "cancelled");
    assert_eq!(
        a.metric_settles("corral_tasks_running", 0.0),
        0.0,
        "A's runner ended with the cancel"
    );
}

#[test]
fn a_task_of_a_killed_replica_fails_once_its_lease_passes() {
    let redis = RedisServer::start();
    let (_dir, mut servers) = replicas(&redis.url(), 2, &["--task-lease-ms", "600"]);
    let id = start_task(&servers[0], "spin", json!({}));
    assert_eq!(poll(&servers[1], &id, &["working"])["status"], "working");
    let mut killed = servers.remove(0);
    killed.child.kill().expect("SIGKILL");
    killed.child.wait().expect("reaped");
    let failed = poll(&servers[0], &id, &["failed"]);
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("lease expired"),
        "{failed}"
    );
    assert!(failed.get("result").is_none(), "{failed}");
}

#[test]
fn an_unreachable_store_refuses_new_tasks_and_nothing_else() {
    // Port 9 (discard) is closed on loopback.
    let (_dir, servers) = replicas("redis://127.0.0.1:9", 1, &[]);
    let server = &servers[0];
    let (_, refused) = rpc(
        server,
        "tools/call",
        json!({"name": "spin", "arguments": {}}),
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("redis://127.0.0.1:9 is unreachable"),
        "{refused}"
    );
    let (status, echo) = rpc(
        server,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "on"}}),
    );
    assert_eq!(status, 200);
    assert_eq!(echo["result"]["structuredContent"]["echo"], "on", "{echo}");
    let (status, ready) = server.send("GET", "/readyz", &[], "");
    let ready: Value = serde_json::from_str(&ready).expect("json");
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["store"]["reachable"], false, "{ready}");
    assert!(
        ready["store"]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("new MCP tasks are refused"),
        "{ready}"
    );
}

#[test]
fn a_request_state_used_on_one_replica_is_refused_on_another() {
    let redis = RedisServer::start();
    let (_dir, servers) = replicas(&redis.url(), 2, &[]);
    let (a, b) = (&servers[0], &servers[1]);
    let call = json!({"name": "gated", "arguments": {"message": "once"}});
    let (_, asked) = rpc(a, "tools/call", call.clone());
    let state = asked["result"]["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    let mut retry = call;
    retry["requestState"] = json!(state);
    retry["inputResponses"] =
        json!({"approval": {"action": "accept", "content": {"decision": "allow"}}});
    let (_, done) = rpc(a, "tools/call", retry.clone());
    assert_eq!(
        done["result"]["structuredContent"]["message"], "once",
        "{done}"
    );
    // The same answer again, to the other replica: it shares the key, so
    // the state is genuine, and the store, so it is known as used.
    let (_, replayed) = rpc(b, "tools/call", retry);
    let message = replayed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("already used"), "{replayed}");
}
