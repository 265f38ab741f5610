//! Streamable HTTP: the MCP endpoint at `/mcp` (rmcp's streamable HTTP
//! service on axum, many sessions sharing one [`Host`](corral::Host)) and Prometheus
//! metrics at `/metrics`.
//!
//! Protection, in order:
//! - DNS rebinding: the `Host` header must name an allowed host (loopback
//!   names by default, plus [`HttpOptions::allowed_hosts`]), and a request
//!   carrying an `Origin` must come from an allowed origin (loopback origins
//!   by default, plus [`HttpOptions::allowed_origins`]); rmcp answers others
//!   with `403`.
//! - Optional bearer token ([`HttpOptions::token`]): every request to `/mcp`
//!   and `/metrics` without `Authorization: Bearer <token>` gets `401`.
//!
//! Shutdown is graceful: when `shutdown` resolves the listener stops accepting,
//! requests in flight (tool calls included) finish, then the MCP sessions are
//! closed.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::McpServer;

/// How long in-flight requests get after shutdown starts before sessions are
/// closed: 30 000 ms.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Options of the HTTP transport.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Hosts (or `host:port`) accepted in the `Host` header besides
    /// `localhost`, `127.0.0.1` and `::1`. Needed when binding a non-loopback
    /// address.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port|:*]`) accepted besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// Required bearer token; `None` accepts any caller that passes the host
    /// and origin checks.
    pub token: Option<String>,
}

/// Renders Prometheus text; `None` when the process has no recorder.
pub type MetricsRender = std::sync::Arc<dyn Fn() -> String + Send + Sync>;

#[derive(Clone)]
struct AppState {
    token: Option<String>,
    metrics: Option<MetricsRender>,
}

async fn require_token(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(token) = &state.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(token.as_str()) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a bearer token is required (Authorization: Bearer <token>)\n",
            )
                .into_response();
        }
    }
    next.run(request).await
}

async fn metrics(State(state): State<AppState>) -> Response {
    match &state.metrics {
        Some(render) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            render(),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "metrics are not enabled\n").into_response(),
    }
}

/// The axum router: `/mcp` and `/metrics`, behind the token check. `sessions`
/// closes every MCP session when cancelled.
pub fn router(
    server: McpServer,
    options: &HttpOptions,
    metrics_render: Option<MetricsRender>,
    sessions: CancellationToken,
) -> Router {
    let mut config = StreamableHttpServerConfig::default();
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(options.allowed_hosts.iter().cloned());
    config.allowed_hosts = hosts;
    let mut origins = vec![
        "http://localhost:*".to_string(),
        "http://127.0.0.1:*".into(),
        "http://[::1]:*".into(),
        "https://localhost:*".into(),
    ];
    origins.extend(options.allowed_origins.iter().cloned());
    config.allowed_origins = origins;
    config.cancellation_token = sessions;
    config.sse_keep_alive = Some(Duration::from_secs(15));
    let service = StreamableHttpService::new(
        // One server per session, each with its own unfolded facades.
        move || Ok(server.for_session()),
        LocalSessionManager::default().into(),
        config,
    );
    let state = AppState {
        token: options.token.clone(),
        metrics: metrics_render,
    };
    Router::new()
        .nest_service("/mcp", service)
        .route("/metrics", get(metrics))
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state)
}

/// Serves on `listener` until `shutdown` resolves, then shuts down
/// gracefully (see the module docs).
///
/// # Errors
/// The I/O error of the listener.
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: McpServer,
    options: &HttpOptions,
    metrics_render: Option<MetricsRender>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let sessions = CancellationToken::new();
    let app = router(server, options, metrics_render, sessions.clone());
    let addr: Option<SocketAddr> = listener.local_addr().ok();
    tracing::info!(?addr, "MCP over streamable HTTP at /mcp");
    let closing = sessions.clone();
    let stop = async move {
        shutdown.await;
        tracing::info!("shutting down: finishing requests in flight");
        // Long-lived SSE streams would hold the server open: close the
        // sessions after the grace period.
        tokio::spawn(async move {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
            closing.cancel();
        });
    };
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await?;
    sessions.cancel();
    Ok(())
}
