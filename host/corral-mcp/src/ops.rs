//! What an orchestrator or a load balancer needs from `corral serve --http`:
//! the probes `/healthz` and `/readyz`, and the graceful drain that starts
//! when the process is asked to stop.
//!
//! # Probes
//! Both are served without the bearer token and without the `Host` check
//! (a kubelet probes the pod's IP address), and their bodies carry counts,
//! never a tool's name or data; per-tool health stays behind the token
//! (`corral://health`, `/metrics`).
//! - `GET /healthz` (liveness): `200 {"status":"alive"}` while the process
//!   and its runtime answer.
//! - `GET /readyz` (readiness): `200` when ready, `503` otherwise, with
//!   `{"ready", "draining", "plugins_pending", "status", "store", "tools": {"up",
//!   "degraded", "down", "unknown"}}`. Ready means every plugin file has
//!   been loaded or has failed to ([`Host::pending_plugins`] is empty, see
//!   `serve_while_compiling`) and the replica is not draining. `status` is
//!   the overall health status of [`Host::health`]; a `DOWN` tool does not
//!   make a replica unready (every replica serves the same tools).
//!
//! # Drain
//! [`Drain`] is the state machine, [`DrainOptions`] its timing:
//! 1. **Lame duck** (for [`DrainOptions::delay`], default 0): `/readyz`
//!    answers `503`, but requests are still served, so a balancer that
//!    health-checks has time to stop sending new ones here.
//! 2. **Refusing**: every new request to `/mcp` gets `503` with
//!    `Retry-After` and `Connection: close`; the open notification streams
//!    (a session's `GET /mcp`, and a 2026-07-28 client's
//!    `subscriptions/listen`, a `POST` whose answer is a stream) end, so
//!    that their clients listen again elsewhere. What only answers the server within a
//!    session (JSON-RPC responses such as an elicitation's answer, and
//!    notifications such as `notifications/cancelled`) is still let in: a
//!    call in flight may be waiting on it.
//! 3. Requests in flight (a `POST /mcp` until its response body is sent)
//!    finish, for at most [`DrainOptions::grace`] (default 30 s) after
//!    refusing began; what is still running then is cut off and counted in
//!    [`DrainReport::cut`].

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use corral::{HealthStatus, Host};
use http_body::{Frame, SizeHint};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// How long in flight requests get, after refusing begins, before they are
/// cut off: 30 000 ms.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// The timing of a drain.
#[derive(Debug, Clone, Copy)]
pub struct DrainOptions {
    /// How long the replica keeps serving new requests after the drain
    /// starts, while `/readyz` already answers `503`: at least the time the
    /// balancer takes to take it out of rotation (check interval times the
    /// failures it waits for). Default 0: refuse at once.
    pub delay: Duration,
    /// How long requests in flight get to finish once refusing began.
    /// Default [`DEFAULT_GRACE`].
    pub grace: Duration,
    /// The `Retry-After` of a refused request, in whole seconds (at least
    /// 1). Default 1 s.
    pub retry_after: Duration,
}

impl Default for DrainOptions {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            grace: DEFAULT_GRACE,
            retry_after: Duration::from_secs(1),
        }
    }
}

/// How a drain ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainReport {
    /// Requests still in flight when the grace period ran out (or a second
    /// signal cut the drain short): their clients got no complete answer.
    pub cut: usize,
    /// From the start of the drain to its end.
    pub took: Duration,
}

const SERVING: u8 = 0;
const LAME_DUCK: u8 = 1;
const REFUSING: u8 = 2;

/// The drain state of one server, shared by its middleware and probes.
/// Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Drain {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    phase: AtomicU8,
    in_flight: AtomicUsize,
    idle: Notify,
    /// Cancelled when refusing begins: notification streams end.
    streams: CancellationToken,
    retry_after_secs: AtomicUsize,
}

impl Drain {
    /// A server that is serving.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the drain has started (`/readyz` answers `503`).
    pub fn is_draining(&self) -> bool {
        self.inner.phase.load(Ordering::SeqCst) != SERVING
    }

    /// Requests to `/mcp` in flight now (notification streams not counted).
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// Runs the drain (see the module docs) and reports how it ended.
    /// `cut_short` ends the wait for requests in flight early (a second
    /// signal); the delay is cut short by it too.
    pub async fn run(
        &self,
        options: DrainOptions,
        cut_short: impl Future<Output = ()>,
    ) -> DrainReport {
        let started = Instant::now();
        let retry = options.retry_after.as_secs().max(1);
        self.inner.retry_after_secs.store(
            usize::try_from(retry).unwrap_or(usize::MAX),
            Ordering::SeqCst,
        );
        self.inner.phase.store(LAME_DUCK, Ordering::SeqCst);
        tokio::pin!(cut_short);
        let mut cut_early = false;
        if !options.delay.is_zero() {
            tracing::info!(
                delay_ms = options.delay.as_millis() as u64,
                "draining: not ready; still serving while the balancer notices"
            );
            tokio::select! {
                () = tokio::time::sleep(options.delay) => {}
                () = &mut cut_short => cut_early = true,
            }
        }
        self.inner.phase.store(REFUSING, Ordering::SeqCst);
        self.inner.streams.cancel();
        tracing::info!(
            in_flight = self.in_flight(),
            grace_ms = options.grace.as_millis() as u64,
            "draining: refusing new requests; finishing those in flight"
        );
        let idle = async {
            loop {
                let notified = self.inner.idle.notified();
                if self.in_flight() == 0 {
                    return;
                }
                notified.await;
            }
        };
        if !cut_early {
            tokio::select! {
                () = idle => {}
                () = tokio::time::sleep(options.grace) => {}
                () = &mut cut_short => {}
            }
        }
        DrainReport {
            cut: self.in_flight(),
            took: started.elapsed(),
        }
    }

    fn refusing(&self) -> bool {
        self.inner.phase.load(Ordering::SeqCst) == REFUSING
    }

    fn enter(&self) -> InFlight {
        self.inner.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.inner.clone())
    }
}

/// One request in flight; leaving when dropped.
struct InFlight(Arc<Inner>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// The middleware in front of `/mcp`: refuses while refusing, counts
/// requests in flight until their response body is sent, and ends
/// notification streams when refusing begins.
pub(crate) async fn guard(State(drain): State<Drain>, request: Request, next: Next) -> Response {
    let listen = listen_stream(&request);
    let stream = listen || request.method() == Method::GET;
    // Counted before the check: once refusing begins, the drain waits for
    // every request that got past it.
    let entered = (!stream).then(|| drain.enter());
    let request = if drain.refusing() {
        match answer_to_the_server(request).await {
            Some(request) => request,
            None => return refusal(&drain),
        }
    } else {
        request
    };
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let body = Body::new(Tracked {
        inner: body,
        _in_flight: entered,
        ends: stream.then(|| Box::pin(drain.inner.streams.clone().cancelled_owned())),
    });
    Response::from_parts(parts, body)
}

/// Whether `request` is a `subscriptions/listen` (MCP 2026-07-28): a `POST`
/// whose answer is a stream that lasts as long as the client listens, so a
/// notification stream for the drain, not a request in flight. Told by its
/// `Mcp-Method` header, which that revision requires on every request and
/// rmcp checks against the body (SEP-2243), so no body is read here.
fn listen_stream(request: &Request) -> bool {
    request.method() == Method::POST
        && request
            .headers()
            .get("mcp-method")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() == "subscriptions/listen")
}

/// The largest body a refusing replica reads to tell a client's answer
/// from a new request (axum's default body limit): 2 MiB.
const ANSWER_LIMIT: usize = 2 * 1024 * 1024;

/// `request` again if it only answers this replica: a `POST` within a
/// session (`Mcp-Session-Id`) whose body is JSON-RPC responses (an
/// elicitation's answer) and notifications (`notifications/cancelled`), no
/// request. A call in flight may wait on such an answer, and a drain that
/// refused it would hold the call until the grace period cut it off. `None`
/// for anything else, which is refused.
async fn answer_to_the_server(request: Request) -> Option<Request> {
    if request.method() != Method::POST || !request.headers().contains_key("mcp-session-id") {
        return None;
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, ANSWER_LIMIT).await.ok()?;
    let message: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let answers = |m: &serde_json::Value| {
        m.is_object() && (m.get("method").is_none() || m.get("id").is_none())
    };
    let only_answers = match &message {
        serde_json::Value::Array(batch) => !batch.is_empty() && batch.iter().all(answers),
        single => answers(single),
    };
    only_answers.then(|| Request::from_parts(parts, Body::from(bytes)))
}

/// `503` with `Retry-After`, closing the connection, with a JSON-RPC error
/// body an MCP client can show.
fn refusal(drain: &Drain) -> Response {
    let retry = drain.inner.retry_after_secs.load(Ordering::SeqCst).max(1);
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32000,
        "message": format!("this corral replica is shutting down; retry in {retry} s (another replica will answer)"),
    }});
    let mut response = json_response(StatusCode::SERVICE_UNAVAILABLE, &body);
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A response body that holds its request's place in flight until it is
/// sent or dropped, and for a notification stream, ends when refusing
/// begins.
struct Tracked {
    inner: Body,
    _in_flight: Option<InFlight>,
    ends: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Some(ends) = self.ends.as_mut()
            && ends.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The state the probes read.
#[derive(Clone)]
pub(crate) struct Probes {
    pub(crate) host: Host,
    pub(crate) drain: Drain,
    /// The shared store (tasks), whose reachability `/readyz` reports.
    pub(crate) store: std::sync::Arc<dyn corral_store::SharedStore>,
}

/// `GET /healthz`.
pub(crate) async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({"status": "alive"}))
}

/// `GET /readyz`.
pub(crate) async fn readyz(State(probes): State<Probes>) -> Response {
    let pending = probes.host.pending_plugins().len();
    let draining = probes.drain.is_draining();
    let health = probes.host.health();
    let count = |status: HealthStatus| health.tools.iter().filter(|t| t.status == status).count();
    let ready = pending == 0 && !draining;
    // An unreachable store refuses new tasks, but every other call still
    // runs: reported, not made a reason to leave the rotation.
    // A probe must answer fast: the store gets 500 ms.
    let checked = tokio::time::timeout(Duration::from_millis(500), probes.store.check()).await;
    let shown = probes.store.describe();
    let store = match checked {
        Ok(Ok(())) => json!({"store": shown, "reachable": true}),
        Ok(Err(err)) => json!({"store": shown, "reachable": false,
                               "detail": format!("{err}; new MCP tasks are refused")}),
        Err(_) => json!({"store": shown, "reachable": false,
                         "detail": format!("{shown} did not answer within 500 ms; new MCP \
                                            tasks are refused")}),
    };
    // Quotas keep their buckets in this process while the shared store is
    // down: each replica then enforces them alone. Reported, not a reason
    // to leave the rotation.
    let status = probes.host.quota_status();
    let mut quotas = json!({"store": status.store, "fallback": status.fallback});
    if let (Some(since), Some(error)) = (status.since, status.error) {
        quotas["since"] = json!(humantime::format_rfc3339_seconds(since).to_string());
        quotas["detail"] = json!(format!(
            "{error}; quotas are kept in this replica's memory, each replica enforcing them alone"
        ));
    }
    let body = json!({
        "ready": ready,
        "draining": draining,
        "plugins_pending": pending,
        "quotas": quotas,
        "status": health.status,
        "tools": {
            "up": count(HealthStatus::Up),
            "degraded": count(HealthStatus::Degraded),
            "down": count(HealthStatus::Down),
            "unknown": count(HealthStatus::Unknown),
        },
        "store": store,
    });
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(status, &body)
}

/// `status` with `body` as `application/json`.
fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        format!("{body}\n"),
    )
        .into_response()
}
