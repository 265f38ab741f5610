//! The MCP server: every tool of a [`Host`] (plugins, `execute_tool_plan`,
//! pipelines) served to MCP clients through `rmcp`, over stdio
//! ([`serve_stdio`]) or streamable HTTP ([`http`]).
//!
//! The tool list comes from the host's current catalog at request time, and
//! every `tools/call` goes through [`Host::call`]: schema validation, approval
//! gates, the sandbox and its limits are the CLI's, unchanged.
//!
//! What the MCP specification asks, and where it happens here:
//! - `initialize`: server name `corral` and the crate version; capabilities
//!   `tools` with `listChanged: true`.
//! - `tools/list`: name, description, `inputSchema`, annotations derived from
//!   metadata and the plugin's policy ([`annotations`]), and corral's own
//!   metadata under `_meta` (`corral/category`, `corral/plugin`,
//!   `corral/sha256`, `corral/returnBehavior`, and `corral/grants`: what the
//!   plugin's policy lets it reach, see [`McpServer::describe`]).
//! - `tools/call`: tool failures, invalid arguments, rejections and limits are
//!   results with `isError: true` and the `Error: <message>` text, so the model
//!   can correct itself; an unknown tool is a protocol error (`-32602`). JSON
//!   object outputs are also returned as `structuredContent`.
//! - Approvals: when the client declared the `elicitation` capability, a gated
//!   call asks the user through `elicitation/create`; otherwise the host's
//!   configured reviewer decides (never an automatic yes because a client
//!   lacks the capability).
//! - Progress: with a `progressToken`, each guest `progress()` message becomes
//!   a `notifications/progress`, in order.
//! - Cancellation: `notifications/cancelled` drops the call; the guest is
//!   stopped at its next epoch tick and its store torn down.
//! - `notifications/tools/list_changed` whenever a reload changes the tool set.
//! - Out-of-band context: string values under `_meta["corral/context"]` of a
//!   `tools/call` become the call's context (filtered per plugin as usual).

mod elicit;
pub mod http;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool as McpTool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::call::{CallContext, CallOptions};
use crate::error::CallError;
use crate::host::Host;
use crate::policy::{EnvGrant, Policy};
use crate::resolver::Tool;

pub use elicit::ElicitationReviewer;

/// The `_meta` key under which a `tools/call` may carry out-of-band context.
pub const CONTEXT_META_KEY: &str = "corral/context";

/// An MCP server over a [`Host`]. Cheap to clone; clones share the host.
#[derive(Clone, Debug)]
pub struct McpServer {
    host: Host,
}

impl McpServer {
    /// Serves `host`'s tools.
    pub fn new(host: Host) -> Self {
        Self { host }
    }

    /// The MCP definition of `tool`: name, description, `inputSchema`,
    /// [`annotations`], and `_meta` with `corral/category`,
    /// `corral/returnBehavior` and, for a plugin's tool, `corral/plugin`,
    /// `corral/sha256` and `corral/grants` (`{"files": [{"path", "writable"}],
    /// "environment": [name], "http": [destination]}`, guest paths and
    /// variable names only: never host paths or values).
    pub fn describe(tool: &Tool) -> McpTool {
        let spec = tool.spec();
        let schema: JsonObject = match &spec.parameters {
            Value::Object(map) => map.clone(),
            _ => JsonObject::new(),
        };
        let mut meta = rmcp::model::MetaObject::default();
        meta.insert("corral/category".into(), json!(spec.metadata.category));
        meta.insert(
            "corral/returnBehavior".into(),
            json!(spec.metadata.return_behavior),
        );
        if let Some(plugin) = tool.plugin() {
            meta.insert("corral/plugin".into(), json!(plugin.name()));
            meta.insert("corral/sha256".into(), json!(plugin.sha256()));
            meta.insert("corral/grants".into(), grants_meta(plugin.policy()));
        }
        McpTool::new(
            spec.name.clone(),
            spec.description.clone(),
            Arc::new(schema),
        )
        .with_annotations(annotations(tool))
        .with_meta(meta)
    }
}

/// What the plugin's policy grants, for `_meta["corral/grants"]`:
/// `{"files": [{"path": guest path, "writable": bool}], "environment":
/// [variable name], "http": [allowed destination]}`. Host paths and
/// environment values are left out: a client (and the model behind it) learns
/// what the tool can reach, not the host's layout or secrets.
fn grants_meta(policy: &Policy) -> Value {
    let files: Vec<Value> = policy
        .filesystem
        .iter()
        .map(|d| json!({"path": d.guest, "writable": d.writable}))
        .collect();
    let environment: Vec<&str> = policy
        .environment
        .iter()
        .map(|e| match e {
            EnvGrant::Set { name, .. } | EnvGrant::Pass { name } => name.as_str(),
        })
        .collect();
    let http: Vec<String> = policy.http_allow.iter().map(ToString::to_string).collect();
    json!({"files": files, "environment": environment, "http": http})
}

/// MCP tool annotations derived from corral's metadata and the plugin's
/// policy:
/// - `destructiveHint`: the tool requires approval;
/// - `idempotentHint`: the tool's `idempotent` metadata;
/// - `readOnlyHint`: nothing outside the sandbox can change: no approval
///   required, and the plugin has no writable directory and no HTTP grant
///   (a pipeline or `execute_tool_plan` is not read-only: its steps may not be);
/// - `openWorldHint`: the plugin may reach hosts over HTTP.
pub fn annotations(tool: &Tool) -> ToolAnnotations {
    let m = &tool.spec().metadata;
    let (writes, network) = match tool.plugin() {
        Some(plugin) => {
            let policy = plugin.policy();
            (
                policy.filesystem.iter().any(|d| d.writable),
                !policy.http_allow.is_empty(),
            )
        }
        None => (true, false),
    };
    ToolAnnotations::new()
        .read_only(!m.requires_approval && !writes && !network)
        .destructive(m.requires_approval)
        .idempotent(m.idempotent)
        .open_world(network)
}

/// The text and structured content of a call's result.
fn to_result(result: Result<crate::call::CallOutput, CallError>) -> CallToolResult {
    match result {
        Ok(out) => {
            let mut meta = rmcp::model::MetaObject::default();
            meta.insert("corral/returnBehavior".into(), json!(out.return_behavior));
            meta.insert(
                "corral/durationMs".into(),
                json!(out.duration.as_secs_f64() * 1e3),
            );
            meta.insert("corral/fuelConsumed".into(), json!(out.fuel_consumed));
            let mut result = CallToolResult::success(vec![ContentBlock::text(out.text)]);
            if let Some(object @ Value::Object(_)) = out.json {
                result.structured_content = Some(object);
            }
            result.meta = Some(meta);
            result
        }
        Err(err) => {
            let mut result = CallToolResult::error(vec![ContentBlock::text(err.llm_text())]);
            let mut meta = rmcp::model::MetaObject::default();
            meta.insert("corral/errorKind".into(), json!(err.kind()));
            result.meta = Some(meta);
            result
        }
    }
}

/// Context from `_meta["corral/context"]`: string values only.
fn context_from_meta(meta: Option<&rmcp::model::RequestMetaObject>) -> CallContext {
    let Some(meta) = meta else {
        return CallContext::new();
    };
    let value = serde_json::to_value(meta).unwrap_or(Value::Null);
    match value.get(CONTEXT_META_KEY) {
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect(),
        _ => CallContext::new(),
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("corral", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Sandboxed WebAssembly tools. Batch several dependent calls into one \
             execute_tool_plan call; results marked isError explain what to fix.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let catalog = self.host.catalog();
        Ok(ListToolsResult::with_all_items(
            catalog.tools().map(|t| Self::describe(t)).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.host.tool(name).map(|t| Self::describe(&t))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if self.host.tool(&name).is_none() {
            let err = CallError::UnknownTool {
                suggestion: None,
                name: name.clone(),
            };
            return Err(McpError::invalid_params(err.to_string(), None));
        }
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default()).to_string();

        let mut options = CallOptions {
            context: context_from_meta(request.meta.as_ref()),
            ..CallOptions::default()
        };
        let elicitation = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        if elicitation {
            options.reviewer = Some(Arc::new(ElicitationReviewer::new(context.peer.clone())));
        }

        // Progress notifications keep the guest's order: one forwarding task
        // per call drains a channel the sink writes to.
        let mut forwarder = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
            let peer = context.peer.clone();
            forwarder = Some(tokio::spawn(async move {
                let mut step = 0u32;
                while let Some(message) = rx.recv().await {
                    step += 1;
                    let param = ProgressNotificationParam::new(token.clone(), f64::from(step))
                        .with_message(message);
                    if peer.notify_progress(param).await.is_err() {
                        break;
                    }
                }
            }));
            options.progress = Some(Arc::new(move |_tool: &str, message: &str| {
                let _ = tx.send(message.to_string());
            }));
        }

        let host = self.host.clone();
        let call = host.call(&name, &arguments, &options);
        let result = tokio::select! {
            result = call => result,
            () = context.ct.cancelled() => {
                tracing::info!(tool = name, "call cancelled by the client; sandbox torn down");
                metrics::counter!("corral_calls_cancelled_total", "tool" => name.clone()).increment(1);
                return Err(McpError::internal_error("the request was cancelled", None));
            }
        };
        drop(options);
        if let Some(forwarder) = forwarder {
            // The sink is gone with the options; the forwarder ends after
            // sending what is queued, before the result goes out.
            let _ = forwarder.await;
        }
        Ok(CallToolResponse::Complete(to_result(result)))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Tell this client whenever a reload changes the tool set.
        let mut changes = self.host.subscribe();
        changes.borrow_and_update();
        let peer = context.peer.clone();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }
}

/// Serves `server` on stdin/stdout until the client closes the stream. Logs
/// must go to stderr: stdout is the protocol.
///
/// # Errors
/// When the transport fails to start or ends with an error.
pub async fn serve_stdio(server: McpServer) -> anyhow::Result<()> {
    let running = rmcp::serve_server(server, rmcp::transport::io::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
