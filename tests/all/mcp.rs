//! `corral serve`: MCP over stdio and streamable HTTP, spoken by a minimal
//! JSON-RPC client here (the Python `mcp` client is exercised by
//! `tests/mcp/python_client.py` in the test command): initialize, tools/list
//! with annotations and `_meta`, tools/call results and `isError`, unknown
//! tools, progress, cancellation, elicitation, list_changed, and the HTTP
//! transport's host, origin and token checks and metrics.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{DUP_A, HOSTILE, SAMPLES, guest, plugin_dir};

const WAIT: Duration = Duration::from_secs(60);

fn corral_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    exe.parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .join("corral")
}

fn cache_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache")
}

/// `corral serve` over stdio, with a reader thread turning stdout lines into
/// JSON messages.
struct Stdio_ {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    /// Messages read while waiting for another one.
    backlog: Vec<Value>,
}

impl Stdio_ {
    fn start(dir: &Path, args: &[&str]) -> Self {
        Self::start_with(dir, &[], args, Stdio::null())
    }

    /// `corral <global> serve <args>`, stderr to `stderr`.
    fn start_with(dir: &Path, global: &[&str], args: &[&str], stderr: Stdio) -> Self {
        let mut child = Command::new(corral_bin())
            .arg("--plugins")
            .arg(dir)
            .arg("--cache-dir")
            .arg(cache_dir())
            .arg("-v")
            .args(global)
            .arg("serve")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn corral serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC ({e}): {line}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            messages,
            backlog: Vec::new(),
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// The first message (from the backlog or the wire) that `want` accepts.
    fn wait_for(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&want) {
            return self.backlog.remove(i);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(m) if want(&m) => return m,
                Ok(m) => self.backlog.push(m),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no {what} within {WAIT:?}; saw {:?}", self.backlog)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("server exited; saw {:?}", self.backlog)
                }
            }
        }
    }

    fn response(&mut self, id: u64) -> Value {
        self.wait_for(&format!("response {id}"), |m| {
            m["id"] == id && m.get("method").is_none()
        })
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id)
    }

    fn initialize(&mut self, capabilities: Value) -> Value {
        let result = self.request(
            0,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "clientInfo": {"name": "corral-tests", "version": "0"}
            }),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        result
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }
}

impl Drop for Stdio_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(result: &Value) -> &str {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{result}"))
}

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
        json!({"files": [], "environment": [], "http": []})
    );
    // Grants name what a tool reaches; an environment value never leaves the host.
    let fetch = tool("fetch_url");
    assert_eq!(
        fetch["_meta"]["corral/grants"],
        json!({"files": [], "environment": ["API_TOKEN"], "http": ["http://127.0.0.1:9"]})
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
    assert_eq!(
        progress,
        [
            json!({"progressToken": "tok", "progress": 1.0, "message": "step 1 of 2"}),
            json!({"progressToken": "tok", "progress": 2.0, "message": "step 2 of 2"}),
        ],
        "both arrive before the result, in order"
    );
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
        message.contains("tool `gated` from plugin `fixture_hostile`"),
        "{message}"
    );
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["approve"]["type"],
        "boolean"
    );
    mcp.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"approve": false, "reason": "not today"}}}));
    let result = mcp.response(1);
    assert_eq!(result["result"]["isError"], true);
    assert_eq!(text(&result), "Error: Rejected by reviewer: not today");

    mcp.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gated", "arguments": {"message": "tidy"}}}));
    let ask = mcp.wait_for("an elicitation request", |m| {
        m["method"] == "elicitation/create"
    });
    mcp.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"approve": true}}}));
    assert_eq!(
        mcp.response(2)["result"]["structuredContent"]["message"],
        "tidy"
    );
}

#[test]
fn without_elicitation_or_a_reviewer_a_gated_call_is_refused() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    mcp.initialize(json!({}));
    let result = mcp.call(1, "gated", json!({"message": "wipe"}));
    assert_eq!(result["result"]["isError"], true);
    assert!(
        text(&result).contains("no reviewer is configured"),
        "{result}"
    );
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

/// `corral serve --http 127.0.0.1:0`, and the address it printed.
struct HttpServer {
    child: Child,
    addr: String,
}

impl HttpServer {
    fn start(dir: &Path, args: &[&str]) -> Self {
        let mut child = spawn_http_server(dir, "127.0.0.1:0", args);
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("server printed its address")
                .expect("line");
            if let Some(rest) = line.strip_prefix("corral: serving MCP at http://") {
                break rest.trim_end_matches("/mcp").to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Self { child, addr }
    }

    /// One HTTP/1.1 request; returns status and body.
    fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let (status, _, body) = self.exchange(method, path, headers, body);
        (status, body)
    }

    /// One HTTP/1.1 request; returns status, raw head and body.
    fn exchange(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String, String) {
        let mut stream = std::net::TcpStream::connect(&self.addr).expect("connect");
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            request.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {response}"));
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        (status, head.to_string(), body.to_string())
    }

    fn post_mcp(&self, extra: &[(&str, &str)], message: &Value) -> (u16, String) {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        headers.extend_from_slice(extra);
        self.send("POST", "/mcp", &headers, &message.to_string())
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize_message() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "corral-tests", "version": "0"}}})
}

/// `corral serve --no-watch --http ADDR ARGS...` on `dir`, its stderr piped.
fn spawn_http_server(dir: &Path, addr: &str, args: &[&str]) -> std::process::Child {
    Command::new(corral_bin())
        .arg("--plugins")
        .arg(dir)
        .arg("--cache-dir")
        .arg(cache_dir())
        .args(["serve", "--no-watch", "--http", addr])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// What `corral serve --http ADDR ARGS...` prints on stderr before it serves.
fn stderr_before_serving(dir: &Path, addr: &str, args: &[&str]) -> Vec<String> {
    let mut child = spawn_http_server(dir, addr, args);
    let stderr = child.stderr.take().expect("stderr");
    let mut before = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("line");
        if line.starts_with("corral: serving MCP at") {
            break;
        }
        before.push(line);
    }
    let _ = child.kill();
    let _ = child.wait();
    before
}

#[test]
fn http_beyond_loopback_without_a_token_warns() {
    let dir = plugin_dir(&[HOSTILE]);
    let warned = |lines: &[String]| lines.iter().any(|l| l.contains("without a bearer token"));
    let open = stderr_before_serving(dir.path(), "0.0.0.0:0", &[]);
    assert!(warned(&open), "{open:?}");
    let loopback = stderr_before_serving(dir.path(), "127.0.0.1:0", &[]);
    assert!(!warned(&loopback), "{loopback:?}");
    let secrets = tempfile::tempdir().expect("dir");
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, "s3cret\n").expect("token");
    let with_token = stderr_before_serving(
        dir.path(),
        "0.0.0.0:0",
        &["--token-file", token_file.to_str().expect("utf-8")],
    );
    assert!(!warned(&with_token), "{with_token:?}");
}

#[test]
fn http_checks_host_origin_and_token() {
    let dir = plugin_dir(&[HOSTILE]);
    let secrets = tempfile::tempdir().expect("dir");
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, "s3cret\n").expect("token");
    let server = HttpServer::start(
        dir.path(),
        &["--token-file", token_file.to_str().expect("utf-8")],
    );
    let auth = ("Authorization", "Bearer s3cret");

    let (status, _) = server.post_mcp(&[], &initialize_message());
    assert_eq!(status, 401, "no token");
    let (status, _) = server.post_mcp(&[("Authorization", "Bearer wrong")], &initialize_message());
    assert_eq!(status, 401, "wrong token");
    let (status, _) = server.post_mcp(&[auth, ("Host", "evil.example:80")], &initialize_message());
    assert_eq!(status, 403, "DNS rebinding: foreign Host");
    let (status, _) = server.post_mcp(
        &[auth, ("Origin", "http://evil.example")],
        &initialize_message(),
    );
    assert_eq!(status, 403, "DNS rebinding: foreign Origin");
    let (status, body) = server.post_mcp(&[auth], &initialize_message());
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"serverInfo\""), "{body}");

    let (status, _) = server.send("GET", "/metrics", &[], "");
    assert_eq!(status, 401, "metrics are behind the token too");
}

/// The `Mcp-Session-Id` header of a response head.
fn session_id(head: &str) -> String {
    head.lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id in {head}"))
}

/// The JSON-RPC message in a response body: plain JSON, or the `data:` line
/// of a server-sent event.
fn message_of(body: &str) -> Value {
    let json = body
        .lines()
        .find_map(|l| {
            l.strip_prefix("data:")
                .map(str::trim)
                .filter(|d| d.starts_with('{'))
        })
        .unwrap_or(body.trim());
    serde_json::from_str(json).unwrap_or_else(|e| panic!("not a JSON-RPC message ({e}): {body}"))
}

#[test]
fn http_serves_calls_and_counts_them_in_metrics() {
    let dir = plugin_dir(&[HOSTILE]);
    let server = HttpServer::start(dir.path(), &[]);
    let accept = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let (status, head, body) =
        server.exchange("POST", "/mcp", &accept, &initialize_message().to_string());
    assert_eq!(status, 200, "{body}");
    assert_eq!(message_of(&body)["result"]["serverInfo"]["name"], "corral");
    let session = session_id(&head);
    let mut headers = accept.to_vec();
    headers.push(("Mcp-Session-Id", &session));
    headers.push(("MCP-Protocol-Version", "2025-06-18"));
    let (status, _, _) = server.exchange(
        "POST",
        "/mcp",
        &headers,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    assert_eq!(status, 202);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "over http"}}});
    let (status, _, body) = server.exchange("POST", "/mcp", &headers, &call.to_string());
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        message_of(&body)["result"]["structuredContent"]["echo"],
        "over http"
    );

    let (status, metrics) = server.send("GET", "/metrics", &[], "");
    assert_eq!(status, 200);
    assert!(
        metrics.contains("corral_calls_total{tool=\"echo\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("corral_call_duration_seconds_bucket{tool=\"echo\""),
        "{metrics}"
    );
    assert!(
        metrics.contains("corral_fuel_consumed_total{tool=\"echo\"}"),
        "{metrics}"
    );
}

#[test]
fn http_shutdown_lets_a_call_in_flight_finish() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut server = HttpServer::start(dir.path(), &[]);
    let accept = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let (_, head, _) = server.exchange("POST", "/mcp", &accept, &initialize_message().to_string());
    let session = session_id(&head);
    let mut headers: Vec<(&str, &str)> = accept.to_vec();
    headers.push(("Mcp-Session-Id", &session));
    headers.push(("MCP-Protocol-Version", "2025-06-18"));
    server.exchange(
        "POST",
        "/mcp",
        &headers,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );

    // The call streams a progress notification, then sleeps 1.5 s.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"ms": 1500}, "_meta": {"progressToken": "p"}}})
    .to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        server.addr,
        body.len()
    );
    for (k, v) in &headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = std::net::TcpStream::connect(&server.addr).expect("connect");
    stream.write_all(request.as_bytes()).expect("write");
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&received).contains("notifications/progress") {
        let n = stream.read(&mut buf).expect("read");
        assert!(
            n > 0,
            "stream ended before progress: {}",
            String::from_utf8_lossy(&received)
        );
        received.extend_from_slice(&buf[..n]);
    }

    // The call is running inside its guest: ask the server to stop.
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    stream.read_to_end(&mut received).expect("read rest");
    let text = String::from_utf8_lossy(&received);
    assert!(
        text.contains("\"slept_ms\":1500"),
        "the call finished: {text}"
    );
    let exit = server.child.wait().expect("wait");
    assert!(exit.success(), "clean exit after SIGTERM: {exit:?}");
}
