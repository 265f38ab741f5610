//! The MCP transport of the load campaign: `corral serve --http` in a child
//! process, called through the official Rust SDK's client (rmcp) over
//! streamable HTTP.

use std::future::Future;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::Value;

use super::{Ended, FUEL, MEMORY_MIB, OUTPUT_KIB, TIMEOUT_MS};

/// `corral serve --http 127.0.0.1:0 --no-watch` over a plugin directory,
/// with the campaign's limits; killed on drop.
pub struct McpServer {
    child: Child,
    url: String,
}

impl McpServer {
    /// Starts the server (`corral` is the binary's path) and waits until it
    /// serves; its stderr is drained in a thread.
    ///
    /// # Panics
    /// When the server cannot start or exits before it serves.
    pub fn start(corral: &Path, plugins: &Path, cache: &Path) -> Self {
        let mut child = Command::new(corral)
            .arg("--plugins")
            .arg(plugins)
            .arg("--cache-dir")
            .arg(cache)
            .args(["--fuel", &FUEL.to_string()])
            .args(["--timeout-ms", &TIMEOUT_MS.to_string()])
            .args(["--memory-mib", &MEMORY_MIB.to_string()])
            .args(["--output-kib", &OUTPUT_KIB.to_string()])
            .args(["serve", "--no-watch", "--http", "127.0.0.1:0"])
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
        // reqwest is built without a TLS provider of its own (features
        // unified with corral-dist's); plain HTTP still needs one installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = StreamableHttpClientTransport::from_uri(self.url.clone());
        Arc::new(().serve(transport).await.expect("MCP client connects"))
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
