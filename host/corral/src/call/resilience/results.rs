//! One tool build's result cache (the state of the cache layer, `cache.rs`),
//! owned by its [`ToolState`](crate::catalog::state::ToolState): at most `max_size`
//! results (`quick_cache`'s S3-FIFO eviction, least useful first), each
//! reused for `ttl_ms` after it was stored. Expiry is checked when an entry
//! is read, so an expired result is never returned and its slot goes to the
//! next insert; memory stays bounded by `max_size` either way.
//!
//! Time comes in as an argument (`now`), so the unit tests drive the TTL with
//! their own instants.

use std::time::{Duration, Instant};

use crate::call::CallOutput;
use crate::config::resilience::CacheConfig;
use corral_sandbox::CallError;

/// A cached outcome: a result, or (with `cache_errors`) a failure.
pub(crate) type Outcome = Result<CallOutput, CallError>;

/// Cached outcomes of one tool build, by the sha256 of the canonical
/// arguments and the context pairs.
pub(crate) struct ResultCache {
    ttl: Duration,
    entries: quick_cache::sync::Cache<[u8; 32], (Instant, Outcome)>,
}

impl std::fmt::Debug for ResultCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultCache")
            .field("ttl", &self.ttl)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl ResultCache {
    /// An empty cache under `config` (`max_size` entries, `ttl_ms`).
    pub(crate) fn new(config: &CacheConfig) -> Self {
        let capacity = usize::try_from(config.max_size.max(1)).unwrap_or(usize::MAX);
        Self {
            ttl: Duration::from_millis(config.ttl_ms),
            entries: quick_cache::sync::Cache::new(capacity),
        }
    }

    /// The outcome stored under `key` less than the TTL before `now`.
    pub(crate) fn get(&self, key: &[u8; 32], now: Instant) -> Option<Outcome> {
        let (stored, outcome) = self.entries.get(key)?;
        if now.saturating_duration_since(stored) < self.ttl {
            return Some(outcome);
        }
        self.entries.remove(key);
        None
    }

    /// Stores `outcome` under `key` as of `now`.
    pub(crate) fn insert(&self, key: [u8; 32], outcome: Outcome, now: Instant) {
        self.entries.insert(key, (now, outcome));
    }

    /// Entries held now (expired ones count until read or evicted).
    pub(crate) fn len(&self) -> u64 {
        self.entries.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(text: &str) -> Outcome {
        Ok(CallOutput {
            tool: "t".into(),
            parts: Vec::new(),
            text: text.into(),
            json: Default::default(),
            return_behavior: corral_sandbox::ReturnBehavior::ToLlm,
            duration: Duration::ZERO,
            fuel_consumed: 1,
            attempts: 1,
            cache_hit: false,
        })
    }

    fn cache(ttl_ms: u64, max_size: u64) -> ResultCache {
        ResultCache::new(&CacheConfig {
            ttl_ms,
            max_size,
            cache_errors: false,
        })
    }

    #[test]
    fn an_entry_lives_for_its_ttl_and_not_a_moment_longer() {
        let c = cache(1_000, 10);
        let t0 = Instant::now();
        c.insert([1; 32], output("a"), t0);
        let hit = c.get(&[1; 32], t0 + Duration::from_millis(999));
        assert_eq!(hit.map(|o| o.map(|o| o.text)), Some(Ok("a".to_string())));
        assert!(c.get(&[1; 32], t0 + Duration::from_millis(1_000)).is_none());
        assert_eq!(c.len(), 0, "an expired entry is dropped when read");
        assert!(c.get(&[2; 32], t0).is_none(), "another key misses");
    }

    #[test]
    fn the_cache_holds_at_most_max_size_entries() {
        let c = cache(60_000, 8);
        let t0 = Instant::now();
        for i in 0..1_000u32 {
            let mut key = [0; 32];
            key[..4].copy_from_slice(&i.to_le_bytes());
            c.insert(key, output("x"), t0);
        }
        assert!(c.len() <= 8, "{} entries", c.len());
    }
}
