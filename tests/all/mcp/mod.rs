//! `corral serve`: MCP over stdio and streamable HTTP, spoken by a minimal
//! JSON-RPC client here (the Python `mcp` client is exercised by
//! `tests/mcp/python_client.py` in the test command): initialize, tools/list
//! with annotations and `_meta`, tools/call results and `isError`, unknown
//! tools, progress, cancellation, elicitation, list_changed, and the HTTP
//! transport's host, origin and token checks and metrics.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod client;
mod drain;
pub(crate) mod http;
mod quotas;
mod record;
mod resources;
mod rounds;
mod stdio;
mod tasks;
mod tasks_shared;

pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// The `_meta` a 2026-07-28 request carries instead of a session, from a
/// client with `capabilities`.
pub(crate) fn stateless_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "corral-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// The `corral` binary cargo built for these tests.
pub(crate) fn corral_bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_corral"))
}

pub(crate) fn cache_dir() -> std::path::PathBuf {
    crate::support::cache_dir()
}

/// `corral serve` over stdio, with a reader thread turning stdout lines into
/// JSON messages.
pub(crate) struct Stdio_ {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    /// Messages read while waiting for another one.
    pub(crate) backlog: Vec<Value>,
}

impl Stdio_ {
    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn start(dir: &Path, args: &[&str]) -> Self {
        Self::start_with(dir, &[], args, Stdio::null())
    }

    /// `corral <global> serve <args>`, stderr to `stderr`.
    pub(crate) fn start_with(dir: &Path, global: &[&str], args: &[&str], stderr: Stdio) -> Self {
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

    pub(crate) fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// The first message (from the backlog or the wire) that `want` accepts.
    pub(crate) fn wait_for(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
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

    pub(crate) fn response(&mut self, id: u64) -> Value {
        self.wait_for(&format!("response {id}"), |m| {
            m["id"] == id && m.get("method").is_none()
        })
    }

    pub(crate) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id)
    }

    pub(crate) fn initialize(&mut self, capabilities: Value) -> Value {
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

    pub(crate) fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
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

pub(crate) fn text(result: &Value) -> &str {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{result}"))
}
