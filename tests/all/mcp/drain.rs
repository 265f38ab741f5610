//! `corral serve --http` under an orchestrator: the probes `/healthz` and
//! `/readyz` (no token, counts only), and the drain on SIGTERM: unready,
//! a lame-duck delay that still serves, then `503` with `Retry-After` to new
//! requests, notification streams closed, the calls in flight finished
//! within the grace period, exit 0 (1 when the grace period or a second
//! signal cut a call off).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

use super::WAIT;
use super::http::{HttpServer, message_of};
use crate::support::{HOSTILE, plugin_dir, pool};

/// Sends `signal` (`TERM`, `KILL`) to the server.
fn signal(server: &HttpServer, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &server.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// Opens a connection and sends one request of the session; the response is
/// read from the returned stream.
fn open(
    server: &HttpServer,
    method: &str,
    session: &[(&'static str, String)],
    body: &str,
) -> TcpStream {
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        server.addr,
        body.len()
    );
    for (k, v) in session {
        if method == "GET" && k.eq_ignore_ascii_case("accept") {
            request.push_str("Accept: text/event-stream\r\n");
        } else {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = TcpStream::connect(&server.addr).expect("connect");
    stream.write_all(request.as_bytes()).expect("write");
    stream
}

/// Reads from `stream` until what was read contains `needle`.
fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&received).contains(needle) {
        let n = stream.read(&mut buf).expect("read");
        assert!(
            n > 0,
            "stream ended before `{needle}`: {}",
            String::from_utf8_lossy(&received)
        );
        received.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&received).into_owned()
}

/// Reads the rest of `stream`.
fn rest(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    // A reset after a cut-off call is an end too.
    let _ = stream.read_to_end(&mut received);
    String::from_utf8_lossy(&received).into_owned()
}

/// Starts `sleep` for `ms` with a progress token, and returns once the guest
/// runs (its progress notification arrived).
fn sleeping_call(server: &HttpServer, session: &[(&'static str, String)], ms: u64) -> TcpStream {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"ms": ms}, "_meta": {"progressToken": "p"}}});
    let mut stream = open(server, "POST", session, &body.to_string());
    read_until(&mut stream, "notifications/progress");
    stream
}

/// `/readyz` as (status, body), until `want` holds (the signal is handled
/// asynchronously), at most [`WAIT`].
fn readyz_until(server: &HttpServer, want: impl Fn(u16) -> bool) -> (u16, Value) {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = server.send("GET", "/readyz", &[], "");
        if want(status) || Instant::now() > deadline {
            let body = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
            return (status, body);
        }
        std::thread::yield_now();
    }
}

#[test]
fn probes_answer_without_the_token_and_say_only_counts() {
    let dir = plugin_dir(&[HOSTILE]);
    let secrets = tempfile::tempdir().expect("dir");
    let token = secrets.path().join("token");
    std::fs::write(&token, "s3cret\n").expect("token");
    let server = HttpServer::start(
        dir.path(),
        &["--token-file", token.to_str().expect("utf-8")],
    );

    let (status, body) = server.send("GET", "/healthz", &[], "");
    assert_eq!((status, body.trim()), (200, r#"{"status":"alive"}"#));

    let (status, body) = server.send("GET", "/readyz", &[], "");
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(ready["ready"], true, "{ready}");
    assert_eq!(ready["draining"], false, "{ready}");
    assert_eq!(ready["plugins_pending"], 0, "{ready}");
    // No call yet: every tool UNKNOWN, and so the whole.
    assert_eq!(ready["status"], "UNKNOWN", "{ready}");
    let unknown = ready["tools"]["unknown"].as_u64().expect("a count");
    assert!(unknown >= 5, "{ready}");
    assert_eq!(ready["tools"]["up"], 0, "{ready}");
    // Counts only: no tool's name.
    for name in ["echo", "sleep", "spin", "fixture_hostile"] {
        assert!(!body.contains(name), "{name} in {body}");
    }

    // The probes answer a Host header the MCP endpoint refuses (a kubelet
    // probes the pod's address), while /mcp and /metrics still want the token.
    let foreign = [("Host", "10.1.2.3:8080")];
    assert_eq!(server.send("GET", "/healthz", &foreign, "").0, 200);
    assert_eq!(server.send("GET", "/readyz", &foreign, "").0, 200);
    assert_eq!(server.send("GET", "/metrics", &[], "").0, 401);
    assert_eq!(server.send("POST", "/mcp", &[], "{}").0, 401);
    let auth = [
        ("Host", "10.1.2.3:8080"),
        ("Authorization", "Bearer s3cret"),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    assert_eq!(server.send("POST", "/mcp", &auth, "{}").0, 403);
}

/// Readiness is false while a plugin is still compiling (`corral serve`
/// serves the cached plugins at once and compiles the others in the
/// background), and true once it is served. In process, on one thread: the
/// background compile cannot finish before the test first waits for it.
#[tokio::test]
async fn readiness_waits_for_the_plugins_still_compiling() {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    let cold = tempfile::tempdir().expect("an empty cache");
    let dir = plugin_dir(&[HOSTILE]);
    let host = corral::Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(corral::ComponentCache::in_dir(cold.path()))
        .serve_while_compiling(true)
        .build()
        .await
        .expect("host");
    let mut changes = host.subscribe();
    let app = corral_mcp::http::router(
        corral_mcp::McpServer::new(host.clone()),
        &corral_mcp::http::HttpOptions::default(),
        None,
        tokio_util::sync::CancellationToken::new(),
        corral_mcp::ops::Drain::new(),
    );
    let readyz = || async {
        let request = http::Request::get("/readyz")
            .body(String::new())
            .expect("request");
        let response = app.clone().oneshot(request).await.expect("infallible");
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.expect("body");
        let body: Value = serde_json::from_slice(&body.to_bytes()).expect("JSON");
        (status, body)
    };

    let (status, body) = readyz().await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["ready"], false, "{body}");
    assert_eq!(body["draining"], false, "{body}");
    assert_eq!(body["plugins_pending"], 1, "{body}");

    while !host.pending_plugins().is_empty() {
        changes
            .changed()
            .await
            .expect("the host announces the compiled plugin");
    }
    let (status, body) = readyz().await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["plugins_pending"], 0, "{body}");
}

/// SIGTERM with a call in flight and a notification stream open: unready at
/// once, new requests refused with 503 and Retry-After, the stream closed
/// while the call still runs, then the call's answer, then exit 0.
#[test]
fn sigterm_refuses_new_requests_closes_streams_and_lets_the_call_finish() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut server = HttpServer::start(dir.path(), &["--drain-grace-ms", "60000"]);
    let session = server.session();
    let mut notifications = open(&server, "GET", &session, "");
    read_until(&mut notifications, "\r\n\r\n");
    // Long enough for every check below to happen while it runs.
    let mut call = sleeping_call(&server, &session, 4_000);

    signal(&server, "TERM");
    let (status, ready) = readyz_until(&server, |s| s == 503);
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["ready"], false, "{ready}");
    assert_eq!(ready["draining"], true, "{ready}");

    let list = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"});
    let borrowed: Vec<(&str, &str)> = session.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, head, body) = server.exchange("POST", "/mcp", &borrowed, &list.to_string());
    assert_eq!(status, 503, "{head}\n{body}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("\r\nretry-after: 1"), "{head}");
    assert!(head.contains("\r\nconnection: close"), "{head}");
    assert!(
        message_of(&body)["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("retry")),
        "{body}"
    );

    // The notification stream ends while the call is still in flight:
    // nothing of its answer has arrived yet (the drain's end would close
    // the stream only after the answer was sent).
    rest(&mut notifications);
    call.set_nonblocking(true).expect("nonblocking");
    let early = call.read(&mut [0u8; 1024]);
    assert!(
        matches!(&early, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the call had no answer yet when the stream closed: {early:?}"
    );
    call.set_nonblocking(false).expect("blocking");
    let answer = rest(&mut call);
    assert!(answer.contains("\"slept_ms\":4000"), "{answer}");
    let exit = server.child.wait().expect("wait");
    assert_eq!(exit.code(), Some(0), "{exit:?}");
}

/// With a drain delay, a replica that is no longer ready still serves the
/// requests a balancer sends before it notices, then exits 0.
#[test]
fn during_the_drain_delay_an_unready_replica_still_serves() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut server = HttpServer::start(dir.path(), &["--drain-delay-ms", "5000"]);
    let session = server.session();
    signal(&server, "TERM");
    let (status, ready) = readyz_until(&server, |s| s == 503);
    assert_eq!((status, &ready["draining"]), (503, &json!(true)), "{ready}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "lame duck"}}});
    let response = server.request(&session, &call);
    assert_eq!(
        response["result"]["structuredContent"]["echo"], "lame duck",
        "{response}"
    );
    let exit = server.child.wait().expect("wait");
    assert_eq!(exit.code(), Some(0), "{exit:?}");
}

/// A call longer than the grace period is cut off, and the exit status says
/// so; a second signal cuts the drain short the same way.
#[test]
fn a_call_the_drain_cuts_off_makes_the_exit_status_1() {
    let dir = plugin_dir(&[HOSTILE]);
    for (grace, signals) in [("300", 1), ("60000", 2)] {
        let mut server = HttpServer::start(dir.path(), &["--drain-grace-ms", grace]);
        let session = server.session();
        let mut call = sleeping_call(&server, &session, 30_000);
        signal(&server, "TERM");
        if signals == 2 {
            readyz_until(&server, |s| s == 503);
            signal(&server, "TERM");
        }
        let exit = server.child.wait().expect("wait");
        assert_eq!(exit.code(), Some(1), "grace {grace}, {signals} signal(s)");
        let answer = rest(&mut call);
        assert!(!answer.contains("slept_ms"), "{answer}");
    }
}

/// A refusing replica still takes what only answers it within a session:
/// the client's cancellation of its call in flight gets in (and ends the
/// call, so the drain ends without waiting for it), as would an
/// elicitation's answer; a new request in the same session, or an answer
/// without a session, is still refused.
#[test]
fn a_refusing_replica_still_takes_a_sessions_answers() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut server = HttpServer::start(dir.path(), &["--drain-grace-ms", "60000"]);
    let session = server.session();
    let borrowed: Vec<(&str, &str)> = session.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut call = sleeping_call(&server, &session, 30_000);

    signal(&server, "TERM");
    // Refusing begins right after readiness turns (no drain delay): until
    // then a request is still served.
    let list = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}).to_string();
    let deadline = Instant::now() + WAIT;
    while server.exchange("POST", "/mcp", &borrowed, &list).0 != 503 {
        assert!(Instant::now() < deadline, "the drain never began refusing");
    }

    let stray = json!({"jsonrpc": "2.0", "id": "no-such-request", "result": {}}).to_string();
    let (status, _, body) = server.exchange("POST", "/mcp", &borrowed, &stray);
    assert_eq!(status, 202, "a response to the server: {body}");
    let bare: Vec<(&str, &str)> = borrowed
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("mcp-session-id"))
        .copied()
        .collect();
    assert_eq!(
        server.exchange("POST", "/mcp", &bare, &stray).0,
        503,
        "without a session"
    );

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the agent moved on"}});
    let (status, _, body) = server.exchange("POST", "/mcp", &borrowed, &cancel.to_string());
    assert_eq!(status, 202, "the cancellation: {body}");

    // Cancelled, not finished (30 s) and not cut off (exit 1 after 60 s).
    let answer = rest(&mut call);
    assert!(!answer.contains("slept_ms"), "{answer}");
    let exit = server.child.wait().expect("wait");
    assert_eq!(exit.code(), Some(0), "{exit:?}");
}

/// A 2026-07-28 client's `subscriptions/listen` stream is a `POST` whose
/// answer lasts as long as the client listens: the drain ends it as it ends
/// a session's notification stream (so the client listens again elsewhere),
/// rather than waiting for it as a request in flight and cutting it off.
#[test]
fn a_listen_stream_ends_when_the_drain_begins() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut server = HttpServer::start(dir.path(), &["--drain-grace-ms", "60000"]);
    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
    "params": {"notifications": {"toolsListChanged": true}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "corral-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let headers = [
        ("Accept", "application/json, text/event-stream".to_string()),
        ("Content-Type", "application/json".to_string()),
        ("MCP-Protocol-Version", "2026-07-28".to_string()),
        ("Mcp-Method", "subscriptions/listen".to_string()),
    ];
    let mut stream = open(&server, "POST", &headers, &listen.to_string());
    read_until(&mut stream, "notifications/subscriptions/acknowledged");
    signal(&server, "TERM");
    // The stream ends, and nothing was cut off: the exit status is 0.
    rest(&mut stream);
    let exit = server.child.wait().expect("wait");
    assert_eq!(exit.code(), Some(0), "{exit:?}");
}
