//! What each tenant used on this replica, for metrics that stay bounded:
//! the top N tenants by use, each by a label made safe for Prometheus, and
//! everyone else summed as `other` ([`TenantUsage`], which
//! `Host::tenant_usage` returns and `corral serve`'s `/metrics` prints as
//! `corral_tenant_used{tenant, kind}`). Never a label per arbitrary key:
//! at most N + 1 tenants per kind at any time.
//!
//! Kept per process since it started: a bounded `moka` cache of tenants'
//! totals (the quotas' `max_tenants`, least useful forgotten first) and a
//! grand total per kind, so a forgotten tenant's use stays in `other`.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::call::tenant::{Tenant, TenantSource};
use crate::config::quota::QuotaKind;

/// Units of each kind, in [`QuotaKind::ALL`] order (calls, fuel, ms of
/// guest time, bytes of HTTP).
pub type Used = [u64; 4];

/// The top tenants by use, and the rest ([`Host::tenant_usage`](crate::Host::tenant_usage)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantUsage {
    /// `(label, used)` of the top tenants, most fuel first: a token's
    /// tenant by its name, a client-asserted one as `~` and its name with
    /// every character outside `[A-Za-z0-9_.@-]` as `_` (cut at 64),
    /// `anonymous`.
    pub top: Vec<(String, Used)>,
    /// Everyone else's use, summed.
    pub other: Used,
}

/// The label of `tenant` (see [`TenantUsage::top`]).
fn label(tenant: &Tenant) -> String {
    let safe: String = tenant
        .id()
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.@-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    match tenant.source() {
        TenantSource::Authenticated => safe,
        TenantSource::Asserted => format!("~{safe}"),
        TenantSource::Anonymous => "anonymous".into(),
    }
}

/// Per-tenant totals and the grand total.
#[derive(Debug)]
pub(crate) struct UsageBook {
    tenants: moka::sync::Cache<String, Used>,
    total: [AtomicU64; 4],
}

impl UsageBook {
    /// A book of at most `max_tenants` tenants.
    pub(crate) fn new(max_tenants: u64) -> Self {
        Self {
            tenants: moka::sync::Cache::new(max_tenants.max(1)),
            total: Default::default(),
        }
    }

    /// Adds a call's use (`used`, one call in `used[0]`) to `tenant`.
    pub(crate) fn add(&self, tenant: &Tenant, used: Used) {
        for (total, n) in self.total.iter().zip(used) {
            total.fetch_add(n, Ordering::Relaxed);
        }
        self.tenants.entry(label(tenant)).and_upsert_with(|old| {
            let mut sum = old.map(|e| e.into_value()).unwrap_or_default();
            for (s, n) in sum.iter_mut().zip(used) {
                *s = s.saturating_add(n);
            }
            sum
        });
    }

    /// The `n` tenants that used the most fuel (then calls), and the rest.
    pub(crate) fn top(&self, n: usize) -> TenantUsage {
        let mut all: Vec<(String, Used)> = self
            .tenants
            .iter()
            .map(|(k, v)| (k.as_ref().clone(), v))
            .collect();
        all.sort_by(|a, b| {
            let key = |u: &Used| (u[1], u[0]);
            key(&b.1).cmp(&key(&a.1)).then_with(|| a.0.cmp(&b.0))
        });
        all.truncate(n);
        let mut other: Used = std::array::from_fn(|i| self.total[i].load(Ordering::Relaxed));
        for (_, used) in &all {
            for (o, u) in other.iter_mut().zip(used) {
                *o = o.saturating_sub(*u);
            }
        }
        TenantUsage { top: all, other }
    }
}

/// The index of `kind` in a [`Used`].
pub(crate) fn index(kind: QuotaKind) -> usize {
    QuotaKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_tenants_are_named_and_the_rest_summed_safely() {
        let book = UsageBook::new(100);
        book.add(&Tenant::authenticated("acme"), [1, 500, 3, 0]);
        book.add(&Tenant::authenticated("acme"), [1, 500, 3, 0]);
        book.add(&Tenant::asserted("ev\"il}\n{x"), [1, 900, 1, 10]);
        book.add(&Tenant::anonymous(), [1, 10, 1, 0]);
        for i in 0..50 {
            book.add(&Tenant::asserted(format!("t{i}")), [1, 1, 0, 0]);
        }
        let usage = book.top(2);
        assert_eq!(usage.top[0], ("acme".to_string(), [2, 1000, 6, 0]));
        assert_eq!(usage.top[1], ("~ev_il___x".to_string(), [1, 900, 1, 10]));
        assert_eq!(usage.other, [51, 60, 1, 0]);
        assert_eq!(index(QuotaKind::EgressBytes), 3);
    }
}
