//! The rate limit (reference 003's `@RateLimit`), checked before any attempt
//! so one call takes one slot however often it is retried. Two budgets can
//! apply: the tool's own and its plugin's shared one (`governor`'s keyed
//! limiters), each optionally split by the value of a context key (a tenant).
//! When a budget is spent the call waits for a slot up to `wait_timeout_ms`,
//! or, with `throw_on_limit`, fails at once with [`CallError::RateLimited`].

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota};
use tower::{Service, ServiceExt as _};

use super::config::RateLimitConfig;
use crate::call::CallOutput;
use crate::compose::CallFuture;
use crate::error::CallError;
use crate::stages::{DispatchService, Invocation};

type Limiter = Arc<DefaultKeyedRateLimiter<String>>;

#[derive(Clone)]
pub(super) struct RateLimit {
    inner: DispatchService,
    /// One keyed limiter per budget: (scope, plugin digest, tool or plugin).
    limiters: Arc<Mutex<HashMap<(String, String), Limiter>>>,
}

impl RateLimit {
    pub(super) fn new(inner: DispatchService) -> Self {
        Self {
            inner,
            limiters: Arc::default(),
        }
    }

    fn limiter(&self, key: (String, String), config: &RateLimitConfig) -> Limiter {
        let mut limiters = self.limiters.lock().unwrap_or_else(|p| p.into_inner());
        limiters
            .entry(key)
            .or_insert_with(|| Arc::new(DefaultKeyedRateLimiter::keyed(quota(config))))
            .clone()
    }
}

/// `requests` per period, with `burst_size` (default `requests`) at once.
fn quota(config: &RateLimitConfig) -> Quota {
    let requests = NonZeroU32::new(config.requests.max(1)).unwrap_or(NonZeroU32::MIN);
    let burst = NonZeroU32::new(config.burst_size.unwrap_or(config.requests).max(1))
        .unwrap_or(NonZeroU32::MIN);
    let every = Duration::from_millis(config.per.millis()) / requests.get();
    Quota::with_period(every.max(Duration::from_nanos(1)))
        .unwrap_or_else(|| Quota::per_second(requests))
        .allow_burst(burst)
}

/// Waits for (or refuses) one slot of `limiter` under `config`.
async fn take(
    limiter: &Limiter,
    config: &RateLimitConfig,
    invocation: &Invocation,
    scope: &str,
) -> Result<(), CallError> {
    let key = config
        .per_context_key
        .as_ref()
        .and_then(|k| invocation.context.iter().find(|(name, _)| name == k))
        .map(|(_, value)| value.clone())
        .unwrap_or_default();
    if limiter.check_key(&key).is_ok() {
        return Ok(());
    }
    let tool = invocation.tool.spec().name.clone();
    let refuse = || {
        metrics::counter!("corral_rate_limited_total", "tool" => tool.clone()).increment(1);
        CallError::RateLimited {
            tool: tool.clone(),
            limit: format!(
                "{} per {} ({scope})",
                config.requests,
                match config.per {
                    super::Per::Second => "second",
                    super::Per::Minute => "minute",
                    super::Per::Hour => "hour",
                }
            ),
        }
    };
    if config.throw_on_limit {
        return Err(refuse());
    }
    let wait = Duration::from_millis(config.wait_timeout_ms);
    tokio::time::timeout(wait, limiter.until_key_ready(&key))
        .await
        .map_err(|_| refuse())
}

impl Service<Invocation> for RateLimit {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let resilience = invocation.tool.resilience();
        let (tool_config, plugin_config) = (
            resilience.rate_limit.clone(),
            resilience.plugin_rate_limit.clone(),
        );
        if tool_config.is_none() && plugin_config.is_none() {
            return Box::pin(self.inner.clone().oneshot(invocation));
        }
        let (tool, sha256) = super::state_key(&invocation);
        let (plugin, _) = invocation.tool.provider_identity();
        let tool_limiter = tool_config.as_ref().map(|c| {
            (
                self.limiter((format!("tool:{tool}"), sha256.clone()), c),
                c.clone(),
            )
        });
        let plugin_limiter = plugin_config.as_ref().map(|c| {
            (
                self.limiter((format!("plugin:{plugin}"), sha256.clone()), c),
                c.clone(),
            )
        });
        let inner = self.inner.clone();
        Box::pin(async move {
            if let Some((limiter, config)) = &plugin_limiter {
                take(limiter, config, &invocation, "the plugin's limit").await?;
            }
            if let Some((limiter, config)) = &tool_limiter {
                take(limiter, config, &invocation, "the tool's limit").await?;
            }
            inner.oneshot(invocation).await
        })
    }
}
