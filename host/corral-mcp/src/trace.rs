//! Traces across the MCP boundary: each `tools/call` is a server span that
//! continues the client's trace, so an agent's turn and the tool calls it
//! made (a plan's steps included) are one trace.
//!
//! The client's context is W3C Trace Context (`traceparent`, `tracestate`),
//! read from the request's `_meta` (MCP SEP-414, as MCP 2026-07-28 clients
//! send it) or else from the HTTP request's headers (streamable HTTP). A
//! request without one starts a new trace. The span is named
//! `tools/call {tool}` with `mcp.method.name`, `gen_ai.tool.name` and
//! `jsonrpc.request.id` (OpenTelemetry's MCP conventions), and the host's
//! `corral.call` span is its child ([`corral::SPAN_TARGET`]).
//!
//! Nothing here exports: without a subscriber that does (`corral serve`
//! with an OTLP endpoint), the span is a disabled callsite and no context is
//! read.

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::RoleServer;
use rmcp::model::MetaObject;
use rmcp::service::RequestContext;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The `tracing` target of the MCP server's spans.
pub const SPAN_TARGET: &str = "corral_mcp::span";

/// The server span of a `tools/call` of `tool`, continuing the trace the
/// request carries (`meta` first, then the HTTP headers in `context`).
pub(crate) fn tools_call_span(
    tool: &str,
    meta: &MetaObject,
    context: &RequestContext<RoleServer>,
) -> tracing::Span {
    // The id is the client's text: recorded as a string, which the log
    // escapes, never through `Display` into the log raw.
    let id = context.id.to_string();
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "tools/call",
        otel.name = format!("tools/call {tool}"),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.tool.name = tool,
        jsonrpc.request.id = id.as_str(),
    );
    if span.is_disabled() {
        return span;
    }
    let propagator = TraceContextPropagator::new();
    let parent = if meta.get_traceparent().is_some() {
        propagator.extract(&MetaCarrier(meta))
    } else if let Some(parts) = context.extensions.get::<http::request::Parts>() {
        propagator.extract(&opentelemetry_http::HeaderExtractor(&parts.headers))
    } else {
        return span;
    };
    // An invalid traceparent yields an empty context: a new trace.
    let _ = span.set_parent(parent);
    span
}

/// The request's `_meta` as a carrier of `traceparent` and `tracestate`.
struct MetaCarrier<'a>(&'a MetaObject);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.0.get_traceparent(),
            "tracestate" => self.0.get_tracestate(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}
