//! The circuit breaker (reference 003's `circuitBreaker`): after
//! `failure_threshold` consecutive failed calls of a tool (after retries;
//! only failures that are the tool's, see `is_tool_failure`), its calls fail
//! at once with [`CallError::CircuitOpen`] for `cool_down_ms`; then one probe
//! call goes through (half-open). A success closes the circuit, a failure
//! opens it for another cool-down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tower::{Service, ServiceExt as _};

use crate::call::CallOutput;
use crate::compose::CallFuture;
use crate::error::CallError;
use crate::stages::{DispatchService, Invocation};

/// One tool's circuit.
#[derive(Debug, Default)]
struct Circuit {
    /// Consecutive failed calls.
    failures: u32,
    /// Open until this instant.
    open_until: Option<Instant>,
    /// A probe is running (half-open).
    probing: bool,
}

#[derive(Clone)]
pub(super) struct Breaker {
    inner: DispatchService,
    circuits: Arc<Mutex<HashMap<(String, String), Circuit>>>,
}

impl Breaker {
    pub(super) fn new(inner: DispatchService) -> Self {
        Self {
            inner,
            circuits: Arc::default(),
        }
    }
}

impl Service<Invocation> for Breaker {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let inner = self.inner.clone();
        let circuits = self.circuits.clone();
        Box::pin(async move {
            let Some(config) = invocation.tool.resilience().circuit_breaker else {
                return inner.oneshot(invocation).await;
            };
            let key = super::state_key(&invocation);
            let tool = key.0.clone();
            // Decide: closed, open (fail fast) or half-open (this call probes).
            {
                let mut circuits = circuits.lock().unwrap_or_else(|p| p.into_inner());
                let circuit = circuits.entry(key.clone()).or_default();
                if let Some(until) = circuit.open_until {
                    let now = Instant::now();
                    if now < until || circuit.probing {
                        let retry_in = until.saturating_duration_since(now);
                        metrics::counter!("corral_circuit_rejections_total", "tool" => tool.clone())
                            .increment(1);
                        return Err(CallError::CircuitOpen {
                            tool,
                            failures: circuit.failures,
                            retry_in_ms: retry_in.as_millis() as u64,
                        });
                    }
                    circuit.probing = true;
                }
            }
            let result = inner.oneshot(invocation).await;
            let mut circuits = circuits.lock().unwrap_or_else(|p| p.into_inner());
            let circuit = circuits.entry(key).or_default();
            let failed = matches!(&result, Err(err) if super::is_tool_failure(err));
            circuit.probing = false;
            if failed {
                circuit.failures += 1;
                if circuit.failures >= config.failure_threshold {
                    if circuit.open_until.is_none() {
                        tracing::warn!(
                            tool = tool.as_str(),
                            failures = circuit.failures,
                            "circuit opened: calls fail fast for {} ms",
                            config.cool_down_ms
                        );
                    }
                    circuit.open_until =
                        Some(Instant::now() + Duration::from_millis(config.cool_down_ms));
                }
            } else if result.is_ok() {
                if circuit.open_until.is_some() {
                    tracing::info!(tool = tool.as_str(), "circuit closed: the probe succeeded");
                }
                *circuit = Circuit::default();
            }
            result
        })
    }
}
