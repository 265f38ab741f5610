//! corral-mcp: the MCP server. Every tool of a [`corral::Host`] (plugins,
//! `execute_tool_plan`, pipelines) served to MCP clients through `rmcp`, over
//! stdio ([`serve_stdio`]) or streamable HTTP ([`http`]).
//!
//! The tool list comes from the host's current catalog at request time, and
//! every `tools/call` goes through [`Host::call_value`] with the client's
//! arguments as parsed JSON: schema validation, effective limits, approval
//! gates, the sandbox and its limits are the library's call pipeline,
//! unchanged. This crate adds only the protocol.
//!
//! What the MCP specification asks, and where it happens here:
//! - `initialize`: server name `corral` and the crate version; capabilities
//!   `tools` with `listChanged: true`.
//! - `tools/list`: name, description, `inputSchema`, `outputSchema` (when the
//!   tool declares one), annotations derived from metadata and the plugin's
//!   policy ([`McpServer::annotations`]), and corral's own metadata under
//!   `_meta` (`corral/category`, `corral/plugin`, `corral/sha256`,
//!   `corral/returnBehavior`, `corral/grants`: what the plugin's policy lets
//!   it reach, and `corral/health`, see [`McpServer::describe`]). A tool that
//!   is `DOWN` gets a short note at the end of its description, so a model
//!   avoids it.
//! - Resources: `corral://health` is the host's health report (JSON); the
//!   `corral://` resources a tool's result embeds are kept for an hour for
//!   the tenant that called it ([`resources`]).
//! - `notifications/tools/list_changed` also when a tool goes `DOWN` or
//!   recovers (its description changes).
//! - `tools/call`: tool failures, invalid arguments, rejections and limits are
//!   results with `isError: true` and the `Error: <message>` text, so the model
//!   can correct itself, with `_meta["corral/errorKind"]` and, when the tool
//!   gave one, `_meta["corral/errorCode"]` (a tenant over a quota,
//!   `quota_exceeded`, also gets `corral/retryAfterMs` and
//!   `corral/quotaResetAt`); an unknown tool is a protocol error
//!   (`-32602`). JSON object outputs are also returned as `structuredContent`;
//!   a JSON string output is its text, unquoted.
//! - Approvals ([`approval`]): when the client declared the `elicitation`
//!   capability, a gated call asks the user: with `elicitation/create` during
//!   the call for a session client, and with an input-required result and a
//!   retry for a 2026-07-28 client; otherwise the host's configured reviewer
//!   or a standing approval decides (never an automatic yes because a client
//!   lacks the capability), and with neither a call of a tool with a declared
//!   gate is refused with `MissingRequiredClientCapability` (-32021).
//! - Progressive disclosure ([`disclosure`]): with facades, a client's
//!   `tools/list` holds facades that unfold into their tools.
//! - Progress: with a `progressToken`, guest `progress()` messages become
//!   `notifications/progress`, coalesced per call: at most one every
//!   [`PROGRESS_INTERVAL`], the latest message wins, and the last one is
//!   always sent before the result. Memory per call stays one message,
//!   however many the guest sends.
//! - Cancellation: `notifications/cancelled` drops the call; the guest is
//!   stopped at its next epoch tick and its store torn down.
//! - `notifications/tools/list_changed` whenever a reload changes the tool set.
//! - Tasks (SEP-2663, [`tasks`]): a client that declares the extension may
//!   get a task handle for a call its tool's `[tasks]` mode marks as long,
//!   then `tasks/get`, `tasks/update`, `tasks/cancel`; `server/discover`
//!   and `initialize` declare `extensions["io.modelcontextprotocol/tasks"]`.
//! - Out-of-band context: string values under `_meta["corral/context"]` of a
//!   `tools/call` become the call's context (filtered per plugin as usual).

pub mod approval;
mod call;
mod client;
pub mod disclosure;
pub mod http;
mod listen;
pub mod ops;
mod present;
mod progress;
pub mod resources;
mod session;
mod stdio;
pub mod tasks;
pub mod tokens;
pub mod trace;

use std::sync::Arc;

use tracing::Instrument as _;

use corral::Host;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    Implementation, InitializeResult, JsonObject, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

pub use approval::ElicitationReviewer;
pub use stdio::{ServeError, serve_stdio};

/// The URI of the health resource.
pub const HEALTH_URI: &str = "corral://health";

/// The `_meta` key under which a `tools/call` may carry out-of-band context.
pub const CONTEXT_META_KEY: &str = "corral/context";

/// The `_meta` key of `tools/call` with which a client asks for its call to
/// be recorded (`true`), where the operator allows it
/// ([`McpServer::with_record_on_request`]).
pub const RECORD_META_KEY: &str = "corral/record";

/// The shortest gap between two progress notifications of one call: 100 ms.
pub const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// An MCP server over a [`Host`]. Cheap to clone; clones share the host,
/// and also the session state: the unfolded facades and the `list_changed`
/// listener. Serve each session with its own server
/// ([`for_session`](Self::for_session)); a session's listener stops when the
/// last clone of its server is dropped.
#[derive(Clone, Debug)]
pub struct McpServer {
    host: Host,
    /// Signs and checks approval states (2026-07-28 clients); `None` when
    /// no key could be generated, and the host's reviewer decides.
    states: Option<Arc<approval::States>>,
    /// This session's unfolded facades (session-based revisions).
    unfolded: disclosure::SessionState,
    /// This session's `list_changed` listener, stopped with the session.
    listener: session::Listener,
    /// The MCP tasks (SEP-2663) of this server and its replicas.
    tasks: Arc<tasks::Tasks>,
    /// Whether a client may ask for its call to be recorded
    /// ([`RECORD_META_KEY`]).
    record_on_request: bool,
}

impl McpServer {
    /// Serves `host`'s tools. Approval states of 2026-07-28 clients are
    /// signed with a key generated for this process, good for
    /// [`approval::DEFAULT_STATE_TTL`]: an approval asked here must be
    /// answered here. Behind a load balancer, give every replica the same
    /// key with [`with_state_key`](Self::with_state_key).
    pub fn new(host: Host) -> Self {
        let states = match approval::States::generated(approval::DEFAULT_STATE_TTL) {
            Ok(states) => Some(Arc::new(states)),
            Err(err) => {
                tracing::error!("{err}; approvals of 2026-07-28 clients go to the host's reviewer");
                None
            }
        };
        Self {
            host,
            states,
            unfolded: disclosure::SessionState::default(),
            listener: session::Listener::default(),
            tasks: Arc::new(tasks::Tasks::new(
                Arc::new(corral_store::MemoryStore::default()),
                tasks::TaskSettings::default(),
            )),
            record_on_request: false,
        }
    }

    /// Lets clients ask for a call to be recorded, with `true` under
    /// `_meta["corral/record"]` of `tools/call`: the run is written into
    /// the host's recordings directory
    /// ([`HostBuilder::recordings`](corral::HostBuilder::recordings)) and
    /// the result's `_meta["corral/recordings"]` names the files (names
    /// only, not the directory). Off by default: a recording holds the
    /// call's arguments and what the tool read, so the operator decides.
    #[must_use]
    pub fn with_record_on_request(mut self, allow: bool) -> Self {
        self.record_on_request = allow;
        self
    }

    /// Keeps MCP tasks in `store` (shared with the other replicas, or this
    /// process's own) under `settings`.
    pub fn with_tasks(
        mut self,
        store: Arc<dyn corral_store::SharedStore>,
        settings: tasks::TaskSettings,
    ) -> Self {
        self.tasks = Arc::new(tasks::Tasks::new(store, settings));
        self
    }

    /// A server for a new session: the same host and keys, nothing
    /// unfolded yet. The HTTP transport makes one per session.
    pub fn for_session(&self) -> Self {
        Self {
            host: self.host.clone(),
            states: self.states.clone(),
            unfolded: disclosure::SessionState::default(),
            listener: session::Listener::default(),
            tasks: self.tasks.clone(),
            record_on_request: self.record_on_request,
        }
    }

    /// The facades this client unfolded: the session's, or (2026-07-28) the
    /// ones its `_meta` token carries.
    fn unfolded(&self, context: &RequestContext<RoleServer>) -> disclosure::Unfolded {
        if !stateless(context) {
            return self
                .unfolded
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
        }
        let token = context
            .meta
            .get(disclosure::DISCLOSURE_META_KEY)
            .and_then(Value::as_str);
        self.states
            .as_ref()
            .map(|states| disclosure::open(states, token))
            .unwrap_or_default()
    }

    /// The `tools/list` of a client that unfolded the facades `unfolded`
    /// (nothing for a client's first list), sorted by name: every tool
    /// without disclosure; with it, the facades and tools the
    /// [`disclosure`] module's rules show.
    pub fn list(&self, unfolded: &[String]) -> Vec<McpTool> {
        let catalog = self.host.catalog();
        let health = self.host.health();
        let of = |name: &str| health.tools.iter().find(|h| h.tool == name);
        if catalog.facades().is_empty() {
            return catalog
                .tools()
                .map(|t| self.describe_with(t, of(&t.spec().name)))
                .collect();
        }
        disclosure::visible(&catalog, unfolded)
            .into_iter()
            .map(|entry| match entry {
                disclosure::Entry::Tool(t) => self.describe_with(t, of(&t.spec().name)),
                disclosure::Entry::Facade(f, open) => disclosure::definition(f, open),
            })
            .collect()
    }

    /// A call of the facade `facade`: unfold or fold it for this client.
    async fn call_facade(
        &self,
        catalog: &corral::Catalog,
        facade: &corral::Facade,
        arguments: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let (text, token) = if stateless(context) {
            let mut unfolded = self.unfolded(context);
            let text = disclosure::call(catalog, facade, arguments, &mut unfolded);
            let token = self
                .states
                .as_ref()
                .and_then(|states| disclosure::seal(states, &unfolded));
            (text, token)
        } else {
            // Changed under the lock: two calls of one session never lose
            // each other's change.
            let mut unfolded = self.unfolded.lock().unwrap_or_else(|p| p.into_inner());
            (
                disclosure::call(catalog, facade, arguments, &mut unfolded),
                None,
            )
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(text.clone())]);
        result.structured_content = serde_json::from_str(&text).ok();
        if let Some(token) = token {
            let mut meta = rmcp::model::MetaObject::default();
            meta.insert(disclosure::DISCLOSURE_META_KEY.into(), json!(token));
            result.meta = Some(meta);
        } else if !stateless(context) && context.peer.notify_tool_list_changed().await.is_err() {
            tracing::debug!("the client went away before tools/list_changed");
        }
        result
    }

    /// Signs approval states with `key` (at least
    /// [`approval::MIN_STATE_KEY_BYTES`] bytes; share it among replicas, keep
    /// it secret) and lets each be used once within `ttl`.
    ///
    /// # Errors
    /// [`approval::StateKeyError::TooShort`] for a short key.
    pub fn with_state_key(
        mut self,
        key: &[u8],
        ttl: std::time::Duration,
    ) -> Result<Self, approval::StateKeyError> {
        self.states = Some(Arc::new(approval::States::new(key, ttl)?));
        Ok(self)
    }

    /// The server's MCP tasks.
    pub fn tasks(&self) -> &tasks::Tasks {
        &self.tasks
    }

    /// The host this server serves.
    pub fn host(&self) -> &Host {
        &self.host
    }
}

/// The tenant of a request (see [`tasks`]): its bearer token's, else
/// from its `_meta["corral/context"]`.
fn request_tenant(context: &RequestContext<RoleServer>) -> String {
    tasks::tenant_of(
        http::authenticated(context).as_ref(),
        &present::context_from_meta(Some(&context.meta)),
    )
}

/// Whether the request is of the 2026-07-28 revision (no session): its
/// revision and capabilities travel in its `_meta`.
fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| !v.has_initialize())
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("corral", env!("CARGO_PKG_VERSION")))
        .with_instructions(present::instructions(&self.host))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let unfolded = self.unfolded(&context);
        let result = ListToolsResult::with_all_items(self.list(&unfolded));
        if self.host.catalog().facades().is_empty() {
            return Ok(result);
        }
        // With facades the list is this client's: never shared, never kept.
        Ok(result.with_ttl_ms(0).with_cache_scope(CacheScope::Private))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(HEALTH_URI, "health")
                .with_title("Tool health")
                .with_description(
                    "Each tool's status (UP, DEGRADED, DOWN, UNKNOWN) from its recent calls, \
                     with the reason when it is not UP, and the overall status.",
                )
                .with_mime_type("application/json"),
        ]))
    }

    /// corral declares no `prompts` capability, so `prompts/*` are not
    /// served (-32601), not answered with an empty list (MCP: a server
    /// answers only the methods of the capabilities it declares).
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        Err(McpError::method_not_found::<
            rmcp::model::ListPromptsRequestMethod,
        >())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(listen::accepted(requested))
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        listen::run(&self.host, context).await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        self.tasks.get(&request, &request_tenant(&context)).await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.update(request, &request_tenant(&context)).await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel(&request, &request_tenant(&context)).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri != HEALTH_URI {
            let tenant = request_tenant(&context);
            let kept = resources::read(self.tasks.store().as_ref(), &tenant, &request.uri)
                .await
                .map_err(|err| {
                    McpError::internal_error(format!("cannot read the resource store: {err}"), None)
                })?;
            if let Some(contents) = kept {
                return Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
                    vec![contents],
                )));
            }
            // SEP-2164: the URI that was not found goes in `data`. Another
            // tenant's resource reads as one that never existed.
            return Err(McpError::resource_not_found(
                format!(
                    "no resource `{}`; corral serves {HEALTH_URI}, and for an hour the \
                     `corral://` resources a tool's result made for this tenant",
                    corral::untrusted_text::escape(&request.uri)
                ),
                Some(json!({"uri": request.uri})),
            ));
        }
        let text = serde_json::to_string_pretty(&self.host.health())
            .map_err(|err| McpError::internal_error(err.to_string(), None))?;
        let mut contents = ResourceContents::text(text, HEALTH_URI);
        if let ResourceContents::TextResourceContents { mime_type, .. } = &mut contents {
            *mime_type = Some("application/json".into());
        }
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![contents],
        )))
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        if let Some(facade) = self.host.catalog().facades().get(name) {
            return Some(disclosure::definition(facade, false));
        }
        self.host.tool(name).map(|t| self.describe(&t))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Tell this client whenever a reload changes the tool set, or a tool
        // goes DOWN or recovers (its description and _meta change), for as
        // long as the session lasts.
        self.listener.start(&self.host, context.peer);
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let meta = request
            .meta
            .as_ref()
            .filter(|m| !m.0.is_empty())
            .unwrap_or(&context.meta);
        let span = trace::tools_call_span(&request.name, meta, &context);
        self.call_tool_traced(request, context)
            .instrument(span)
            .await
    }
}
