//! Tenant quotas on the call path: whose quota a call spends ([`Tenant`]),
//! the buckets it spends from ([`Quotas`]: in the shared store, or in this
//! process when there is none or it is down), and the layer that checks a
//! call before it runs and charges it after (`resilience/quota.rs`).
//!
//! **Whose quota** is the call's [`Tenant`] (`tenant.rs`): a client that
//! asserts its tenant in its context and rotates it gets a fresh quota
//! each time, so the host's `[global]` quotas bound every tenant that no
//! token authenticated, together.
//!
//! **Which buckets.** For each quota that applies, one token bucket
//! ([`corral_store::Bucket`]) under the key
//! `quota:<scope>:<kind>:<tenant>`: the host's `[tenant]` quotas (scope
//! `host`), the plugin's `[quotas]` (scope `plugin.<name>`), and the host's
//! `[global]` quotas (scope `global`, one bucket for every tenant that no
//! token authenticated). The tenant part of the key is a digest, never the
//! text a client sent.
//!
//! **Consistency across replicas.** Each check is one atomic round trip to
//! the shared store (a Lua script in Redis). Calls are taken before they
//! run, so no replica admits a call past a `calls` quota. Fuel, time and
//! bytes are known only after a call: while a tenant's bucket still holds
//! something, replicas admit its calls, so the tenant can overspend by what
//! the calls already admitted use when the bucket runs dry. With one call
//! in flight per replica that is at most one call's use per replica, each
//! bounded by its own limits (fuel, timeout); the debt is paid back before
//! the tenant is admitted again. A `calls` quota with a small burst bounds
//! the calls in flight.
//!
//! **When the shared store is down**, buckets fall back to this process's
//! memory (each replica then enforces the quota on its own, so a tenant can
//! get up to one quota per replica); the fallback is logged at WARN once,
//! shown in [`QuotaStatus`] (`/readyz` detail), and the store is tried
//! again every [`RETRY_STORE`]; its return is logged at INFO.

mod usage;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::call::tenant::{Tenant, TenantSource};
use crate::config::quota::{Quota, QuotaKind, QuotaRules, QuotaSet};
use corral_sandbox::CallError;
use corral_store::{Bucket, Level, MemoryStore, SharedStore, Spend, StoreError};
pub use usage::{TenantUsage, Used};

/// How long after a failure the shared store is tried again: 1 s. In
/// between, quotas are kept in this process.
pub const RETRY_STORE: Duration = Duration::from_secs(1);

/// Whose rule a quota is, for errors and keys.
#[derive(Debug, Clone)]
struct Scope {
    /// In keys: `host`, `plugin.<name>`, `global`.
    key: String,
    /// In errors: "the host's per-tenant quota".
    shown: String,
}

/// The buckets one call spends from: each quota with its key.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    buckets: Vec<(Quota, String)>,
}

/// What a call used, added up over its attempts (the dispatch adds each
/// sandbox run's [`corral_sandbox::Usage`]).
#[derive(Debug, Default)]
pub(crate) struct Spent(Mutex<corral_sandbox::Usage>);

impl Spent {
    /// Adds one run's use.
    pub(crate) fn add(&self, usage: &corral_sandbox::Usage) {
        if let Ok(mut total) = self.0.lock() {
            total.fuel = total.fuel.saturating_add(usage.fuel);
            total.wall += usage.wall;
            total.egress_bytes = total.egress_bytes.saturating_add(usage.egress_bytes);
            total.memory_peak = total.memory_peak.max(usage.memory_peak);
        }
    }

    /// The total so far.
    pub(crate) fn total(&self) -> corral_sandbox::Usage {
        self.0.lock().map(|t| *t).unwrap_or_default()
    }
}

/// Whether quotas are kept in the shared store now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaStatus {
    /// The shared store (`redis://host:port`), or `memory` without one.
    pub store: String,
    /// Whether buckets are kept in this process because the shared store
    /// failed.
    pub fallback: bool,
    /// When the fallback began.
    pub since: Option<SystemTime>,
    /// The store's last error, during a fallback.
    pub error: Option<String>,
}

#[derive(Debug, Default)]
struct Health {
    /// Set while in fallback: when it began, the error, and when to try
    /// the shared store again.
    down: Option<(SystemTime, String, Instant)>,
}

/// The host's quota state: the rules, the shared store, the local buckets.
#[derive(Debug)]
pub struct Quotas {
    rules: QuotaRules,
    shared: Option<Arc<dyn SharedStore>>,
    local: MemoryStore,
    health: Mutex<Health>,
    usage: usage::UsageBook,
}

/// Units of `kind` in `usage`.
fn units(kind: QuotaKind, usage: &corral_sandbox::Usage) -> f64 {
    match kind {
        QuotaKind::Calls => 0.0,
        QuotaKind::Fuel => usage.fuel as f64,
        QuotaKind::WallMs => usage.wall.as_secs_f64() * 1_000.0,
        QuotaKind::EgressBytes => usage.egress_bytes as f64,
    }
}

fn bucket(quota: &Quota) -> Bucket {
    Bucket::per(quota.limit as f64, quota.window, quota.burst as f64)
}

/// RFC 3339 (UTC, seconds) of `at`.
fn rfc3339(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

impl Quotas {
    /// Quotas under `rules`, their buckets in `shared` (every replica's),
    /// or in this process when `None`. The local buckets are bounded by
    /// `rules.max_tenants` tenants (each quota of a tenant one bucket).
    pub fn new(rules: QuotaRules, shared: Option<Arc<dyn SharedStore>>) -> Self {
        // Each bucket's record weighs about 110 bytes against the memory
        // store's 2 684 a record: a tenant with four quotas in two scopes
        // is about 900 bytes, so this bounds it by `max_tenants`.
        let max_tenants = rules.max_tenants;
        let records = max_tenants.saturating_mul(900).div_ceil(2_684).max(1);
        Self {
            rules,
            shared,
            local: MemoryStore::bounded(records),
            health: Mutex::default(),
            usage: usage::UsageBook::new(max_tenants),
        }
    }

    /// The host's rules.
    pub fn rules(&self) -> &QuotaRules {
        &self.rules
    }

    /// Where buckets are kept now.
    pub fn status(&self) -> QuotaStatus {
        let store = self
            .shared
            .as_ref()
            .map_or_else(|| "memory".to_string(), |s| s.describe());
        let down = self.health.lock().ok().and_then(|h| h.down.clone());
        QuotaStatus {
            store,
            fallback: down.is_some(),
            since: down.as_ref().map(|d| d.0),
            error: down.map(|d| d.1),
        }
    }

    /// Whether quotas could apply to any call (host rules, or `plugin`'s).
    pub(crate) fn apply_to(&self, plugin: &QuotaSet) -> bool {
        !self.rules.is_empty() || !plugin.is_empty()
    }

    /// One spend, in the shared store unless it is down (then, and
    /// without one, in this process).
    /// Spends a batch, all or nothing (see `SharedStore::spend_all`), in
    /// the shared store unless it is down (then, and without one, in this
    /// process).
    async fn spend(&self, batch: &[(String, Bucket, Spend)]) -> Vec<Level> {
        if let Some(shared) = &self.shared {
            let retry_now = self.health.lock().map_or(true, |h| {
                h.down
                    .as_ref()
                    .is_none_or(|(_, _, retry)| Instant::now() >= *retry)
            });
            if retry_now {
                match shared.spend_all(batch).await {
                    Ok(levels) => {
                        self.recovered(shared.as_ref());
                        return levels;
                    }
                    Err(err @ StoreError::Unreachable { .. }) => self.failed(&err),
                    Err(err) => {
                        // A key that is no bucket: something else wrote it.
                        tracing::error!("quota buckets: {err}; using this replica's");
                    }
                }
            }
        }
        // The local store holds only buckets under these keys.
        self.local.spend_all(batch).await.unwrap_or_else(|_| {
            let admitted = Level {
                admitted: true,
                left: 0.0,
                wait: Duration::ZERO,
            };
            vec![admitted; batch.len()]
        })
    }

    fn failed(&self, err: &StoreError) {
        let Ok(mut health) = self.health.lock() else {
            return;
        };
        let retry = Instant::now() + RETRY_STORE;
        match &mut health.down {
            Some(down) => down.2 = retry,
            None => {
                tracing::warn!(
                    "quotas fall back to this replica's memory: {err}; each replica now \
                     enforces them alone until the store answers again"
                );
                metrics::gauge!("corral_quota_store_fallback").set(1.0);
                health.down = Some((SystemTime::now(), err.to_string(), retry));
            }
        }
    }

    fn recovered(&self, shared: &dyn SharedStore) {
        let Ok(mut health) = self.health.lock() else {
            return;
        };
        if let Some((since, _, _)) = health.down.take() {
            let took = since.elapsed().unwrap_or_default();
            tracing::info!(
                store = shared.describe(),
                "quotas are kept in the shared store again after {}",
                humantime::format_duration(Duration::from_secs(took.as_secs()))
            );
            metrics::gauge!("corral_quota_store_fallback").set(0.0);
        }
    }

    /// The quotas a call of `plugin` by `tenant` spends from.
    fn buckets(
        &self,
        plugin: &str,
        plugin_set: &QuotaSet,
        tenant: &Tenant,
    ) -> Vec<(Quota, String, Scope)> {
        let tenant_key = tenant.key();
        let mut out = Vec::new();
        let mut add = |set: &QuotaSet, scope: Scope, who: &str| {
            for quota in &set.quotas {
                let key = format!("quota:{}:{}:{who}", scope.key, quota.kind.as_str());
                out.push((*quota, key, scope.clone()));
            }
        };
        add(
            &self.rules.tenant,
            Scope {
                key: "host".into(),
                shown: "the host's per-tenant quota".into(),
            },
            &tenant_key,
        );
        add(
            plugin_set,
            Scope {
                key: format!("plugin.{plugin}"),
                shown: format!("plugin `{plugin}`'s per-tenant quota"),
            },
            &tenant_key,
        );
        if tenant.source() != TenantSource::Authenticated {
            add(
                &self.rules.global,
                Scope {
                    key: "global".into(),
                    shown: "the host's global quota for tenants without a token".into(),
                },
                "all",
            );
        }
        out
    }

    /// Checks a call before it runs, in one batch (one round trip to the
    /// shared store): takes one from each `calls` bucket, and refuses while
    /// any other bucket is empty or in debt; a refused call takes nothing.
    /// The first refusal, in rule order, is the error.
    ///
    /// # Errors
    /// [`CallError::QuotaExceeded`] naming the tenant, the quota, its rule
    /// and when the call would be admitted.
    pub(crate) async fn admit(
        &self,
        tool: &str,
        plugin: &str,
        plugin_set: &QuotaSet,
        tenant: &Tenant,
    ) -> Result<Admitted, CallError> {
        let buckets = self.buckets(plugin, plugin_set, tenant);
        // One batch: every check and take at once, all or nothing, so a
        // refusal takes no call from any bucket.
        let batch: Vec<(String, Bucket, Spend)> = buckets
            .iter()
            .map(|(quota, key, _)| {
                let spend = match quota.kind {
                    QuotaKind::Calls => Spend::Take(1.0),
                    _ => Spend::Check,
                };
                (key.clone(), bucket(quota), spend)
            })
            .collect();
        let levels = self.spend(&batch).await;
        let mut admitted = Admitted::default();
        for ((quota, key, scope), level) in buckets.into_iter().zip(levels) {
            if !level.admitted {
                let scope_kind = match scope.key.as_str() {
                    "global" => "global",
                    "host" => "host",
                    _ => "plugin",
                };
                metrics::counter!(
                    "corral_quota_refused_total",
                    "kind" => quota.kind.as_str(),
                    "scope" => scope_kind,
                )
                .increment(1);
                let wait = level.wait.max(Duration::from_millis(1));
                return Err(CallError::QuotaExceeded {
                    tool: tool.to_string(),
                    tenant: tenant.shown(),
                    quota: format!("{quota} ({})", scope.shown),
                    retry_after: wait,
                    reset_at: rfc3339(SystemTime::now() + wait + Duration::from_millis(999)),
                });
            }
            if quota.kind != QuotaKind::Calls {
                admitted.buckets.push((quota, key));
            }
        }
        Ok(admitted)
    }

    /// The `n` tenants that used the most on this replica since it
    /// started (calls that quotas applied to), and the rest summed.
    pub fn tenant_usage(&self, n: usize) -> TenantUsage {
        self.usage.top(n)
    }

    /// Charges what a call used to the buckets it was admitted with, and
    /// adds it to `tenant`'s use.
    pub(crate) async fn charge(
        &self,
        tenant: &Tenant,
        admitted: &Admitted,
        usage: &corral_sandbox::Usage,
    ) {
        let mut used: Used = [1, 0, 0, 0];
        for kind in &QuotaKind::ALL[1..] {
            used[usage::index(*kind)] = units(*kind, usage) as u64;
        }
        self.usage.add(tenant, used);
        let batch: Vec<(String, Bucket, Spend)> = admitted
            .buckets
            .iter()
            .map(|(quota, key)| {
                (
                    key.clone(),
                    bucket(quota),
                    Spend::Charge(units(quota.kind, usage)),
                )
            })
            .filter(|(_, _, spend)| !matches!(spend, Spend::Charge(n) if *n <= 0.0))
            .collect();
        if !batch.is_empty() {
            self.spend(&batch).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::quota::Quota;

    #[tokio::test]
    async fn a_hundred_thousand_tenants_leave_the_buckets_bounded() {
        let calls = Quota {
            kind: QuotaKind::Calls,
            limit: 10,
            window: Duration::from_secs(3_600),
            burst: 10,
        };
        let rules = QuotaRules {
            tenant: QuotaSet {
                quotas: vec![calls],
            },
            global: QuotaSet::default(),
            max_tenants: 1_000,
        };
        let quotas = Quotas::new(rules, None);
        for i in 0..100_000 {
            quotas
                .admit(
                    "t",
                    "p",
                    &QuotaSet::default(),
                    &Tenant::asserted(format!("{i}")),
                )
                .await
                .expect("each tenant's first call");
        }
        // A tenant of four quotas in two scopes per `max_tenants`: a
        // tenant of one quota leaves room for about eight times as many.
        let held = quotas.local.len();
        assert!(held <= 8 * 1_000 + 100, "{held} buckets held");
        assert!(held >= 1_000, "{held} buckets held");
    }
}
