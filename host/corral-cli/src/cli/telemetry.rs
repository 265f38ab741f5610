//! What the process reports: the log on stderr (level from `-v` or
//! `RUST_LOG`) and, when an OTLP endpoint is configured, traces exported
//! over OTLP/HTTP with protobuf (OpenTelemetry).
//!
//! Traces are the spans of the call pipeline ([`corral::SPAN_TARGET`]:
//! `corral.call` and its stages) and of the MCP server
//! ([`corral_mcp::trace::SPAN_TARGET`]: `tools/call`, continuing the
//! client's W3C trace context), whatever the log level. The endpoint:
//! `--otlp-endpoint URL` or `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's
//! base URL; spans go to `URL/v1/traces`), or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is). With none of them
//! nothing is exported and no exporter runs. The resource says
//! `service.name = corral`, `service.version` and `service.instance.id` (the
//! replica id). Spans are sent in batches from a thread of the exporter's;
//! [`Telemetry::shutdown`] sends what is left before the process exits.

use anyhow::Context as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The exporter, if one runs; flushed by [`Telemetry::shutdown`].
#[must_use = "call shutdown before exiting, or the last spans are lost"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Sends the spans not sent yet and stops the exporter.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(err) = provider.shutdown()
        {
            eprintln!("corral: warning: the last spans were not exported: {err}");
        }
    }
}

/// Installs the global subscriber: the stderr log at `log_filter`
/// (an `EnvFilter` directive, `RUST_LOG` overriding it), and the OTLP
/// exporter when `endpoint` (the base URL) or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set.
///
/// # Errors
/// When the exporter cannot be built (an endpoint that is not a URL).
pub fn init(log_filter: &str, endpoint: Option<&str>, replica: &str) -> anyhow::Result<Telemetry> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(log_filter));
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .with_filter(filter);
    let traces_endpoint = std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
        .or_else(|| endpoint.map(|base| format!("{}/v1/traces", base.trim_end_matches('/'))));
    let Some(url) = traces_endpoint else {
        tracing_subscriber::registry().with(log).init();
        return Ok(Telemetry { provider: None });
    };
    // reqwest is built without a TLS provider of its own (features unified
    // with the distribution client's), and its client wants one even for
    // plain HTTP: use ring, as the distribution client does.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(&url)
        .build()
        .with_context(|| format!("cannot export traces to {url}"))?;
    let resource = Resource::builder()
        .with_service_name("corral")
        .with_attributes([
            opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            opentelemetry::KeyValue::new("service.instance.id", replica.to_string()),
        ])
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let spans = Targets::new()
        .with_target(corral::SPAN_TARGET, Level::INFO)
        .with_target(corral_mcp::trace::SPAN_TARGET, Level::INFO);
    let traces = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("corral"))
        .with_filter(spans);
    tracing_subscriber::registry().with(log).with(traces).init();
    tracing::info!(endpoint = url, "exporting traces over OTLP/HTTP");
    Ok(Telemetry {
        provider: Some(provider),
    })
}
