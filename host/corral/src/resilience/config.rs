//! The knobs of the resilience layers (TnsAI's `@Retry`,
//! `@RateLimit`, `@Cached`, circuit breaker and health thresholds), as a
//! policy file writes them, and the one rule that turns a tool's hints, its
//! plugin's policy and the host's switches into its effective configuration
//! ([`effective`]).
//!
//! | knob | unit | default |
//! |---|---|---|
//! | `retry.max_attempts` | attempts in all (1 = no retry) | 3 |
//! | `retry.initial_delay_ms` | milliseconds before the second attempt | 100 |
//! | `retry.multiplier` | factor between delays | 2.0 |
//! | `retry.max_delay_ms` | milliseconds, the longest delay | 2 000 |
//! | `retry.jitter` | randomize delays | true |
//! | `circuit_breaker.failure_threshold` | consecutive failed calls that open it | 5 |
//! | `circuit_breaker.cool_down_ms` | milliseconds open before one probe | 30 000 |
//! | `rate_limit.requests` | calls per `per` | (required) |
//! | `rate_limit.per` | `second`, `minute` or `hour` | `second` |
//! | `rate_limit.burst_size` | calls allowed at once | `requests` |
//! | `rate_limit.throw_on_limit` | refuse at once instead of waiting | false |
//! | `rate_limit.wait_timeout_ms` | milliseconds to wait for a slot before refusing | 5 000 |
//! | `rate_limit.per_context_key` | a context key (a tenant) with its own budget | none |
//! | `rate_limit.max_context_keys` | tenants' budgets kept at once, least recently used dropped first | 10 000 |
//! | `cache.ttl_ms` | milliseconds a result is reused | (required) |
//! | `cache.max_size` | results kept per tool | 1 000 |
//! | `cache.cache_errors` | reuse failures too | false |
//! | `health.window` | recent calls the status is computed from | 100 |
//! | `health.up_success_rate` | success rate for UP | 0.95 |
//! | `health.degraded_success_rate` | success rate below which the tool is DOWN | 0.80 |
//! | `health.p95_ms` | p95 latency over which an otherwise UP tool is DEGRADED | 5 000 |
//! | `audit.level` | `none`, `gated` or `all` | `gated` |
//! | `audit.record_arguments` | record the arguments (masked), not only their digest | false |
//! | `audit.mask_fields` | argument fields replaced by `"***"` when recorded | none |
//!
//! Retry and cache apply only to tools declared `idempotent`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::spec::ToolMetadata;

/// Retry with exponential backoff (TnsAI's `@Retry`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RetryConfig {
    /// Attempts in all; 1 means no retry.
    pub max_attempts: u32,
    /// Milliseconds before the second attempt.
    pub initial_delay_ms: u64,
    /// Factor between successive delays.
    pub multiplier: f32,
    /// The longest delay, in milliseconds.
    pub max_delay_ms: u64,
    /// Randomize each delay (full jitter), so retries from many callers do
    /// not line up.
    pub jitter: bool,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_delay_ms: 100,
            multiplier: 2.0,
            max_delay_ms: 2_000,
            jitter: true,
        }
    }
}

/// Fail fast after consecutive failures (TnsAI's circuit breaker).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct BreakerConfig {
    /// Consecutive failed calls (after retries) that open the circuit.
    pub failure_threshold: u32,
    /// Milliseconds the circuit stays open before one probe call.
    pub cool_down_ms: u64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            cool_down_ms: 30_000,
        }
    }
}

/// The period of a rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Per {
    /// Per second.
    Second,
    /// Per minute.
    Minute,
    /// Per hour.
    Hour,
}

impl Per {
    /// The period in milliseconds.
    pub fn millis(self) -> u64 {
        match self {
            Self::Second => 1_000,
            Self::Minute => 60_000,
            Self::Hour => 3_600_000,
        }
    }
}

/// A rate limit (TnsAI's `@RateLimit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RateLimitConfig {
    /// Calls allowed per period.
    pub requests: u32,
    /// The period.
    #[serde(default = "per_second")]
    pub per: Per,
    /// Calls allowed at once; `requests` when unset.
    #[serde(default)]
    pub burst_size: Option<u32>,
    /// Refuse at once when the limit is reached, instead of waiting.
    #[serde(default)]
    pub throw_on_limit: bool,
    /// How long to wait for a slot before refusing, in milliseconds.
    #[serde(default = "default_wait")]
    pub wait_timeout_ms: u64,
    /// A context key whose values get separate budgets (a tenant).
    #[serde(default)]
    pub per_context_key: Option<String>,
    /// With `per_context_key`: how many tenants' budgets are kept at once
    /// (the least recently used is dropped past it); `None` for
    /// [`DEFAULT_MAX_CONTEXT_KEYS`](crate::resilience::DEFAULT_MAX_CONTEXT_KEYS).
    #[serde(default)]
    pub max_context_keys: Option<u64>,
}

fn per_second() -> Per {
    Per::Second
}

fn default_wait() -> u64 {
    5_000
}

/// A result cache (TnsAI's `@Cached`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CacheConfig {
    /// How long a result is reused, in milliseconds.
    pub ttl_ms: u64,
    /// Results kept per tool.
    #[serde(default = "default_cache_size")]
    pub max_size: u64,
    /// Reuse failures too.
    #[serde(default)]
    pub cache_errors: bool,
}

fn default_cache_size() -> u64 {
    1_000
}

/// When a tool is UP, DEGRADED or DOWN (TnsAI's health monitoring).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct HealthThresholds {
    /// Recent calls the status is computed from.
    pub window: usize,
    /// Success rate at or above which a tool is UP (unless slow).
    pub up_success_rate: f64,
    /// Success rate below which a tool is DOWN.
    pub degraded_success_rate: f64,
    /// p95 latency, in milliseconds, above which an otherwise UP tool is
    /// DEGRADED.
    pub p95_ms: u64,
}

impl Default for HealthThresholds {
    fn default() -> Self {
        Self {
            window: 100,
            up_success_rate: 0.95,
            degraded_success_rate: 0.80,
            p95_ms: 5_000,
        }
    }
}

/// Which executions go to the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditLevel {
    /// Nothing, not even approval decisions.
    None,
    /// Approval decisions of gated calls only.
    #[default]
    Gated,
    /// Every execution, and every approval decision.
    All,
}

/// What the audit log records for a tool (TnsAI's `@Security`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AuditConfig {
    /// Which executions are recorded.
    pub level: AuditLevel,
    /// Record the arguments themselves (masked), not only their sha256.
    pub record_arguments: bool,
    /// Top-level argument fields replaced by `"***"` when recorded.
    pub mask_fields: Vec<String>,
}

/// One `[resilience]` table of a policy: for the whole plugin, or for one
/// tool under `[resilience.tools.NAME]`. Every entry optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ResilienceTable {
    /// Retry (idempotent tools only).
    #[serde(default)]
    pub retry: Option<RetryConfig>,
    /// Circuit breaker.
    #[serde(default)]
    pub circuit_breaker: Option<BreakerConfig>,
    /// Rate limit.
    #[serde(default)]
    pub rate_limit: Option<RateLimitConfig>,
    /// Result cache (idempotent tools only).
    #[serde(default)]
    pub cache: Option<CacheConfig>,
    /// Health thresholds.
    #[serde(default)]
    pub health: Option<HealthThresholds>,
    /// Audit.
    #[serde(default)]
    pub audit: Option<AuditConfig>,
}

/// A policy's `[resilience]`: the plugin-wide table and per-tool tables, by
/// the name the plugin gives the tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ResiliencePolicy {
    /// For every tool of the plugin.
    #[serde(flatten)]
    pub plugin: ResilienceTable,
    /// For single tools, replacing the plugin-wide entry of each layer they
    /// set.
    #[serde(default)]
    pub tools: BTreeMap<String, ResilienceTable>,
}

/// Which layers the host runs at all (host configuration; a switched-off
/// layer is off whatever policies and hints say). Default: all on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ResilienceSwitches {
    /// Retries.
    pub retry: bool,
    /// Circuit breakers.
    pub circuit_breaker: bool,
    /// Rate limits.
    pub rate_limit: bool,
    /// Result caches.
    pub cache: bool,
}

impl Default for ResilienceSwitches {
    fn default() -> Self {
        Self {
            retry: true,
            circuit_breaker: true,
            rate_limit: true,
            cache: true,
        }
    }
}

impl ResilienceSwitches {
    /// Every layer off.
    pub fn none() -> Self {
        Self {
            retry: false,
            circuit_breaker: false,
            rate_limit: false,
            cache: false,
        }
    }
}

/// One tool's effective resilience configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolResilience {
    /// Retry, if any.
    pub retry: Option<RetryConfig>,
    /// Circuit breaker, if any.
    pub circuit_breaker: Option<BreakerConfig>,
    /// The tool's own rate limit, if any.
    pub rate_limit: Option<RateLimitConfig>,
    /// The plugin-wide rate limit the tool shares with its siblings, if any.
    pub plugin_rate_limit: Option<RateLimitConfig>,
    /// Result cache, if any.
    pub cache: Option<CacheConfig>,
    /// Health thresholds.
    pub health: HealthThresholds,
    /// Audit.
    pub audit: AuditConfig,
}

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
    /// [`DEFAULT_MAX_CONTEXT_KEYS`](crate::resilience::DEFAULT_MAX_CONTEXT_KEYS)).
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
             reusing a call could repeat its effect; drop them, or have the plugin declare the \
             tool idempotent"
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
    use super::*;
    use crate::spec::ResilienceHints;

    fn metadata(idempotent: bool, hints: Option<ResilienceHints>) -> ToolMetadata {
        ToolMetadata {
            idempotent,
            resilience: hints,
            ..ToolMetadata::new("t")
        }
    }

    #[test]
    fn the_policy_wins_over_hints_and_switches_win_over_both() {
        let hints = ResilienceHints {
            max_attempts: Some(4),
            cache_ttl_ms: Some(1_000),
            requests_per_second: Some(7),
        };
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
