//! The MCP layer's floors: rmcp's own stdio server (the transport corral
//! serves with, `stdio_pipes`) with one tool that either returns its
//! arguments as text at once (a native tool), or runs the bare-wasmtime
//! floor call of a component ([`Floor`]: a fresh store and instance on
//! corral's engine, the typed `call`, the store dropped). No validation,
//! limits, WASI grants or bookkeeping, no corral: what any tool server built
//! on rmcp pays per `tools/call`, without and with a fresh wasm instance.
//! The bench re-executes itself as this server when `CORRAL_BENCH_RMCP_FLOOR`
//! is set: to `native`, or to the path of the component. Its engine has
//! corral's default pool, as `corral serve` has, unless
//! `CORRAL_BENCH_RMCP_FLOOR_SLOTS` gives its plugin slots
//! (`scripts/mcp-server-cpu.py --callgrind` sets 1, as it runs
//! `corral serve --max-instances 1`: a pool valgrind can reserve).

use std::sync::Arc;

use corral_test_support::Floor;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

/// The environment variable that makes the bench this server: `native`, or
/// a component's path.
pub const ENV: &str = "CORRAL_BENCH_RMCP_FLOOR";

/// The environment variable that sets the floor's plugin slots
/// ([`corral::PoolConfig::with_max_concurrent_instances`]); unset: the
/// default pool.
pub const SLOTS_ENV: &str = "CORRAL_BENCH_RMCP_FLOOR_SLOTS";

/// The value of [`ENV`] for the native tool.
pub const NATIVE: &str = "native";

/// Whether this process was started as the rmcp floor server.
pub fn requested() -> bool {
    std::env::var_os(ENV).is_some()
}

/// The tool: native, or a component's floor call (with its engine, whose
/// epoch thread must outlive the calls).
struct Native(Option<(Floor, corral::Engine)>);

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
        let text = match &self.0 {
            None => text,
            Some((floor, _)) => floor.call(&request.name, &text).await,
        };
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}

/// Serves [`Native`] on stdin/stdout until the client closes them.
pub fn serve() {
    let tool = match std::env::var(ENV).expect("requested") {
        kind if kind == NATIVE => None,
        path => {
            let mut pool = corral::PoolConfig::default();
            if let Ok(slots) = std::env::var(SLOTS_ENV) {
                let slots = slots
                    .parse()
                    .unwrap_or_else(|_| panic!("{SLOTS_ENV}: {slots:?} is not a number of slots"));
                pool = pool.with_max_concurrent_instances(slots);
            }
            let engine = corral::Engine::new(pool).expect("engine");
            Some((Floor::new(&engine, std::path::Path::new(&path)), engine))
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let running = rmcp::serve_server(Native(tool), rmcp::transport::io::stdio_pipes())
            .await
            .expect("rmcp serves");
        let _ = running.waiting().await;
    });
}
