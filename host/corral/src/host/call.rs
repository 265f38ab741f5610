//! [`Host::call`] and [`Host::call_value`]: one call through the call
//! pipeline ([`crate::call::stages`]) inside its `corral.call` span, then recorded
//! (log line, metrics, the tool's health window).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tracing::Instrument as _;

use super::Host;
use crate::call::stages::{self, RawArguments};
use crate::call::{CallOptions, CallOutput};
use corral_sandbox::CallError;

impl Host {
    /// Calls `name` with `arguments` (JSON text of an object).
    ///
    /// Every call takes the same stages (`ARCHITECTURE.md` lists them): look up the
    /// tool, parse and validate the arguments against its schema (no guest
    /// code runs for invalid arguments), compute its limits, pass the
    /// approval gate, wait for a pool slot (and, for tools that are not
    /// parallelizable, for the tool's previous call), run in a fresh sandbox
    /// under every limit, classify the outcome and check the output size,
    /// then log and count it.
    ///
    /// # Errors
    /// One [`CallError`] class per way a call can fail; see its variants.
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        options: &CallOptions,
    ) -> Result<CallOutput, CallError> {
        self.call_raw(name, RawArguments::Text(Arc::from(arguments)), options)
            .await
    }

    /// Like [`Host::call`], with arguments already parsed (MCP, plan and
    /// pipeline steps): they are validated as they are, never re-parsed.
    ///
    /// # Errors
    /// As [`Host::call`].
    pub async fn call_value(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<CallOutput, CallError> {
        let text = Arc::from(arguments.to_string());
        self.call_raw(name, RawArguments::Parsed(arguments, text), options)
            .await
    }

    async fn call_raw(
        &self,
        name: &str,
        arguments: RawArguments,
        options: &CallOptions,
    ) -> Result<CallOutput, CallError> {
        use tracing::field::Empty;
        // The call's span (`stages` lists the spans and their attributes):
        // its fields are filled in once the call is over.
        let span = tracing::info_span!(
            target: stages::SPAN_TARGET,
            "corral.call",
            corral.tool = name,
            corral.plugin = Empty,
            corral.plugin.sha256 = Empty,
            corral.fuel = Empty,
            corral.attempts = Empty,
            corral.outcome = Empty,
            otel.status_code = Empty,
        );
        // Pinned where it is made, and instrumented by reference: the span's
        // wrapper then holds a pointer, not a moved copy of the whole call's
        // future (BENCHMARKS.md, issue 51).
        let traced = std::pin::pin!(self.call_traced(name, arguments, options));
        let result = traced.instrument(span.clone()).await;
        if !span.is_disabled() {
            match &result {
                Ok(out) => {
                    // As i64: OpenTelemetry's integers are signed.
                    span.record(
                        "corral.fuel",
                        i64::try_from(out.fuel_consumed).unwrap_or(i64::MAX),
                    );
                    span.record("corral.attempts", i64::from(out.attempts));
                    span.record("corral.outcome", "ok");
                }
                Err(err) => {
                    span.record("corral.outcome", err.kind());
                    span.record("otel.status_code", "ERROR");
                }
            }
        }
        result
    }

    /// [`Host::call_raw`] inside the call's span.
    async fn call_traced(
        &self,
        name: &str,
        arguments: RawArguments,
        options: &CallOptions,
    ) -> Result<CallOutput, CallError> {
        let started = Instant::now();
        let input = match &arguments {
            RawArguments::Text(text) | RawArguments::Parsed(_, text) => text.clone(),
        };
        let mut catalog = self.catalog();
        let mut tool = catalog.tool(name).cloned();
        if tool.is_none() && !catalog.pending().is_empty() {
            self.wait_for_tool(
                name,
                self.inner.env.limits.timeout(),
                options.progress.as_ref(),
            )
            .await;
            catalog = self.catalog();
            tool = catalog.tool(name).cloned();
        }
        // The build that runs the call, named before a reload can replace it.
        if let Some(crate::catalog::registry::Provider::Plugin(plugin)) =
            tool.as_ref().map(|t| t.provider())
        {
            let span = tracing::Span::current();
            span.record("corral.plugin", plugin.name());
            span.record("corral.plugin.sha256", plugin.sha256());
        }
        let result = stages::run(
            &self.inner.env,
            catalog,
            tool.clone(),
            self,
            name,
            arguments,
            options,
            started,
        )
        .await;
        let keys = tool.as_ref().map(|tool| &tool.state().call_metrics);
        let took = stages::record(name, keys, &input, &result, started);
        if let Some(tool) = tool {
            // The tool's health counts its own failures and real runs only.
            let ok = match &result {
                Ok(out) => (!out.cache_hit && out.attempts > 0).then_some(true),
                Err(err) => crate::call::resilience::is_tool_failure(err).then_some(false),
            };
            if let Some(ok) = ok {
                let state = tool.state();
                state.health.record(
                    name,
                    state.label(),
                    ok,
                    took,
                    self.inner.env.health.changes(),
                );
            }
        }
        result
    }
}
