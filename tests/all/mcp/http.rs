//! MCP over streamable HTTP: the host, origin and token checks, calls and
//! metrics, the warning beyond loopback, and graceful shutdown.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use super::{cache_dir, corral_bin};
use crate::support::{HOSTILE, plugin_dir};

/// `corral serve --http 127.0.0.1:0`, and the address it printed.
pub(crate) struct HttpServer {
    pub(crate) child: Child,
    pub(crate) addr: String,
}

impl HttpServer {
    /// A server on `dir` that does not watch it (`--no-watch`).
    pub(crate) fn start(dir: &Path, args: &[&str]) -> Self {
        Self::spawn(dir, false, args)
    }

    /// A server on `dir` that watches it and reloads, as `corral serve`
    /// does by default.
    pub(crate) fn start_watching(dir: &Path, args: &[&str]) -> Self {
        Self::spawn(dir, true, args)
    }

    fn spawn(dir: &Path, watch: bool, args: &[&str]) -> Self {
        let mut child = spawn_http_server(dir, "127.0.0.1:0", watch, args);
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

    /// Opens an MCP session (`initialize`, `notifications/initialized`) and
    /// returns the headers its requests carry.
    pub(crate) fn session(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("Content-Type", "application/json".to_string()),
            ("Accept", "application/json, text/event-stream".to_string()),
        ];
        let borrowed: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, head, body) =
            self.exchange("POST", "/mcp", &borrowed, &initialize_message().to_string());
        assert_eq!(status, 200, "{body}");
        assert_eq!(message_of(&body)["result"]["serverInfo"]["name"], "corral");
        headers.push(("Mcp-Session-Id", session_id(&head)));
        headers.push(("MCP-Protocol-Version", "2025-06-18".to_string()));
        let borrowed: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, _) = self.exchange("POST", "/mcp", &borrowed, &initialized.to_string());
        assert_eq!(status, 202);
        headers
    }

    /// One request of the session with `headers` (from
    /// [`session`](Self::session)); returns the JSON-RPC response.
    pub(crate) fn request(&self, headers: &[(&'static str, String)], message: &Value) -> Value {
        let borrowed: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, _, body) = self.exchange("POST", "/mcp", &borrowed, &message.to_string());
        assert_eq!(status, 200, "{body}");
        message_of(&body)
    }

    /// The value of the metric line starting with `name ` in `/metrics`.
    pub(crate) fn metric(&self, name: &str) -> f64 {
        let (status, metrics) = self.send("GET", "/metrics", &[], "");
        assert_eq!(status, 200, "{metrics}");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{metrics}"))
    }

    /// Reads `name` from `/metrics` until it equals `want` or
    /// [`WAIT`](super::WAIT) passes; returns the last value read.
    pub(crate) fn metric_settles(&self, name: &str, want: f64) -> f64 {
        let deadline = std::time::Instant::now() + super::WAIT;
        loop {
            let now = self.metric(name);
            if now == want || std::time::Instant::now() > deadline {
                return now;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// One HTTP/1.1 request; returns status and body.
    pub(crate) fn send(
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
    pub(crate) fn exchange(
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

/// `corral serve --http ADDR ARGS...` on `dir` (with `--no-watch` unless
/// `watch`), its stderr piped.
fn spawn_http_server(dir: &Path, addr: &str, watch: bool, args: &[&str]) -> std::process::Child {
    Command::new(corral_bin())
        .arg("--plugins")
        .arg(dir)
        .arg("--cache-dir")
        .arg(cache_dir())
        .arg("serve")
        .args((!watch).then_some("--no-watch"))
        .args(["--http", addr])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// What `corral serve --http ADDR ARGS...` prints on stderr before it serves.
fn stderr_before_serving(dir: &Path, addr: &str, args: &[&str]) -> Vec<String> {
    let mut child = spawn_http_server(dir, addr, false, args);
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
pub(crate) fn session_id(head: &str) -> String {
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
pub(crate) fn message_of(body: &str) -> Value {
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
    let session = server.session();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "over http"}}});
    let response = server.request(&session, &call);
    assert_eq!(
        response["result"]["structuredContent"]["echo"], "over http",
        "{response}"
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
    // The tool's health gauge: 1 is UP after one successful call.
    assert!(
        metrics.contains("corral_tool_health_status{tool=\"echo\"} 1"),
        "{metrics}"
    );

    // Names no tool has share one label: callers cannot grow the metrics.
    for (id, name) in [(3, "made_up_1"), (4, "made_up_2")] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": {}}});
        server.request(&session, &call);
        let plan = json!({"jsonrpc": "2.0", "id": id + 10, "method": "tools/call",
            "params": {"name": "execute_tool_plan", "arguments": {"steps": [
                {"id": "a", "tool": name, "arguments": {}}]}}});
        server.request(&session, &plan);
    }
    let (_, metrics) = server.send("GET", "/metrics", &[], "");
    assert!(!metrics.contains("made_up"), "{metrics}");
}

/// Each session's `list_changed` listener ends with its session. Before,
/// it lived until the next reload, holding the session's outgoing channel:
/// a server that saw many sessions and no reload grew without bound (found
/// by the `mcp_messages` fuzz target).
#[test]
fn http_sessions_leave_no_listener_behind() {
    let dir = plugin_dir(&[HOSTILE]);
    let server = HttpServer::start(dir.path(), &[]);
    let sessions: Vec<_> = (0..5).map(|_| server.session()).collect();
    assert_eq!(server.metric_settles("corral_change_subscribers", 5.0), 5.0);
    for headers in &sessions {
        let borrowed: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = server.send("DELETE", "/mcp", &borrowed, "");
        assert!(
            (200..300).contains(&status),
            "DELETE answered {status}: {body}"
        );
    }
    assert_eq!(
        server.metric_settles("corral_change_subscribers", 0.0),
        0.0,
        "closed sessions' list_changed listeners are still alive"
    );
}

#[test]
fn http_shutdown_lets_a_call_in_flight_finish() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut server = HttpServer::start(dir.path(), &[]);
    let session = server.session();

    // The call streams a progress notification, then sleeps 1.5 s.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"ms": 1500}, "_meta": {"progressToken": "p"}}})
    .to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        server.addr,
        body.len()
    );
    for (k, v) in &session {
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

#[test]
fn a_gate_no_one_can_decide_is_http_400_missing_capability() {
    let dir = plugin_dir(&[HOSTILE]);
    let server = HttpServer::start(dir.path(), &[]);
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "gated", "arguments": {"message": "x"},
        "_meta": super::stateless_meta(json!({}))}});
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "gated"),
    ];
    let (status, body) = server.send("POST", "/mcp", &headers, &message.to_string());
    // MCP: a request that needs a capability the client did not declare.
    assert_eq!(status, 400, "{body}");
    let response = message_of(&body);
    assert_eq!(response["error"]["code"], -32021, "{response}");
    assert_eq!(
        response["error"]["data"]["requiredCapabilities"]["elicitation"],
        json!({}),
        "{response}"
    );
}
