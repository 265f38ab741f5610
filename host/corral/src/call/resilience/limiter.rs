//! A rate-limit budget (the state of the rate-limit layer, `rate.rs`): a
//! [`Limiter`] built once when the catalog is built (in the tool's
//! [`ToolState`](crate::catalog::state::ToolState)), whole or split by the value of a
//! context key (a tenant).
//!
//! Per-tenant budgets are bounded: at most `max_context_keys` tenants
//! (default [`DEFAULT_MAX_CONTEXT_KEYS`]) are kept per limiter, in a `moka`
//! cache that evicts the least recently used. A tenant's budget is also
//! dropped once it has been idle for the time its whole burst takes to
//! refill, which loses nothing: a fresh budget is then the same as the old
//! one. Only eviction by capacity can reset a budget early, when more
//! tenants than the capacity call within one refill time; the plugin-wide
//! limit still bounds them all.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use crate::config::resilience::{Per, RateLimitConfig};
use std::time::Instant;

use governor::clock::MonotonicClock;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

/// Tenants kept per limiter when `rate_limit.max_context_keys` is not set.
pub const DEFAULT_MAX_CONTEXT_KEYS: u64 = 10_000;

/// One token bucket, on `std::time::Instant`. Not governor's default clock:
/// `quanta` calibrates the TSC on first use, spinning on `clock_gettime`
/// for about 40 % of a 9-plugin start-up (measured with perf); a call checks
/// its budget once, so the cheaper clock reading buys nothing here.
type Bucket = RateLimiter<NotKeyed, InMemoryState, MonotonicClock, NoOpMiddleware<Instant>>;

/// A fresh bucket for `quota`.
fn bucket(quota: Quota) -> Arc<Bucket> {
    Arc::new(RateLimiter::direct_with_clock(quota, MonotonicClock))
}

/// One budget: the tool's or its plugin's, whole or split by tenant.
pub(crate) struct Limiter {
    pub(super) config: RateLimitConfig,
    /// "N per period (scope)", the text of a refusal, made once.
    pub(super) describe: Arc<str>,
    budgets: Budgets,
}

enum Budgets {
    /// One budget for every caller.
    One(Arc<Bucket>),
    /// One budget per value of `key` (calls without it share the "" budget).
    PerKey {
        key: String,
        budgets: moka::sync::Cache<String, Arc<Bucket>>,
    },
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("limit", &self.describe)
            .finish_non_exhaustive()
    }
}

/// `requests` per period, with `burst_size` (default `requests`) at once.
pub(super) fn quota(config: &RateLimitConfig) -> Quota {
    let requests = NonZeroU32::new(config.requests.max(1)).unwrap_or(NonZeroU32::MIN);
    let burst = NonZeroU32::new(config.burst_size.unwrap_or(config.requests).max(1))
        .unwrap_or(NonZeroU32::MIN);
    let every = Duration::from_millis(config.per.millis()) / requests.get();
    Quota::with_period(every.max(Duration::from_nanos(1)))
        .unwrap_or_else(|| Quota::per_second(requests))
        .allow_burst(burst)
}

impl Limiter {
    /// A budget under `config`; `scope` says whose it is in a refusal
    /// ("the tool's limit", "the plugin's limit").
    pub(crate) fn new(config: &RateLimitConfig, scope: &str) -> Self {
        let per = match config.per {
            Per::Second => "second",
            Per::Minute => "minute",
            Per::Hour => "hour",
        };
        let quota = quota(config);
        let budgets = match &config.per_context_key {
            None => Budgets::One(bucket(quota)),
            Some(key) => {
                // Idle for a whole refill, a budget is as good as new.
                let refill = quota
                    .replenish_interval()
                    .saturating_mul(quota.burst_size().get());
                Budgets::PerKey {
                    key: key.clone(),
                    budgets: moka::sync::Cache::builder()
                        .max_capacity(
                            config
                                .max_context_keys
                                .unwrap_or(DEFAULT_MAX_CONTEXT_KEYS)
                                .max(1),
                        )
                        .time_to_idle(refill.max(Duration::from_millis(1)))
                        .build(),
                }
            }
        };
        Self {
            config: config.clone(),
            describe: Arc::from(format!("{} per {per} ({scope})", config.requests)),
            budgets,
        }
    }

    /// A plugin's sampling budget (`[client] sampling.tokens_per_hour`):
    /// `tokens` an hour per tenant (the context key `tenant`), all of it at
    /// once, refilling evenly; check it with [`Limiter::take`].
    pub(crate) fn sampling(tokens: u32) -> Self {
        let config = RateLimitConfig {
            requests: tokens,
            per: Per::Hour,
            burst_size: Some(tokens),
            throw_on_limit: true,
            wait_timeout_ms: 0,
            per_context_key: Some("tenant".into()),
            max_context_keys: None,
        };
        Self::new(&config, "tokens of sampling per tenant")
    }

    /// Takes `n` from the budget of the call with `context`; `Err` with
    /// the budget's description ("N per hour (...)") when it cannot pay.
    pub(crate) fn take(&self, context: &[(String, String)], n: u32) -> Result<(), Arc<str>> {
        let n = NonZeroU32::new(n.max(1)).unwrap_or(NonZeroU32::MIN);
        match self.budget(context).check_n(n) {
            Ok(Ok(())) => Ok(()),
            _ => Err(self.describe.clone()),
        }
    }

    /// The tenants with a budget now (after pending evictions): at most
    /// the capacity; 0 for a limiter not split by tenant.
    pub(crate) fn tenants(&self) -> u64 {
        match &self.budgets {
            Budgets::One(_) => 0,
            Budgets::PerKey { budgets, .. } => {
                budgets.run_pending_tasks();
                budgets.entry_count()
            }
        }
    }

    /// The budget of the call with `context`.
    pub(super) fn budget(&self, context: &[(String, String)]) -> Arc<Bucket> {
        match &self.budgets {
            Budgets::One(limiter) => limiter.clone(),
            Budgets::PerKey { key, budgets } => {
                let tenant = context
                    .iter()
                    .find(|(name, _)| name == key)
                    .map_or("", |(_, value)| value.as_str());
                match budgets.get(tenant) {
                    Some(limiter) => limiter,
                    None => budgets.get_with(tenant.to_string(), || bucket(quota(&self.config))),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(requests: u32, key: Option<&str>, capacity: Option<u64>) -> RateLimitConfig {
        RateLimitConfig {
            requests,
            per: Per::Hour,
            burst_size: None,
            throw_on_limit: true,
            wait_timeout_ms: 0,
            per_context_key: key.map(str::to_string),
            max_context_keys: capacity,
        }
    }

    fn ctx(tenant: &str) -> Vec<(String, String)> {
        vec![("tenant".to_string(), tenant.to_string())]
    }

    #[test]
    fn a_budget_allows_its_burst_then_refuses() {
        let limiter = Limiter::new(&config(2, None, None), "the tool's limit");
        let budget = limiter.budget(&[]);
        assert!(budget.check().is_ok());
        assert!(budget.check().is_ok());
        assert!(budget.check().is_err(), "the third call in an hour");
        assert_eq!(&*limiter.describe, "2 per hour (the tool's limit)");
    }

    #[test]
    fn tenants_have_separate_budgets() {
        let limiter = Limiter::new(&config(1, Some("tenant"), None), "the tool's limit");
        assert!(limiter.budget(&ctx("a")).check().is_ok());
        assert!(limiter.budget(&ctx("a")).check().is_err());
        assert!(limiter.budget(&ctx("b")).check().is_ok());
        assert_eq!(limiter.tenants(), 2);
    }

    #[test]
    fn a_hundred_thousand_tenants_stay_at_the_capacity() {
        let limiter = Limiter::new(&config(5, Some("tenant"), None), "the tool's limit");
        for i in 0..100_000 {
            let _ = limiter.budget(&ctx(&i.to_string())).check();
        }
        let kept = limiter.tenants();
        assert!(
            kept <= DEFAULT_MAX_CONTEXT_KEYS,
            "{kept} budgets kept, capacity {DEFAULT_MAX_CONTEXT_KEYS}"
        );
        assert!(kept > 0);
    }

    #[test]
    fn a_budget_refills_at_its_rate() {
        // governor takes a clock: the quota this module computes, driven by
        // a fake one. 60 per minute with a burst of 2: one slot a second.
        use governor::RateLimiter;
        use governor::clock::FakeRelativeClock;
        let mut c = config(60, None, None);
        c.per = Per::Minute;
        c.burst_size = Some(2);
        let clock = FakeRelativeClock::default();
        let limiter = RateLimiter::direct_with_clock(quota(&c), clock.clone());
        assert!(limiter.check().is_ok() && limiter.check().is_ok());
        assert!(limiter.check().is_err(), "the burst of 2 is spent");
        clock.advance(Duration::from_millis(999));
        assert!(limiter.check().is_err(), "not yet a second");
        clock.advance(Duration::from_millis(1));
        assert!(limiter.check().is_ok(), "one slot after a second");
        assert!(limiter.check().is_err());
    }
}
