//! Streamable HTTP: the MCP endpoint at `/mcp` (rmcp's streamable HTTP
//! service on axum, many sessions sharing one [`Host`](corral::Host)),
//! Prometheus metrics at `/metrics`, and the probes `/healthz` and `/readyz`
//! ([`crate::ops`]).
//!
//! Protection, in order:
//! - DNS rebinding: the `Host` header must name an allowed host (loopback
//!   names by default, plus [`HttpOptions::allowed_hosts`]), and a request
//!   carrying an `Origin` must come from an allowed origin (loopback origins
//!   by default, plus [`HttpOptions::allowed_origins`]); rmcp answers others
//!   with `403`.
//! - Optional bearer tokens: the one token of [`HttpOptions::token`], and
//!   the tokens of [`HttpOptions::tenants`] (`--tokens FILE`), each of which
//!   authenticates a tenant. With either set, every request to `/mcp` and
//!   `/metrics` without a listed `Authorization: Bearer <token>` gets `401`.
//!   A tenant's token puts the tenant on the request (`authenticated` reads it):
//!   its quotas, tasks and resources are that tenant's. `/metrics` takes only
//!   the operator's token (it names tenants): `403` to a tenant's. The
//!   probes answer without a token: they say only counts.
//!
//! Shutdown is a drain ([`crate::ops`]): when `shutdown` resolves the
//! replica turns unready, then refuses new requests with `503`, lets the
//! requests in flight (tool calls included) finish within the grace period,
//! and [`serve`] returns how many it had to cut off.

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
use crate::ops::{self, Drain, DrainOptions, DrainReport, Probes};

/// Options of the HTTP transport.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Hosts (or `host:port`) accepted in the `Host` header besides
    /// `localhost`, `127.0.0.1` and `::1`. Needed when binding a non-loopback
    /// address.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port|:*]`) accepted besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// Required bearer token; `None` (and no [`tenants`](Self::tenants))
    /// accepts any caller that passes the host and origin checks.
    pub token: Option<String>,
    /// Bearer tokens that each authenticate a tenant (`--tokens FILE`).
    pub tenants: Option<std::sync::Arc<crate::tokens::TokenTenants>>,
}

/// Renders Prometheus text; `None` when the process has no recorder.
pub type MetricsRender = std::sync::Arc<dyn Fn() -> String + Send + Sync>;

#[derive(Clone)]
struct AppState {
    token: Option<String>,
    tenants: Option<std::sync::Arc<crate::tokens::TokenTenants>>,
    metrics: Option<MetricsRender>,
}

async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    if state.token.is_none() && state.tenants.is_none() {
        return next.run(request).await;
    }
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let tenant = given.and_then(|g| state.tenants.as_ref()?.tenant(g).cloned());
    let shared = given.is_some() && given == state.token.as_deref();
    if tenant.is_none() && !shared {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "a bearer token is required (Authorization: Bearer <token>)\n",
        )
            .into_response();
    }
    // A tenant's token reaches its own MCP calls, not the replica's
    // metrics, which name other tenants (`corral_tenant_used`).
    if !shared && request.uri().path() == "/metrics" {
        return (
            StatusCode::FORBIDDEN,
            "/metrics takes the operator's token (--token-file), not a tenant's\n",
        )
            .into_response();
    }
    if let Some(tenant) = tenant {
        request.extensions_mut().insert(tenant);
    }
    next.run(request).await
}

/// The tenant a request's bearer token authenticated (see
/// [`HttpOptions::tenants`]), from the HTTP request rmcp hands to the
/// handler; `None` over stdio, and for a token that names no tenant.
pub(crate) fn authenticated(
    context: &rmcp::service::RequestContext<rmcp::RoleServer>,
) -> Option<corral::Tenant> {
    context
        .extensions
        .get::<http::request::Parts>()?
        .extensions
        .get::<corral::Tenant>()
        .cloned()
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

/// The axum router: `/mcp` (behind `drain`'s guard) and `/metrics`, behind
/// the token check, and the probes `/healthz` and `/readyz` without it.
/// `sessions` closes every MCP session when cancelled.
pub fn router(
    server: McpServer,
    options: &HttpOptions,
    metrics_render: Option<MetricsRender>,
    sessions: CancellationToken,
    drain: Drain,
) -> Router {
    let probes = Probes {
        host: server.host().clone(),
        drain: drain.clone(),
        store: server.tasks().store().clone(),
    };
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
        tenants: options.tenants.clone(),
        metrics: metrics_render,
    };
    let mcp = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(drain, ops::guard));
    let guarded = Router::new()
        .route("/metrics", get(metrics))
        .with_state(state.clone())
        .merge(mcp)
        .layer(middleware::from_fn_with_state(state, require_token));
    Router::new()
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .with_state(probes)
        .merge(guarded)
}

/// Serves on `listener` until `shutdown` resolves, then drains as `drain`
/// says (see [`crate::ops`]): the listener keeps answering (probes, and
/// `503` to new requests) until the requests in flight are done or the
/// grace period, or `cut_short` (a second signal), ends the drain. Then the
/// MCP sessions are closed and the report returned; connections still open
/// end with the process.
///
/// # Errors
/// The I/O error of the listener, when it fails before `shutdown`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: McpServer,
    options: &HttpOptions,
    metrics_render: Option<MetricsRender>,
    drain: DrainOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
    cut_short: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<DrainReport> {
    let sessions = CancellationToken::new();
    let state = Drain::new();
    let app = router(
        server,
        options,
        metrics_render,
        sessions.clone(),
        state.clone(),
    );
    let addr: Option<SocketAddr> = listener.local_addr().ok();
    tracing::info!(?addr, "MCP over streamable HTTP at /mcp");
    let mut serving = tokio::spawn(async move { axum::serve(listener, app).await });
    tokio::select! {
        ended = &mut serving => {
            sessions.cancel();
            return match ended {
                Ok(result) => result.map(|()| DrainReport::default()),
                Err(join) => Err(std::io::Error::other(join)),
            };
        }
        () = shutdown => {}
    }
    let report = state.run(drain, cut_short).await;
    if report.cut > 0 {
        tracing::warn!(
            cut = report.cut,
            "drain over: requests still in flight were cut off"
        );
    } else {
        tracing::info!(
            took_ms = report.took.as_millis() as u64,
            "drain over: nothing in flight"
        );
    }
    sessions.cancel();
    serving.abort();
    Ok(report)
}
