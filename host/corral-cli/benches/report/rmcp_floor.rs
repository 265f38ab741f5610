//! The MCP layer's floor: rmcp's own stdio server (the transport corral
//! serves with, `stdio_pipes`) with one native tool that returns its
//! arguments as text at once. No sandbox, no validation, no corral: what
//! any tool server built on rmcp pays per `tools/call`. The bench
//! re-executes itself as this server when `CORRAL_BENCH_RMCP_FLOOR` is set.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

/// The environment variable that makes the bench this server.
pub const ENV: &str = "CORRAL_BENCH_RMCP_FLOOR";

/// Whether this process was started as the rmcp floor server.
pub fn requested() -> bool {
    std::env::var_os(ENV).is_some()
}

struct Native;

impl ServerHandler for Native {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-floor", "0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!("an object")
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "sha256",
            "Echo the arguments.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = serde_json::Value::Object(request.arguments.unwrap_or_default()).to_string();
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}

/// Serves [`Native`] on stdin/stdout until the client closes them.
pub fn serve() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let running = rmcp::serve_server(Native, rmcp::transport::io::stdio_pipes())
            .await
            .expect("rmcp serves");
        let _ = running.waiting().await;
    });
}
