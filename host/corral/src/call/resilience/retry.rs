//! The retry layer (TnsAI's `@Retry`, docs/references.md; innermost, closest
//! to the sandbox): an idempotent tool's transient failures (a timeout, a
//! crash, an `execution-failed` the guest marks retryable) are tried again
//! with exponential backoff (the schedule is `backon`'s), each
//! attempt a fresh instance under the full limits. Never retried: invalid
//! arguments, a denial, a configuration error, a limit the guest would hit
//! again (fuel, memory, stack, output). The result says how many attempts it
//! took; each retry is logged and counted in `corral_retries_total{tool}`.

use std::task::{Context, Poll};
use std::time::Duration;

use backon::{BackoffBuilder as _, ExponentialBuilder};
use tower::{Service, ServiceExt as _};

use super::Inner;
use crate::RetryConfig;
use crate::call::CallOutput;
use crate::call::compose::CallFuture;
use crate::call::stages::Invocation;
use corral_sandbox::CallError;

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
pub(super) struct Retry<S> {
    inner: S,
}

impl<S> Retry<S> {
    pub(super) fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S: Inner> Service<Invocation> for Retry<S> {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let Some(config) = invocation.tool.resilience().retry else {
            return self.inner.call(invocation);
        };
        let inner = self.inner.clone();
        Box::pin(async move {
            // The first attempt costs nothing more than a call without retry.
            // The backoff schedule is only built after a transient failure,
            // in a future of its own, boxed then: the loop's timer, backoff
            // and log line stay out of every call's future (BENCHMARKS.md,
            // issue 51).
            match inner.clone().oneshot(invocation.clone()).await {
                Ok(out) => Ok(CallOutput { attempts: 1, ..out }),
                Err(err) if !transient(&err) => Err(err),
                Err(err) => Box::pin(again(inner, invocation, config, err)).await,
            }
        })
    }
}

/// Attempts 2 onwards of `invocation`, each after its delay, once the first
/// failed with the transient `first`. Returns the first success, the first
/// failure that is not transient, or the last failure when every attempt
/// fails.
async fn again<S: Inner>(
    inner: S,
    invocation: Invocation,
    config: RetryConfig,
    first: CallError,
) -> Result<CallOutput, CallError> {
    let mut last = first;
    let mut backoff = ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(config.initial_delay_ms))
        .with_factor(config.multiplier)
        .with_max_delay(Duration::from_millis(config.max_delay_ms))
        .with_max_times(config.max_attempts.saturating_sub(1) as usize);
    if config.jitter {
        backoff = backoff.with_jitter();
    }
    let tool = invocation.tool.clone();
    for (attempts, delay) in (2..).zip(backoff.build()) {
        metrics::counter!("corral_retries_total", "tool" => tool.state().label()).increment(1);
        tracing::info!(
            tool = tool.spec().name.as_str(),
            kind = last.kind(),
            delay_ms = delay.as_millis() as u64,
            "retrying after a transient failure: {last}"
        );
        tokio::time::sleep(delay).await;
        match inner.clone().oneshot(invocation.clone()).await {
            Ok(out) => return Ok(CallOutput { attempts, ..out }),
            Err(err) if !transient(&err) => return Err(err),
            Err(err) => last = err,
        }
    }
    Err(last)
}
