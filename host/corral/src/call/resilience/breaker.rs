//! The circuit breaker layer (TnsAI's circuit breaker, docs/references.md):
//! after `failure_threshold` consecutive failed calls of a tool (after
//! retries; only failures that are the tool's, see `is_tool_failure`), its
//! calls fail at once with [`CallError::CircuitOpen`] for `cool_down_ms`;
//! then one probe call goes through (half-open). A success closes the
//! circuit, a failure opens it for another cool-down. The state is the
//! tool's [`Circuit`](super::circuit::Circuit); a cancelled probe releases its slot on drop.

use std::task::{Context, Poll};
use std::time::Instant;

use tower::{Service, ServiceExt as _};

use super::Inner;
use super::circuit::{Admission, Change};
use crate::call::CallOutput;
use crate::call::compose::CallFuture;
use crate::call::stages::Invocation;
use corral_sandbox::CallError;

/// The breaker layer: reads the tool's circuit from the invocation.
#[derive(Clone)]
pub(super) struct Breaker<S> {
    inner: S,
}

impl<S> Breaker<S> {
    pub(super) fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S: Inner> Service<Invocation> for Breaker<S> {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        if invocation.tool.state().circuit.is_none() {
            return self.inner.call(invocation);
        }
        let inner = self.inner.clone();
        Box::pin(async move {
            let tool = invocation.tool.clone();
            let state = tool.state();
            let Some(circuit) = state.circuit.as_ref() else {
                return inner.oneshot(invocation).await;
            };
            let _probe = match circuit.admit(Instant::now()) {
                Admission::Closed => None,
                Admission::Probe(guard) => Some(guard),
                Admission::Rejected {
                    failures,
                    retry_in_ms,
                } => {
                    metrics::counter!("corral_circuit_rejections_total", "tool" => state.label())
                        .increment(1);
                    return Err(CallError::CircuitOpen {
                        tool: tool.spec().name.clone(),
                        failures,
                        retry_in_ms,
                    });
                }
            };
            let result = inner.oneshot(invocation).await;
            let failed = matches!(&result, Err(err) if super::is_tool_failure(err));
            match circuit.record(failed, Instant::now()) {
                Some(Change::Opened { failures }) => tracing::warn!(
                    tool = tool.spec().name.as_str(),
                    failures,
                    "circuit opened: calls fail fast for {} ms",
                    circuit.config.cool_down_ms
                ),
                Some(Change::Closed) => tracing::info!(
                    tool = tool.spec().name.as_str(),
                    "circuit closed: the probe succeeded"
                ),
                None => {}
            }
            result
        })
    }
}
