//! The quota layer (`call/quota.rs` has the rules): outside the rate limit,
//! so a call refused by its tenant's quota waits for no rate-limit slot,
//! and one call is checked once however often it is retried; every
//! attempt's fuel, time and bytes are charged when the call is over,
//! whether it succeeded or not. A call that is refused runs no guest code.

use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{Service, ServiceExt as _};

use super::Inner;
use crate::call::CallOutput;
use crate::call::compose::CallFuture;
use crate::call::quota::Quotas;
use crate::call::stages::Invocation;
use crate::catalog::registry::Provider;
use corral_sandbox::CallError;

/// The quota layer over `inner`.
#[derive(Clone)]
pub(super) struct Quota<S> {
    inner: S,
    quotas: Arc<Quotas>,
}

impl<S> Quota<S> {
    pub(super) fn new(inner: S, quotas: Arc<Quotas>) -> Self {
        Self { inner, quotas }
    }
}

impl<S: Inner> Service<Invocation> for Quota<S> {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let Provider::Plugin(plugin) = invocation.tool.provider() else {
            return self.inner.call(invocation);
        };
        if !self.quotas.apply_to(&plugin.policy().quotas) {
            return self.inner.call(invocation);
        }
        let plugin = plugin.clone();
        let inner = self.inner.clone();
        let quotas = self.quotas.clone();
        Box::pin(async move {
            let admitted = quotas
                .admit(
                    &invocation.tool.spec().name,
                    plugin.name(),
                    &plugin.policy().quotas,
                    &invocation.tenant,
                )
                .await?;
            let spent = invocation.spent.clone();
            let tenant = invocation.tenant.clone();
            let result = inner.oneshot(invocation).await;
            quotas.charge(&tenant, &admitted, &spent.total()).await;
            result
        })
    }
}
