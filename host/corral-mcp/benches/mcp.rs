//! A `tools/call` round trip of a trivial tool (`sha256` of "abc" from the
//! bundled `encode` plugin) through the MCP server, in one run:
//!
//! - `host_call`: `Host::call` directly, the floor of any transport;
//! - `mcp_stdio`: JSON-RPC over the stdio transport (an in-process pipe pair
//!   standing in for the child's stdin/stdout): serialize, frame, dispatch,
//!   call, respond, parse;
//! - `mcp_http`: one streamable-HTTP POST per call on loopback, in an
//!   initialized session, including the TCP connect and the SSE framing.
//!
//! Needs the sample tools: run `scripts/build-guests.sh` first.

#![allow(missing_docs)]

use std::io::{Read as _, Write as _};

use corral::{CallOptions, Host};
use corral_mcp::McpServer;
use corral_mcp::http::{HttpOptions, router};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// `<repository>/plugins`, where `scripts/build-guests.sh` puts the samples.
fn bundled_plugin_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins")
}

fn call_message(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "sha256", "arguments": {"text": "abc"}}})
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}})
}

/// One HTTP/1.1 request on a fresh connection; returns the raw response.
fn post(addr: &str, session: Option<&str>, body: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-06-18\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let host = runtime.block_on(async {
        Host::builder()
            .plugin_dir(bundled_plugin_dir())
            .cache(corral_test_support::cache())
            .build()
            .await
            .expect("host (run scripts/build-guests.sh first)")
    });
    let args = r#"{"text":"abc"}"#;
    let mut group = c.benchmark_group("mcp_tools_call");

    group.bench_function("host_call", |b| {
        b.to_async(&runtime).iter(|| async {
            host.call("sha256", args, &CallOptions::default())
                .await
                .expect("call")
        })
    });

    // stdio: the server on one end of two in-process pipes.
    let (mut to_server, mut from_server) = runtime.block_on(async {
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_io);
        let server = McpServer::new(host.clone());
        tokio::spawn(async move {
            let running = rmcp::serve_server(server, (server_read, server_write))
                .await
                .expect("serve");
            let _ = running.waiting().await;
        });
        let (client_read, mut client_write) = tokio::io::split(client_io);
        let mut lines = BufReader::new(client_read).lines();
        client_write
            .write_all(format!("{}\n", initialize()).as_bytes())
            .await
            .expect("write");
        lines
            .next_line()
            .await
            .expect("read")
            .expect("initialize result");
        client_write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .expect("write");
        (client_write, lines)
    });
    let mut id = 0u64;
    group.bench_function("mcp_stdio", |b| {
        b.iter(|| {
            id += 1;
            runtime.block_on(async {
                to_server
                    .write_all(format!("{}\n", call_message(id)).as_bytes())
                    .await
                    .expect("write");
                let line = from_server.next_line().await.expect("read").expect("line");
                assert!(line.contains("ba7816bf"), "{line}");
            })
        })
    });

    // HTTP: the axum router on loopback.
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let app = router(
            McpServer::new(host.clone()),
            &HttpOptions::default(),
            None,
            tokio_util::sync::CancellationToken::new(),
            corral_mcp::ops::Drain::new(),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    });
    let response = post(&addr, None, &initialize().to_string());
    let session = response
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                .map(|(_, v)| v.trim().to_string())
        })
        .expect("session id");
    post(
        &addr,
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    group.bench_function("mcp_http", |b| {
        b.iter(|| {
            id += 1;
            let response = post(&addr, Some(&session), &call_message(id).to_string());
            assert!(response.contains("ba7816bf"), "{response}");
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
