//! The `fetch` sample plugin: HTTP GET through `wasi:http` (the `wasip2`
//! bindings, blocking), which corral gates per plugin. Without an
//! `[http] allow` entry in `fetch.policy.toml` for the destination, the host
//! refuses the request (`HTTP-request-denied`) and the tool says so.
//!
//! It uses the contract's 0.2.0 metadata: it is idempotent, suggests three
//! attempts and five requests a second (its policy may say otherwise), marks
//! a 5xx answer as a retryable failure, and declares the schema of its
//! result, which the host checks on every call.

use corral_guest::{Level, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// Default cap on the returned body text, in bytes.
const DEFAULT_MAX_BYTES: usize = 16 * 1024;

fn default_max_bytes() -> usize {
    DEFAULT_MAX_BYTES
}

#[derive(Deserialize, JsonSchema)]
struct FetchArgs {
    /// The URL to GET, `http://` or `https://`.
    #[schemars(regex(pattern = r"^https?://"))]
    url: String,
    /// Return at most this many bytes of the body (default 16384).
    #[serde(default = "default_max_bytes")]
    #[schemars(range(min = 1, max = 1048576))]
    max_bytes: usize,
}

/// What `fetch_url` returns (its declared output schema).
#[derive(Serialize, JsonSchema)]
struct Fetched {
    /// The URL that was fetched.
    url: String,
    /// The HTTP status, 100 to 499 (a 5xx is a retryable failure instead).
    #[schemars(range(min = 100, max = 499))]
    status: u16,
    /// The response's `content-type`, if it sent one.
    content_type: Option<String>,
    /// Bytes of the whole body.
    bytes: usize,
    /// Whether the body was cut to `max_bytes`.
    truncated: bool,
    /// The body text (at most `max_bytes`).
    body: String,
}

/// GET a URL and return its status, content type and body text (cut to
/// `max_bytes`). Only hosts that the plugin's policy allows are reachable.
#[tool(
    category = "web",
    keywords("http", "fetch", "get", "url", "download"),
    latency = "slow",
    idempotent,
    output_schema,
    max_attempts = 3,
    requests_per_second = 5
)]
fn fetch_url(args: FetchArgs) -> Result<Fetched, ToolError> {
    let url = &args.url;
    let uri: http::Uri = url
        .parse()
        .map_err(|e| ToolError::invalid(format!("`{url}` is not a URL: {e}")))?;
    let authority = uri
        .authority()
        .ok_or_else(|| ToolError::invalid(format!("`{url}` has no host")))?;
    let scheme = match uri.scheme_str() {
        Some("https") => Scheme::Https,
        Some("http") => Scheme::Http,
        _ => {
            return Err(ToolError::invalid(
                "only http and https URLs can be fetched",
            ));
        }
    };
    let path = uri.path_and_query().map_or("/", |p| p.as_str());

    let request = OutgoingRequest::new(Fields::new());
    let setup = |ok: Result<(), ()>, what: &str| {
        ok.map_err(|()| ToolError::invalid(format!("`{url}`: the {what} is not acceptable")))
    };
    setup(request.set_method(&Method::Get), "method")?;
    setup(request.set_scheme(Some(&scheme)), "scheme")?;
    setup(request.set_authority(Some(authority.as_str())), "host")?;
    setup(request.set_path_with_query(Some(path)), "path")?;
    let body = request
        .body()
        .map_err(|()| ToolError::failed("the request body is unavailable"))?;
    OutgoingBody::finish(body, None).map_err(|code| failure(url, &code))?;

    corral_guest::progress(&format!("GET {url}"));
    let pending = outgoing_handler::handle(request, None).map_err(|code| failure(url, &code))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(failure(url, &code)),
        Some(Err(())) | None => return Err(ToolError::failed(format!("GET {url}: no response"))),
    };
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .first()
        .map(|v| String::from_utf8_lossy(v).into_owned());

    let body = response
        .consume()
        .map_err(|()| ToolError::failed("the response body is unavailable"))?;
    let stream = body
        .stream()
        .map_err(|()| ToolError::failed("the response body is unavailable"))?;
    let mut bytes = Vec::new();
    let mut total = 0usize;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                total += chunk.len();
                let room = args.max_bytes.saturating_sub(bytes.len());
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(ToolError::failed(format!(
                    "reading the body of {url} failed: {}",
                    e.to_debug_string()
                )));
            }
        }
    }
    corral_guest::log(Level::Info, &format!("GET {url} -> {status}"));
    if status >= 500 {
        // The server's trouble, likely passing: worth another attempt.
        return Err(ToolError::failed(format!("GET {url} -> {status}")).retryable());
    }
    Ok(Fetched {
        url: url.clone(),
        status,
        content_type,
        bytes: total,
        truncated: total > bytes.len(),
        body: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// The tool error for a `wasi:http` error code.
fn failure(url: &str, code: &ErrorCode) -> ToolError {
    match code {
        ErrorCode::HttpRequestDenied => ToolError::failed(format!(
            "the host denied the request to {url}: it is not in this plugin's HTTP \
             allow-list (grant it in fetch.policy.toml)"
        )),
        ErrorCode::DestinationIpProhibited => ToolError::failed(format!(
            "the host refused {url}: the name resolves to an internal address (loopback, \
             a private network or a cloud metadata service)"
        )),
        other => ToolError::failed(format!("GET {url} failed: {other:?}")),
    }
}

corral_guest::plugin!(fetch_url);
