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
#[non_exhaustive]
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
    /// [`DEFAULT_MAX_CONTEXT_KEYS`](crate::call::resilience::DEFAULT_MAX_CONTEXT_KEYS).
    #[serde(default)]
    pub max_context_keys: Option<u64>,
}

fn per_second() -> Per {
    Per::Second
}

pub(super) fn default_wait() -> u64 {
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

pub(super) fn default_cache_size() -> u64 {
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
#[non_exhaustive]
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

mod build;
mod effective;

pub(crate) use effective::check_table;
pub use effective::effective;
