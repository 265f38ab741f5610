//! The host's tenant quotas: the builder's knobs ([`HostBuilder::quotas`],
//! [`HostBuilder::shared_store`]) and what a running host says of them
//! ([`Host::quota_status`], [`Host::quota_rules`]). The rules are
//! `config/quota.rs`; the call path is `call/quota.rs`.

use std::sync::Arc;

use super::{Host, HostBuilder};

impl HostBuilder {
    /// The host's tenant quotas ([`QuotaRules`](crate::QuotaRules): each
    /// tenant's, and the global ones of tenants without a token; read from
    /// a file with [`QuotaRules::from_file`](crate::QuotaRules::from_file)).
    /// Default: none. A plugin's policy can add its own (`[quotas]`).
    #[must_use]
    pub fn quotas(mut self, rules: crate::QuotaRules) -> Self {
        self.quota_rules = rules;
        self
    }

    /// The store every replica shares (`corral_store::RedisStore`): tenant
    /// quotas keep their buckets there, so replicas enforce one quota
    /// together. Default: none, each process keeps its own (at most
    /// [`QuotaRules::max_tenants`](crate::QuotaRules) tenants).
    #[must_use]
    pub fn shared_store(mut self, store: Arc<dyn corral_store::SharedStore>) -> Self {
        self.shared_store = Some(store);
        self
    }

    /// The quota state the host and its quota layer share, from these
    /// settings (taken out of the builder).
    pub(super) fn quota_state(&mut self) -> Arc<crate::call::quota::Quotas> {
        Arc::new(crate::call::quota::Quotas::new(
            std::mem::take(&mut self.quota_rules),
            self.shared_store.take(),
        ))
    }
}

impl Host {
    /// Where tenant quotas keep their buckets now: the shared store, or
    /// this process while the store is down (`/readyz` shows it).
    pub fn quota_status(&self) -> crate::QuotaStatus {
        self.inner.quotas.status()
    }

    /// The `n` tenants that used the most on this replica since it started
    /// (of the calls quotas apply to: calls, fuel, ms of guest time, HTTP
    /// bytes), and everyone else summed: labels safe for metrics, never
    /// more than `n + 1`.
    pub fn tenant_usage(&self, n: usize) -> crate::TenantUsage {
        self.inner.quotas.tenant_usage(n)
    }

    /// The host's quota rules ([`HostBuilder::quotas`]).
    pub fn quota_rules(&self) -> &crate::QuotaRules {
        self.inner.quotas.rules()
    }
}
