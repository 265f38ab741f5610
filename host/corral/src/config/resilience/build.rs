//! Constructors and `with_*` setters of the resilience configuration
//! structs, for embedders that build a [`ResiliencePolicy`] in code rather
//! than in a policy file. Every default is the policy file's (the table in
//! the parent module).

use std::collections::BTreeMap;

use super::{
    AuditConfig, AuditLevel, BreakerConfig, CacheConfig, HealthThresholds, Per, RateLimitConfig,
    ResiliencePolicy, ResilienceSwitches, ResilienceTable, RetryConfig, default_cache_size,
    default_wait,
};

impl RetryConfig {
    /// Retry with `max_attempts` attempts in all (1 means no retry) and the
    /// other knobs at their defaults (100 ms first delay, factor 2.0, at most
    /// 2 000 ms, jitter on).
    #[must_use]
    pub fn new(max_attempts: u32) -> Self {
        Self {
            max_attempts,
            ..Self::default()
        }
    }

    /// This retry waiting `ms` milliseconds before the second attempt.
    #[must_use]
    pub fn with_initial_delay_ms(mut self, ms: u64) -> Self {
        self.initial_delay_ms = ms;
        self
    }

    /// This retry multiplying each delay by `factor` (at least 1.0).
    #[must_use]
    pub fn with_multiplier(mut self, factor: f32) -> Self {
        self.multiplier = factor;
        self
    }

    /// This retry waiting at most `ms` milliseconds between attempts.
    #[must_use]
    pub fn with_max_delay_ms(mut self, ms: u64) -> Self {
        self.max_delay_ms = ms;
        self
    }

    /// This retry with random delays (`true`) or exact ones.
    #[must_use]
    pub fn with_jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }
}

impl BreakerConfig {
    /// A breaker that opens after `failure_threshold` consecutive failed
    /// calls and stays open `cool_down_ms` milliseconds before one probe.
    #[must_use]
    pub fn new(failure_threshold: u32, cool_down_ms: u64) -> Self {
        Self {
            failure_threshold,
            cool_down_ms,
        }
    }
}

impl RateLimitConfig {
    /// `requests` calls per `per`, a burst of `requests`, waiting up to
    /// 5 000 ms for a slot, one budget for every caller.
    #[must_use]
    pub fn new(requests: u32, per: Per) -> Self {
        Self {
            requests,
            per,
            burst_size: None,
            throw_on_limit: false,
            wait_timeout_ms: default_wait(),
            per_context_key: None,
            max_context_keys: None,
        }
    }

    /// This limit allowing `calls` at once.
    #[must_use]
    pub fn with_burst_size(mut self, calls: u32) -> Self {
        self.burst_size = Some(calls);
        self
    }

    /// This limit refusing at once (`true`) instead of waiting for a slot.
    #[must_use]
    pub fn with_throw_on_limit(mut self, throw: bool) -> Self {
        self.throw_on_limit = throw;
        self
    }

    /// This limit waiting up to `ms` milliseconds for a slot.
    #[must_use]
    pub fn with_wait_timeout_ms(mut self, ms: u64) -> Self {
        self.wait_timeout_ms = ms;
        self
    }

    /// This limit with one budget per value of the context key `key`,
    /// keeping at most `max_keys` of them (`None`:
    /// [`DEFAULT_MAX_CONTEXT_KEYS`](crate::call::resilience::DEFAULT_MAX_CONTEXT_KEYS)).
    #[must_use]
    pub fn per_context_key(mut self, key: impl Into<String>, max_keys: Option<u64>) -> Self {
        self.per_context_key = Some(key.into());
        self.max_context_keys = max_keys;
        self
    }
}

impl CacheConfig {
    /// A cache reusing results for `ttl_ms` milliseconds, at most 1 000 of
    /// them, successes only.
    #[must_use]
    pub fn new(ttl_ms: u64) -> Self {
        Self {
            ttl_ms,
            max_size: default_cache_size(),
            cache_errors: false,
        }
    }

    /// This cache keeping at most `results` results.
    #[must_use]
    pub fn with_max_size(mut self, results: u64) -> Self {
        self.max_size = results;
        self
    }

    /// This cache reusing failures too (`true`).
    #[must_use]
    pub fn with_cache_errors(mut self, cache_errors: bool) -> Self {
        self.cache_errors = cache_errors;
        self
    }
}

impl HealthThresholds {
    /// These thresholds over the last `calls` calls.
    #[must_use]
    pub fn with_window(mut self, calls: usize) -> Self {
        self.window = calls;
        self
    }

    /// These thresholds with UP at or above `rate` (0 to 1) and DOWN below
    /// `down_below` (0 to 1, at most `rate`).
    #[must_use]
    pub fn with_success_rates(mut self, rate: f64, down_below: f64) -> Self {
        self.up_success_rate = rate;
        self.degraded_success_rate = down_below;
        self
    }

    /// These thresholds calling an otherwise UP tool DEGRADED when its p95
    /// latency is over `ms` milliseconds.
    #[must_use]
    pub fn with_p95_ms(mut self, ms: u64) -> Self {
        self.p95_ms = ms;
        self
    }
}

impl AuditConfig {
    /// Auditing at `level`, arguments recorded by digest only.
    #[must_use]
    pub fn new(level: AuditLevel) -> Self {
        Self {
            level,
            ..Self::default()
        }
    }

    /// This audit recording the arguments themselves, with `mask_fields`
    /// (top-level fields) replaced by `"***"`.
    #[must_use]
    pub fn with_arguments(mut self, mask_fields: Vec<String>) -> Self {
        self.record_arguments = true;
        self.mask_fields = mask_fields;
        self
    }
}

impl ResilienceTable {
    /// This table with `retry`.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryConfig) -> Self {
        self.retry = Some(retry);
        self
    }

    /// This table with a circuit breaker.
    #[must_use]
    pub fn with_circuit_breaker(mut self, breaker: BreakerConfig) -> Self {
        self.circuit_breaker = Some(breaker);
        self
    }

    /// This table with a rate limit.
    #[must_use]
    pub fn with_rate_limit(mut self, limit: RateLimitConfig) -> Self {
        self.rate_limit = Some(limit);
        self
    }

    /// This table with a result cache.
    #[must_use]
    pub fn with_cache(mut self, cache: CacheConfig) -> Self {
        self.cache = Some(cache);
        self
    }

    /// This table with health thresholds.
    #[must_use]
    pub fn with_health(mut self, health: HealthThresholds) -> Self {
        self.health = Some(health);
        self
    }

    /// This table with an audit configuration.
    #[must_use]
    pub fn with_audit(mut self, audit: AuditConfig) -> Self {
        self.audit = Some(audit);
        self
    }
}

impl ResiliencePolicy {
    /// A policy with `plugin` for every tool of the plugin.
    #[must_use]
    pub fn new(plugin: ResilienceTable) -> Self {
        Self {
            plugin,
            tools: BTreeMap::new(),
        }
    }

    /// This policy with `table` for the tool the plugin calls `tool`,
    /// replacing the plugin-wide entry of each layer it sets.
    #[must_use]
    pub fn with_tool(mut self, tool: impl Into<String>, table: ResilienceTable) -> Self {
        self.tools.insert(tool.into(), table);
        self
    }
}

impl ResilienceSwitches {
    /// These switches with retries on or off.
    #[must_use]
    pub fn with_retry(mut self, on: bool) -> Self {
        self.retry = on;
        self
    }

    /// These switches with circuit breakers on or off.
    #[must_use]
    pub fn with_circuit_breaker(mut self, on: bool) -> Self {
        self.circuit_breaker = on;
        self
    }

    /// These switches with rate limits on or off.
    #[must_use]
    pub fn with_rate_limit(mut self, on: bool) -> Self {
        self.rate_limit = on;
        self
    }

    /// These switches with result caches on or off.
    #[must_use]
    pub fn with_cache(mut self, on: bool) -> Self {
        self.cache = on;
        self
    }
}
