//! The MCP transport of the load campaign: `corral serve --http` in a child
//! process, called through the official Rust SDK's client (rmcp) over
//! streamable HTTP; and, for the reload campaign, a client that records each
//! `notifications/tools/list_changed` such a server sends.

use std::future::Future;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::Value;

use super::{Ended, FUEL, MEMORY_MIB, OUTPUT_KIB, TIMEOUT_MS};

/// `corral serve --http 127.0.0.1:0` over a plugin directory, with the
/// campaign's limits, watching the directory or not; killed on drop.
pub struct McpServer {
    child: Child,
    url: String,
}

impl McpServer {
    /// Starts the server with `--no-watch` (`corral` is the binary's path)
    /// and waits until it serves; its stderr is drained in a thread.
    ///
    /// # Panics
    /// When the server cannot start or exits before it serves.
    pub fn start(corral: &Path, plugins: &Path, cache: &Path) -> Self {
        Self::spawn(corral, plugins, cache, false)
    }

    /// [`start`](Self::start), but the server watches `plugins` and sends
    /// `notifications/tools/list_changed` on each reload that changes the
    /// tool set.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn start_watching(corral: &Path, plugins: &Path, cache: &Path) -> Self {
        Self::spawn(corral, plugins, cache, true)
    }

    fn spawn(corral: &Path, plugins: &Path, cache: &Path, watch: bool) -> Self {
        let watch_flag: &[&str] = if watch { &[] } else { &["--no-watch"] };
        let mut child = Command::new(corral)
            .arg("--plugins")
            .arg(plugins)
            .arg("--cache-dir")
            .arg(cache)
            .args(["--fuel", &FUEL.to_string()])
            .args(["--timeout-ms", &TIMEOUT_MS.to_string()])
            .args(["--memory-mib", &MEMORY_MIB.to_string()])
            .args(["--output-kib", &OUTPUT_KIB.to_string()])
            .arg("serve")
            .args(watch_flag)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn corral serve --http");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the server printed its address before exiting")
                .expect("stderr line");
            if let Some(rest) = line.strip_prefix("corral: serving MCP at ") {
                break rest.trim().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Self { child, url }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A connected client (`initialize` done), for [`transport`](Self::transport).
    ///
    /// # Panics
    /// When the client cannot connect.
    pub async fn client(&self) -> Arc<RunningService<RoleClient, ()>> {
        Arc::new(self.connect(()).await)
    }

    /// A connected client (`initialize` done, so a session with its
    /// notification stream) that records when each
    /// `notifications/tools/list_changed` arrives.
    ///
    /// # Panics
    /// When the client cannot connect.
    pub async fn list_changes(&self) -> (ListChanges, RunningService<RoleClient, ListChanges>) {
        let changes = ListChanges::default();
        (changes.clone(), self.connect(changes).await)
    }

    async fn connect<H: rmcp::ClientHandler>(&self, handler: H) -> RunningService<RoleClient, H> {
        // reqwest is built without a TLS provider of its own (features
        // unified with corral-dist's); plain HTTP still needs one installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = StreamableHttpClientTransport::from_uri(self.url.clone());
        handler.serve(transport).await.expect("MCP client connects")
    }
}

/// The times at which an MCP client received
/// `notifications/tools/list_changed`, in arrival order.
#[derive(Clone, Debug, Default)]
pub struct ListChanges(Arc<Received>);

#[derive(Debug, Default)]
struct Received {
    times: Mutex<Vec<Instant>>,
    arrived: tokio::sync::Notify,
}

impl ListChanges {
    /// The arrival times so far.
    pub fn times(&self) -> Vec<Instant> {
        self.0.times.lock().expect("lock").clone()
    }

    /// Waits until a notification has arrived at or after `since`, up to
    /// `deadline`; true when one did.
    pub async fn arrived_since(&self, since: Instant, deadline: Instant) -> bool {
        loop {
            let arrived = self.0.arrived.notified();
            if self.times().iter().any(|&t| t >= since) {
                return true;
            }
            if tokio::time::timeout_at(deadline.into(), arrived)
                .await
                .is_err()
            {
                return false;
            }
        }
    }
}

impl rmcp::ClientHandler for ListChanges {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.0.times.lock().expect("lock").push(Instant::now());
        self.0.arrived.notify_waiters();
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The MCP transport: `tools/call` through `client`. A result with
/// `isError` ends as its `_meta["corral/errorKind"]`; a protocol or
/// transport error ends as `protocol`.
pub fn transport(
    client: Arc<RunningService<RoleClient, ()>>,
) -> impl Fn(&'static str, Value) -> Pin<Box<dyn Future<Output = Ended> + Send>> + Clone + Send + 'static
{
    move |tool, args| {
        let client = client.clone();
        Box::pin(async move {
            let Value::Object(arguments) = args else {
                unreachable!("the mix's arguments are objects")
            };
            let params = CallToolRequestParams::new(tool).with_arguments(arguments);
            let result = client
                .call_tool(params)
                .await
                .map_err(|err| ("protocol".to_string(), err.to_string()))?;
            let text = result
                .content
                .iter()
                .find_map(|c| c.as_text().map(|t| t.text.clone()))
                .unwrap_or_default();
            if result.is_error == Some(true) {
                let kind = result
                    .meta
                    .as_ref()
                    .and_then(|m| m.get("corral/errorKind"))
                    .and_then(Value::as_str)
                    .unwrap_or("(no errorKind)")
                    .to_string();
                return Err((kind, text));
            }
            match result.structured_content {
                Some(value) => Ok(value),
                None => serde_json::from_str(&text).map_err(|_| ("not_json".to_string(), text)),
            }
        })
    }
}
