//! The rate-limit layer (TnsAI's `@RateLimit`, docs/references.md), checked
//! before any attempt so one call takes one slot however often it is
//! retried. Two budgets can apply: the tool's own and its plugin's shared
//! one, each a [`Limiter`] in the tool's runtime state. When a budget is
//! spent the call waits for a slot up to `wait_timeout_ms`, or, with
//! `throw_on_limit`, fails at once with [`CallError::RateLimited`].

use std::task::{Context, Poll};
use std::time::Duration;

use tower::{Service, ServiceExt as _};

use super::Inner;
use super::limiter::Limiter;
use crate::call::CallOutput;
use crate::call::compose::CallFuture;
use crate::call::stages::Invocation;
use corral_sandbox::CallError;

/// Waits for (or refuses) one slot of `limiter` for `invocation`.
async fn take(budgets: &Limiter, invocation: &Invocation) -> Result<(), CallError> {
    let limiter = budgets.budget(&invocation.context);
    if limiter.check().is_ok() {
        return Ok(());
    }
    let refuse = || {
        metrics::counter!("corral_rate_limited_total", "tool" => invocation.tool.state().label())
            .increment(1);
        CallError::RateLimited {
            tool: invocation.tool.spec().name.clone(),
            limit: budgets.describe.to_string(),
        }
    };
    if budgets.config.throw_on_limit {
        return Err(refuse());
    }
    let wait = Duration::from_millis(budgets.config.wait_timeout_ms);
    tokio::time::timeout(wait, limiter.until_ready())
        .await
        .map_err(|_| refuse())
}

/// The rate-limit layer: reads the tool's limiters from the invocation.
#[derive(Clone)]
pub(super) struct RateLimit<S> {
    inner: S,
}

impl<S> RateLimit<S> {
    pub(super) fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S: Inner> Service<Invocation> for RateLimit<S> {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let state = invocation.tool.state();
        if state.rate.is_none() && state.plugin_rate.is_none() {
            return self.inner.call(invocation);
        }
        let inner = self.inner.clone();
        Box::pin(async move {
            let tool = invocation.tool.clone();
            let state = tool.state();
            if let Some(limiter) = &state.plugin_rate {
                take(limiter, &invocation).await?;
            }
            if let Some(limiter) = &state.rate {
                take(limiter, &invocation).await?;
            }
            inner.oneshot(invocation).await
        })
    }
}
