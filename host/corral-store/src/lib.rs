//! corral-store: the state that corral's replicas share, behind one small
//! trait, [`SharedStore`].
//!
//! What keeps records here: MCP tasks (status, result, lease, cancel
//! requests and the answers of `tasks/update`, see `corral-mcp`'s `tasks`
//! module) and the used nonces of approval request states (so a state,
//! and the code-mode journal inside it, is used once across replicas),
//! and tenant quotas (one token bucket per tenant and quota,
//! [`SharedStore::spend`], a call's buckets in one batch,
//! [`SharedStore::spend_all`]).
//! Every record has a time to live, so nothing stays forever when the
//! replica that wrote it dies.
//!
//! The operations are the ones Redis gives atomically (`GET`, `SET PX`,
//! `SET NX PX`, `INCRBY` + `PEXPIRE`, `DEL`, and one Lua script for a
//! token bucket), so a Redis store is a thin mapping (`RedisStore`, feature
//! `redis`). [`MemoryStore`] is the
//! default: one process, bounded by an entry count.
//!
//! Keys are short ASCII strings that the caller builds from its own
//! identifiers (`task:<id>`); values are bytes the caller encodes. Nothing
//! here interprets either.

mod bucket;
mod memory;
#[cfg(feature = "redis")]
mod redis;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

pub use bucket::{Bucket, Level, Spend};
pub use memory::{DEFAULT_MEMORY_BYTES, DEFAULT_MEMORY_ENTRIES, MemoryStore};
#[cfg(feature = "redis")]
pub use redis::{REDIS_TIMEOUT, RedisStore};

/// What every [`SharedStore`] operation returns: a boxed future, so the
/// trait is object safe and a host can hold `Arc<dyn SharedStore>`.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be reached or did not answer (a Redis server
    /// down, a connection refused or timed out).
    #[error(
        "the shared store {store} is unreachable: {message}; check that it runs and that this replica can reach it"
    )]
    Unreachable {
        /// Which store (`redis://host:port`, without credentials).
        store: String,
        /// What the client library said.
        message: String,
    },
    /// The value under `key` is not what the operation needs (a counter
    /// that is not a decimal integer).
    #[error("the shared store's key `{key}` holds {found}, not a counter")]
    NotACounter {
        /// The key.
        key: String,
        /// A short description of what it holds.
        found: String,
    },
}

/// A key-value store with a time to live on every record, shared by the
/// replicas of a deployment (or private to one process: [`MemoryStore`]).
///
/// Every write takes a `ttl`; a record is gone (reads `None`) once it has
/// passed. A `ttl` of zero is taken as one millisecond. Implementations
/// must make each operation atomic on its key; none spans two keys.
pub trait SharedStore: Send + Sync + std::fmt::Debug {
    /// Where the records live, for logs and `/readyz`: `memory` or
    /// `redis://host:port` (never credentials).
    fn describe(&self) -> String;

    /// Whether the store answers (a Redis `PING`); the in-memory store
    /// always does.
    ///
    /// # Errors
    /// [`StoreError::Unreachable`] when it does not answer.
    fn check(&self) -> StoreFuture<'_, ()> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// The value under `key`, or `None` when there is none or it expired.
    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Vec<u8>>>;

    /// Sets `key` to `value` for `ttl`, replacing what was there.
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> StoreFuture<'a, ()>;

    /// Sets `key` to `value` for `ttl` only when nothing (live) is there:
    /// `true` when it was set, `false` when the key already held a value.
    /// This is how a record is used once, or answered once.
    fn put_new<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> StoreFuture<'a, bool>;

    /// Adds `delta` to the counter under `key` (a missing key counts as 0)
    /// and returns the new value; the key then lives for `ttl`.
    ///
    /// # Errors
    /// [`StoreError::NotACounter`] when the key holds something else.
    fn add<'a>(&'a self, key: &'a str, delta: i64, ttl: Duration) -> StoreFuture<'a, i64>;

    /// Removes `key`; removing a missing key is not an error.
    fn delete<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()>;

    /// Spends from the token bucket under `key` (shaped by `bucket`; a
    /// missing key is a full bucket) and says what is left: one atomic
    /// step, one round trip. The key lives until the bucket is full again,
    /// so an idle tenant costs nothing. The time is the store's own (a Redis
    /// server's `TIME`), so replicas with skewed clocks agree. The rule is
    /// [`Bucket::spend`].
    ///
    /// # Errors
    /// [`StoreError::NotACounter`] when the key holds something else;
    /// [`StoreError::Unreachable`] as for every operation.
    fn spend<'a>(&'a self, key: &'a str, bucket: Bucket, spend: Spend) -> StoreFuture<'a, Level>;

    /// Several spends in one step: the levels in order. Either every
    /// [`Spend::Take`] of the batch is taken or, when any spend is refused,
    /// none is (a refused check or take leaves every bucket as it was);
    /// charges always land. One round trip in Redis (one script call); the
    /// default runs [`spend`](Self::spend) in turn and gives back the takes
    /// of a refused batch.
    ///
    /// # Errors
    /// As [`spend`](Self::spend).
    fn spend_all<'a>(
        &'a self,
        spends: &'a [(String, Bucket, Spend)],
    ) -> StoreFuture<'a, Vec<Level>> {
        Box::pin(async move {
            let mut levels = Vec::with_capacity(spends.len());
            for (key, bucket, spend) in spends {
                let level = self.spend(key, *bucket, *spend).await?;
                let refused = !level.admitted;
                levels.push(level);
                if refused {
                    // Give back what this batch took.
                    for ((key, bucket, spend), level) in spends.iter().zip(&levels) {
                        if let (Spend::Take(n), true) = (spend, level.admitted) {
                            self.spend(key, *bucket, Spend::Charge(-n)).await?;
                        }
                    }
                    for (_, _, spend) in &spends[levels.len()..] {
                        levels.push(Level {
                            admitted: matches!(spend, Spend::Charge(_)),
                            left: 0.0,
                            wait: std::time::Duration::ZERO,
                        });
                    }
                    break;
                }
            }
            Ok(levels)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::SharedStore;

    const MINUTE: Duration = Duration::from_secs(60);

    /// What every store must do, checked on each.
    pub(crate) async fn contract(store: &dyn SharedStore) {
        // put_new sets a key once.
        store.delete("k").await.unwrap();
        assert!(store.put_new("k", b"a".to_vec(), MINUTE).await.unwrap());
        assert!(!store.put_new("k", b"b".to_vec(), MINUTE).await.unwrap());
        assert_eq!(store.get("k").await.unwrap().as_deref(), Some(&b"a"[..]));
        store.delete("k").await.unwrap();
        assert_eq!(store.get("k").await.unwrap(), None);
        assert!(store.put_new("k", b"c".to_vec(), MINUTE).await.unwrap());
        store.put("k", b"d".to_vec(), MINUTE).await.unwrap();
        assert_eq!(store.get("k").await.unwrap().as_deref(), Some(&b"d"[..]));

        // Counters add, and refuse other values.
        store.delete("n").await.unwrap();
        assert_eq!(store.add("n", 2, MINUTE).await.unwrap(), 2);
        assert_eq!(store.add("n", -3, MINUTE).await.unwrap(), -1);
        store.put("s", b"text".to_vec(), MINUTE).await.unwrap();
        let err = store.add("s", 1, MINUTE).await.unwrap_err();
        assert!(err.to_string().contains("`s`"), "{err}");
        assert!(store.check().await.is_ok());

        // A record is gone after its TTL; a longer one stays.
        store
            .put("short", b"v".to_vec(), Duration::from_millis(30))
            .await
            .unwrap();
        store.put("long", b"v".to_vec(), MINUTE).await.unwrap();
        let start = Instant::now();
        while store.get("short").await.unwrap().is_some() {
            assert!(start.elapsed() < MINUTE, "the record never expired");
            tokio::task::yield_now().await;
        }
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(store.get("long").await.unwrap().is_some());

        buckets(store).await;
    }

    /// The token bucket: a burst, refusals, debt from a charge, the refill.
    async fn buckets(store: &dyn SharedStore) {
        use crate::{Bucket, Spend};
        store.delete("b").await.unwrap();
        // 3 units a minute, all at once.
        let bucket = Bucket::per(3.0, MINUTE, 3.0);
        for left in [2.0, 1.0, 0.0] {
            let level = store.spend("b", bucket, Spend::Take(1.0)).await.unwrap();
            assert!(level.admitted, "{level:?}");
            assert!((level.left - left).abs() < 0.01, "{level:?}");
        }
        let refused = store.spend("b", bucket, Spend::Take(1.0)).await.unwrap();
        assert!(!refused.admitted);
        // One unit comes back in 20 s.
        assert!(
            refused.wait > Duration::from_secs(19) && refused.wait <= Duration::from_secs(20),
            "{refused:?}"
        );
        // A refusal took nothing: the next waits no longer.
        let again = store.spend("b", bucket, Spend::Take(1.0)).await.unwrap();
        assert!(!again.admitted && again.wait <= refused.wait, "{again:?}");

        // A charge always lands, and can go into debt; a check then refuses
        // until the debt is paid back.
        store.delete("c").await.unwrap();
        let bucket = Bucket::per(100.0, MINUTE, 100.0);
        assert!(
            store
                .spend("c", bucket, Spend::Check)
                .await
                .unwrap()
                .admitted
        );
        let charged = store
            .spend("c", bucket, Spend::Charge(250.0))
            .await
            .unwrap();
        assert!(charged.admitted && charged.left < -149.0, "{charged:?}");
        let check = store.spend("c", bucket, Spend::Check).await.unwrap();
        assert!(!check.admitted);
        assert!(check.wait > Duration::from_secs(89), "{check:?}");
        assert!(check.wait <= Duration::from_secs(90), "{check:?}");

        // A bucket refills: 10 units a second, spent, back after 100 ms.
        store.delete("r").await.unwrap();
        let fast = Bucket::per(10.0, Duration::from_secs(1), 1.0);
        assert!(
            store
                .spend("r", fast, Spend::Take(1.0))
                .await
                .unwrap()
                .admitted
        );
        let start = Instant::now();
        while !store
            .spend("r", fast, Spend::Take(1.0))
            .await
            .unwrap()
            .admitted
        {
            assert!(start.elapsed() < MINUTE, "the bucket never refilled");
            tokio::task::yield_now().await;
        }
        assert!(
            start.elapsed() >= Duration::from_millis(80),
            "{:?}",
            start.elapsed()
        );

        // A batch takes all or nothing.
        store.delete("x").await.unwrap();
        store.delete("y").await.unwrap();
        let big = Bucket::per(10.0, MINUTE, 10.0);
        let one = Bucket::per(1.0, MINUTE, 1.0);
        store.spend("y", one, Spend::Take(1.0)).await.unwrap();
        let batch = vec![
            ("x".to_string(), big, Spend::Take(1.0)),
            ("y".to_string(), one, Spend::Take(1.0)),
        ];
        let levels = store.spend_all(&batch).await.unwrap();
        assert!(levels[0].admitted && !levels[1].admitted, "{levels:?}");
        let x = store.spend("x", big, Spend::Take(10.0)).await.unwrap();
        assert!(x.admitted, "the refused batch gave its take back: {x:?}");

        // A key that holds something else is no bucket.
        store.put("s", b"text".to_vec(), MINUTE).await.unwrap();
        assert!(store.spend("s", fast, Spend::Check).await.is_err());
    }
}
