//! The retry layer (innermost, closest to the sandbox): an idempotent tool's
//! transient failures (a timeout, a crash, an `execution-failed` the guest
//! marks retryable) are tried again with exponential backoff (`backon`), each
//! attempt a fresh instance under the full limits. Never retried: invalid
//! arguments, a denial, a configuration error, a limit the guest would hit
//! again (fuel, memory, stack, output). The result says how many attempts it
//! took; each retry is logged and counted in `corral_retries_total{tool}`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable as _};
use tower::{Service, ServiceExt as _};

use crate::call::CallOutput;
use crate::compose::CallFuture;
use crate::error::CallError;
use crate::stages::{DispatchService, Invocation};

/// Whether a failure may go away on its own.
fn transient(err: &CallError) -> bool {
    matches!(
        err,
        CallError::Timeout { .. }
            | CallError::Trapped { .. }
            | CallError::ToolFailed {
                retryable: true,
                ..
            }
    )
}

#[derive(Clone)]
pub(super) struct Retry {
    inner: DispatchService,
}

impl Retry {
    pub(super) fn new(inner: DispatchService) -> Self {
        Self { inner }
    }
}

impl Service<Invocation> for Retry {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move {
            let Some(config) = invocation.tool.resilience().retry else {
                return inner.oneshot(invocation).await;
            };
            let mut backoff = ExponentialBuilder::new()
                .with_min_delay(Duration::from_millis(config.initial_delay_ms))
                .with_factor(config.multiplier)
                .with_max_delay(Duration::from_millis(config.max_delay_ms))
                .with_max_times(config.max_attempts.saturating_sub(1) as usize);
            if config.jitter {
                backoff = backoff.with_jitter();
            }
            let attempts = Arc::new(AtomicU32::new(0));
            let tool = invocation.tool.spec().name.clone();
            let result = {
                let attempts = attempts.clone();
                (move || {
                    attempts.fetch_add(1, Ordering::SeqCst);
                    inner.clone().oneshot(invocation.clone())
                })
                .retry(backoff)
                .when(transient)
                .notify(|err, delay| {
                    metrics::counter!("corral_retries_total", "tool" => tool.clone()).increment(1);
                    tracing::info!(
                        tool = tool.as_str(),
                        kind = err.kind(),
                        delay_ms = delay.as_millis() as u64,
                        "retrying after a transient failure: {err}"
                    );
                })
                .await
            };
            let attempts = attempts.load(Ordering::SeqCst);
            result.map(|mut out| {
                out.attempts = attempts;
                out
            })
        })
    }
}
