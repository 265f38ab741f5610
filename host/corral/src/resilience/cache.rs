//! The result cache (reference 003's `@Cached`, outermost): a successful
//! result of an idempotent tool is reused for `ttl_ms`, for the same tool,
//! the same arguments (canonical JSON: keys sorted), the same plugin build
//! (its sha256) and the same context pairs the plugin is allowed to see, so
//! two tenants never share an entry. A hit runs no guest code and takes no
//! rate-limit slot; it is marked `cache_hit` with no fuel and no attempts.
//! `moka` keeps at most `max_size` results per tool and evicts the least
//! useful. Failures are not cached unless `cache_errors`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use sha2::{Digest as _, Sha256};
use tower::{Service, ServiceExt as _};

use super::config::CacheConfig;
use crate::call::CallOutput;
use crate::compose::CallFuture;
use crate::error::CallError;
use crate::stages::{DispatchService, Invocation};

type Results = moka::sync::Cache<[u8; 32], Result<CallOutput, CallError>>;

#[derive(Clone)]
pub(super) struct Cache {
    inner: DispatchService,
    /// One cache per tool build and configuration.
    caches: Arc<Mutex<HashMap<(String, String), Results>>>,
}

impl Cache {
    pub(super) fn new(inner: DispatchService) -> Self {
        Self {
            inner,
            caches: Arc::default(),
        }
    }

    fn cache(&self, key: (String, String), config: &CacheConfig) -> Results {
        let mut caches = self.caches.lock().unwrap_or_else(|p| p.into_inner());
        caches
            .entry(key)
            .or_insert_with(|| {
                moka::sync::Cache::builder()
                    .max_capacity(config.max_size)
                    .time_to_live(Duration::from_millis(config.ttl_ms))
                    .build()
            })
            .clone()
    }
}

/// The entry key: sha256 of the tool, its plugin's digest, the canonical
/// arguments and the context pairs the plugin sees.
fn entry_key(invocation: &Invocation) -> [u8; 32] {
    let (_, sha256) = invocation.tool.provider_identity();
    let mut hash = Sha256::new();
    for part in [invocation.tool.spec().name.as_str(), sha256] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    // serde_json's map is ordered, so this is canonical JSON.
    hash.update(invocation.arguments.value.to_string().as_bytes());
    hash.update([0]);
    for (key, value) in invocation.context.iter() {
        hash.update(key.as_bytes());
        hash.update([0]);
        hash.update(value.as_bytes());
        hash.update([0]);
    }
    hash.finalize().into()
}

impl Service<Invocation> for Cache {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let Some(config) = invocation.tool.resilience().cache else {
            return Box::pin(self.inner.clone().oneshot(invocation));
        };
        let cache = self.cache(super::state_key(&invocation), &config);
        let inner = self.inner.clone();
        Box::pin(async move {
            let key = entry_key(&invocation);
            let tool = invocation.tool.spec().name.clone();
            if let Some(hit) = cache.get(&key) {
                metrics::counter!("corral_cache_hits_total", "tool" => tool).increment(1);
                return hit.map(|out| CallOutput {
                    duration: invocation.started.elapsed(),
                    fuel_consumed: 0,
                    attempts: 0,
                    cache_hit: true,
                    ..out
                });
            }
            metrics::counter!("corral_cache_misses_total", "tool" => tool).increment(1);
            let result = inner.oneshot(invocation).await;
            if result.is_ok() || config.cache_errors {
                cache.insert(key, result.clone());
            }
            result
        })
    }
}
