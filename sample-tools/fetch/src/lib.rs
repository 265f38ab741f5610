//! The `fetch` sample plugin: HTTP GET through `wasi:http` (the `wasip2`
//! bindings, blocking), which corral gates per plugin. Without an
//! `[http] allow` entry in `fetch.policy.toml` for the destination, the host
//! refuses the request (`HTTP-request-denied`) and the tool says so.

use corral_guest::{Level, ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
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

/// GET a URL and return its status, content type and body text (cut to
/// `max_bytes`). Only hosts that the plugin's policy allows are reachable.
#[tool(
    category = "web",
    keywords("http", "fetch", "get", "url", "download"),
    latency = "slow",
    idempotent
)]
fn fetch_url(args: FetchArgs) -> Result<Value, ToolError> {
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
    Ok(json!({
        "url": url,
        "status": status,
        "content_type": content_type,
        "bytes": total,
        "truncated": total > bytes.len(),
        "body": String::from_utf8_lossy(&bytes),
    }))
}

/// The tool error for a `wasi:http` error code.
fn failure(url: &str, code: &ErrorCode) -> ToolError {
    match code {
        ErrorCode::HttpRequestDenied => ToolError::failed(format!(
            "the host denied the request to {url}: it is not in this plugin's HTTP \
             allow-list (grant it in fetch.policy.toml)"
        )),
        other => ToolError::failed(format!("GET {url} failed: {other:?}")),
    }
}

corral_guest::plugin!(fetch_url);
