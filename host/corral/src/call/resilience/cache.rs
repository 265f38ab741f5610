//! The result cache (TnsAI's `@Cached`, docs/references.md; outermost): a
//! successful result of an idempotent tool is reused for `ttl_ms`, for the
//! same tool build and settings (each owns its cache, in its
//! [`ToolState`](crate::catalog::state::ToolState)), the same arguments (canonical
//! JSON: keys sorted) and the same context pairs the plugin is allowed to
//! see, so two tenants never share an entry. A hit runs no guest code and
//! takes no rate-limit slot; it is marked `cache_hit` with no fuel and no
//! attempts. At most `max_size` results are kept per tool build
//! ([`ResultCache`](super::results::ResultCache)). Failures are not cached
//! unless `cache_errors`.

use std::io::Write as _;
use std::task::{Context, Poll};

use sha2::{Digest as _, Sha256};
use tower::{Service, ServiceExt as _};

use super::Inner;
use crate::call::CallOutput;
use crate::call::compose::CallFuture;
use crate::call::stages::Invocation;
use corral_sandbox::CallError;

#[derive(Clone)]
pub(super) struct Cache<S> {
    inner: S,
    /// Where the TTL's time comes from (`HostBuilder::clock`).
    clock: super::clock::Clock,
}

impl<S> Cache<S> {
    pub(super) fn new(inner: S, clock: super::clock::Clock) -> Self {
        Self { inner, clock }
    }
}

/// The entry key: sha256 of the canonical arguments and the context pairs
/// the plugin sees (the tool and its build are the cache's own).
fn entry_key(invocation: &Invocation) -> [u8; 32] {
    let mut hash = Sha256::new();
    // serde_json's map is ordered, so this is canonical JSON, written
    // straight into the hash. Writing to a hash cannot fail.
    let _ = serde_json::to_writer(&mut hash, invocation.arguments.value.as_ref());
    let _ = hash.write_all(&[0]);
    for (key, value) in invocation.context.iter() {
        hash.update(key.as_bytes());
        hash.update([0]);
        hash.update(value.as_bytes());
        hash.update([0]);
    }
    hash.finalize().into()
}

impl<S: Inner> Service<Invocation> for Cache<S> {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        if invocation.tool.state().cache.is_none() {
            return self.inner.call(invocation);
        }
        let cache_errors = invocation
            .tool
            .resilience()
            .cache
            .is_some_and(|c| c.cache_errors);
        let inner = self.inner.clone();
        let clock = self.clock.clone();
        Box::pin(async move {
            let tool = invocation.tool.clone();
            let Some(cache) = tool.state().cache.as_ref() else {
                return inner.oneshot(invocation).await;
            };
            let key = entry_key(&invocation);
            let label = tool.state().label();
            if let Some(hit) = cache.get(&key, clock.now()) {
                metrics::counter!("corral_cache_hits_total", "tool" => label).increment(1);
                return hit.map(|out| CallOutput {
                    duration: invocation.started.elapsed(),
                    fuel_consumed: 0,
                    attempts: 0,
                    cache_hit: true,
                    ..out
                });
            }
            metrics::counter!("corral_cache_misses_total", "tool" => label).increment(1);
            let result = inner.oneshot(invocation).await;
            // A pending approval or client request is a question, not an
            // outcome: never cached.
            let pending = matches!(
                result,
                Err(CallError::ApprovalPending { .. } | CallError::InputRequired { .. })
            );
            if result.is_ok() || (cache_errors && !pending) {
                cache.insert(key, result.clone(), clock.now());
            }
            result
        })
    }
}
