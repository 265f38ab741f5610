//! The one rule of a tool's effective resilience ([`effective`]: the
//! policy's per-tool table over its plugin-wide table over the tool's own
//! hints, switched by the host) and the check of a policy's values
//! ([`check_table`]).

use super::{
    CacheConfig, Per, RateLimitConfig, ResiliencePolicy, ResilienceSwitches, ResilienceTable,
    RetryConfig, ToolResilience, default_cache_size, default_wait,
};
use corral_sandbox::ToolMetadata;

/// Checks the values of one resilience table: what no layer could use.
pub(crate) fn check_table(table: &ResilienceTable) -> Result<(), String> {
    if let Some(r) = &table.retry {
        if r.max_attempts == 0 {
            return Err("retry.max_attempts must be at least 1 (1 means no retry)".into());
        }
        if !(r.multiplier >= 1.0 && r.multiplier.is_finite()) {
            return Err("retry.multiplier must be a number of at least 1.0".into());
        }
    }
    if let Some(b) = &table.circuit_breaker
        && b.failure_threshold == 0
    {
        return Err("circuit_breaker.failure_threshold must be at least 1".into());
    }
    if let Some(r) = &table.rate_limit
        && (r.requests == 0 || r.burst_size == Some(0) || r.max_context_keys == Some(0))
    {
        return Err(
            "rate_limit.requests, burst_size and max_context_keys must be at least 1".into(),
        );
    }
    if let Some(c) = &table.cache
        && (c.ttl_ms == 0 || c.max_size == 0)
    {
        return Err("cache.ttl_ms and cache.max_size must be at least 1".into());
    }
    if let Some(h) = &table.health {
        let rate = |r: f64| (0.0..=1.0).contains(&r);
        if h.window == 0
            || !rate(h.up_success_rate)
            || !rate(h.degraded_success_rate)
            || h.degraded_success_rate > h.up_success_rate
        {
            return Err(
                "health needs window >= 1 and 0 <= degraded_success_rate <= \
                 up_success_rate <= 1"
                    .into(),
            );
        }
    }
    Ok(())
}

/// The one rule of a tool's resilience: the policy's per-tool table wins
/// over its plugin-wide table, which wins over the tool's own hints (WIT
/// 0.2.0); retry and cache apply only to idempotent tools; a layer the host
/// switched off is off.
///
/// # Errors
/// A message when a per-tool table asks for retry or cache on a tool that is
/// not idempotent (the plugin-wide table just skips such tools).
pub fn effective(
    metadata: &ToolMetadata,
    policy: &ResiliencePolicy,
    guest_name: &str,
    switches: &ResilienceSwitches,
) -> Result<ToolResilience, String> {
    let own = policy.tools.get(guest_name);
    let hints = metadata.resilience.unwrap_or_default();
    if !metadata.idempotent
        && let Some(table) = own
        && (table.retry.is_some() || table.cache.is_some())
    {
        return Err(
            "the policy asks for retry or cache, but the tool is not idempotent: repeating or \
             reusing a call could repeat its effect; drop them, or declare the tool idempotent \
             (in the plugin's spec, or in the policy's `[metadata.<tool>]`)"
                .into(),
        );
    }
    // The tool's own table first, then the plugin-wide one.
    macro_rules! pick {
        ($field:ident) => {
            own.and_then(|t| t.$field.clone())
                .or_else(|| policy.plugin.$field.clone())
        };
    }
    let retry = pick!(retry).or_else(|| {
        hints.max_attempts.map(|n| RetryConfig {
            max_attempts: n,
            ..RetryConfig::default()
        })
    });
    let cache = pick!(cache).or_else(|| {
        hints.cache_ttl_ms.map(|ttl_ms| CacheConfig {
            ttl_ms,
            max_size: default_cache_size(),
            cache_errors: false,
        })
    });
    let rate_limit = own.and_then(|t| t.rate_limit.clone()).or_else(|| {
        hints.requests_per_second.map(|requests| RateLimitConfig {
            requests,
            per: Per::Second,
            burst_size: None,
            throw_on_limit: false,
            wait_timeout_ms: default_wait(),
            per_context_key: None,
            max_context_keys: None,
        })
    });
    Ok(ToolResilience {
        retry: retry.filter(|r| switches.retry && metadata.idempotent && r.max_attempts > 1),
        circuit_breaker: pick!(circuit_breaker).filter(|_| switches.circuit_breaker),
        rate_limit: rate_limit.filter(|_| switches.rate_limit),
        plugin_rate_limit: policy
            .plugin
            .rate_limit
            .clone()
            .filter(|_| switches.rate_limit),
        cache: cache.filter(|_| switches.cache && metadata.idempotent),
        health: pick!(health).unwrap_or_default(),
        audit: pick!(audit).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{AuditConfig, AuditLevel, BreakerConfig, HealthThresholds};
    use super::*;
    use corral_sandbox::ResilienceHints;

    fn metadata(idempotent: bool, hints: Option<ResilienceHints>) -> ToolMetadata {
        let mut metadata = ToolMetadata::new("t");
        metadata.idempotent = idempotent;
        metadata.resilience = hints;
        metadata
    }

    #[test]
    fn the_policy_wins_over_hints_and_switches_win_over_both() {
        let mut hints = ResilienceHints::default();
        hints.max_attempts = Some(4);
        hints.cache_ttl_ms = Some(1_000);
        hints.requests_per_second = Some(7);
        let on = ResilienceSwitches::default();
        let none = ResiliencePolicy::default();
        let from_hints = effective(&metadata(true, Some(hints)), &none, "t", &on).expect("ok");
        assert_eq!(from_hints.retry.map(|r| r.max_attempts), Some(4));
        assert_eq!(from_hints.cache.map(|c| c.ttl_ms), Some(1_000));
        assert_eq!(from_hints.rate_limit.map(|r| r.requests), Some(7));

        let mut policy = ResiliencePolicy::default();
        policy.plugin.retry = Some(RetryConfig {
            max_attempts: 2,
            ..RetryConfig::default()
        });
        let both = effective(&metadata(true, Some(hints)), &policy, "t", &on).expect("ok");
        assert_eq!(both.retry.map(|r| r.max_attempts), Some(2));

        let off = effective(
            &metadata(true, Some(hints)),
            &policy,
            "t",
            &ResilienceSwitches::none(),
        )
        .expect("ok");
        assert!(off.retry.is_none() && off.cache.is_none() && off.rate_limit.is_none());

        // One layer off with the setter; the others stay.
        let no_retry = ResilienceSwitches::default().with_retry(false);
        let some = effective(&metadata(true, Some(hints)), &policy, "t", &no_retry).expect("ok");
        assert!(some.retry.is_none() && some.cache.is_some() && some.rate_limit.is_some());
        assert_eq!(
            ResilienceSwitches::none()
                .with_retry(true)
                .with_circuit_breaker(true)
                .with_rate_limit(true)
                .with_cache(true),
            on
        );
    }

    #[test]
    fn constructors_give_what_a_policy_file_gives() {
        let table: ResilienceTable = toml::from_str(
            "retry = { max_attempts = 4 }\n\
             circuit_breaker = { failure_threshold = 2, cool_down_ms = 10 }\n\
             rate_limit = { requests = 5, per = \"minute\" }\n\
             cache = { ttl_ms = 50 }\n\
             health = {}\n\
             audit = { level = \"all\" }\n",
        )
        .expect("toml");
        let built = ResilienceTable::default()
            .with_retry(RetryConfig::new(4))
            .with_circuit_breaker(BreakerConfig::new(2, 10))
            .with_rate_limit(RateLimitConfig::new(5, Per::Minute))
            .with_cache(CacheConfig::new(50))
            .with_health(HealthThresholds::default())
            .with_audit(AuditConfig::new(AuditLevel::All));
        assert_eq!(built, table);
    }

    #[test]
    fn retry_and_cache_need_an_idempotent_tool() {
        let on = ResilienceSwitches::default();
        let mut policy = ResiliencePolicy::default();
        policy.plugin.retry = Some(RetryConfig::default());
        // Plugin-wide: silently not for the non-idempotent tool.
        let skipped = effective(&metadata(false, None), &policy, "t", &on).expect("ok");
        assert!(skipped.retry.is_none());
        // Per tool: an error that says why.
        policy.tools.insert(
            "t".into(),
            ResilienceTable {
                cache: Some(CacheConfig {
                    ttl_ms: 10,
                    max_size: 1,
                    cache_errors: false,
                }),
                ..ResilienceTable::default()
            },
        );
        let err = effective(&metadata(false, None), &policy, "t", &on).unwrap_err();
        assert!(err.contains("not idempotent"), "{err}");
    }
}
