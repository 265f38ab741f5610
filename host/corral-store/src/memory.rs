//! The in-memory [`SharedStore`]: one process's records in a bounded
//! `moka` cache, each with its own time to live.

use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::ops::compute::Op;
use moka::sync::Cache;

use crate::{Bucket, Level, SharedStore, Spend, StoreError, StoreFuture};

/// The default bound of a [`MemoryStore`]: 100 000 records. A task keeps
/// a few (status, cancel request, answers), so this holds tens of
/// thousands of tasks; past it, moka evicts the records it judges least
/// useful.
pub const DEFAULT_MEMORY_ENTRIES: u64 = 100_000;

/// The default bound of a [`MemoryStore`]'s bytes (keys and values):
/// 268 435 456 (256 MiB). Task results and the `corral://` resources of
/// tool results can be as large as the output cap, so a count alone does
/// not bound the memory; past either bound, moka evicts.
pub const DEFAULT_MEMORY_BYTES: u64 = 256 << 20;

/// What one record weighs against [`DEFAULT_MEMORY_BYTES`]: its key and
/// value, plus 64 bytes of bookkeeping.
fn weight(key: &str, record: &Record) -> u32 {
    u32::try_from(key.len() + record.value.len() + 64).unwrap_or(u32::MAX)
}

/// A record and how long it lives from its last write.
#[derive(Clone)]
struct Record {
    value: Arc<Vec<u8>>,
    ttl: Duration,
}

/// Each record expires `ttl` after its last write.
struct PerRecord;

impl moka::Expiry<String, Record> for PerRecord {
    fn expire_after_create(&self, _key: &String, value: &Record, _at: Instant) -> Option<Duration> {
        Some(value.ttl)
    }

    fn expire_after_update(
        &self,
        _key: &String,
        value: &Record,
        _at: Instant,
        _left: Option<Duration>,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// Records in this process's memory: the default store of a single
/// replica. Cheap to clone; clones share the records.
#[derive(Clone)]
pub struct MemoryStore {
    records: Cache<String, Record>,
    /// The zero of the store's clock (buckets' full times are milliseconds
    /// since then).
    epoch: Instant,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("records", &self.records.entry_count())
            .finish()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::bounded(DEFAULT_MEMORY_ENTRIES)
    }
}

impl MemoryStore {
    /// A store of at most `max_entries` records, and at most
    /// [`DEFAULT_MEMORY_BYTES`] in all (or `max_entries` × 2 684 bytes, if
    /// less).
    pub fn bounded(max_entries: u64) -> Self {
        // moka bounds by one weight: each record weighs its bytes, and the
        // count bound becomes a byte bound at 2 684 bytes a record (the
        // default's 100 000 records and 256 MiB).
        let per_record = DEFAULT_MEMORY_BYTES / DEFAULT_MEMORY_ENTRIES;
        let max_bytes = max_entries
            .saturating_mul(per_record)
            .min(DEFAULT_MEMORY_BYTES);
        Self {
            records: Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|key: &String, record: &Record| weight(key, record))
                .expire_after(PerRecord)
                .build(),
            epoch: Instant::now(),
        }
    }

    /// How many records it holds now (after evictions that were due).
    pub fn len(&self) -> u64 {
        self.records.run_pending_tasks();
        self.records.entry_count()
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn record(value: Vec<u8>, ttl: Duration) -> Record {
        Record {
            value: Arc::new(value),
            ttl: ttl.max(Duration::from_millis(1)),
        }
    }
}

impl SharedStore for MemoryStore {
    fn describe(&self) -> String {
        "memory".into()
    }

    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        let found = self.records.get(key).map(|r| r.value.as_ref().clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> StoreFuture<'a, ()> {
        self.records
            .insert(key.to_owned(), Self::record(value, ttl));
        Box::pin(std::future::ready(Ok(())))
    }

    fn put_new<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> StoreFuture<'a, bool> {
        let entry = self
            .records
            .entry(key.to_owned())
            .or_insert_with(|| Self::record(value, ttl));
        Box::pin(std::future::ready(Ok(entry.is_fresh())))
    }

    fn add<'a>(&'a self, key: &'a str, delta: i64, ttl: Duration) -> StoreFuture<'a, i64> {
        let mut outcome = Ok(0);
        self.records
            .entry(key.to_owned())
            .and_compute_with(|current| {
                let now = match current.map(|e| e.into_value()) {
                    None => 0,
                    Some(record) => match std::str::from_utf8(&record.value)
                        .ok()
                        .and_then(|s| s.parse::<i64>().ok())
                    {
                        Some(n) => n,
                        None => {
                            outcome = Err(StoreError::NotACounter {
                                key: key.to_owned(),
                                found: format!("{} bytes", record.value.len()),
                            });
                            return Op::Nop;
                        }
                    },
                };
                let next = now.saturating_add(delta);
                outcome = Ok(next);
                Op::Put(Self::record(next.to_string().into_bytes(), ttl))
            });
        Box::pin(std::future::ready(outcome))
    }

    fn delete<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
        self.records.invalidate(key);
        Box::pin(std::future::ready(Ok(())))
    }

    fn spend<'a>(&'a self, key: &'a str, bucket: Bucket, spend: Spend) -> StoreFuture<'a, Level> {
        let now = self.epoch.elapsed().as_secs_f64() * 1_000.0;
        let mut outcome = Err(StoreError::NotACounter {
            key: key.to_owned(),
            found: "nothing".into(),
        });
        self.records
            .entry(key.to_owned())
            .and_compute_with(|current| {
                let full = match current.map(|e| e.into_value()) {
                    None => None,
                    Some(record) => match std::str::from_utf8(&record.value)
                        .ok()
                        .and_then(|s| s.parse::<f64>().ok())
                    {
                        Some(full) => Some(full),
                        None => {
                            outcome = Err(StoreError::NotACounter {
                                key: key.to_owned(),
                                found: format!("{} bytes, not a bucket", record.value.len()),
                            });
                            return Op::Nop;
                        }
                    },
                };
                let (new, level) = bucket.spend(full, now, spend);
                outcome = Ok(level);
                if new > now {
                    Op::Put(Self::record(
                        new.to_string().into_bytes(),
                        Bucket::ttl(new, now),
                    ))
                } else if full.is_some() {
                    Op::Remove
                } else {
                    Op::Nop
                }
            });
        Box::pin(std::future::ready(outcome))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_keeps_the_contract() {
        crate::tests::contract(&MemoryStore::default()).await;
    }

    #[tokio::test]
    async fn buckets_of_many_tenants_stay_within_the_bound() {
        let store = MemoryStore::bounded(1_000);
        let bucket = Bucket::per(10.0, Duration::from_secs(3_600), 10.0);
        for i in 0..100_000 {
            let level = store
                .spend(&format!("quota:calls:{i}"), bucket, Spend::Take(1.0))
                .await
                .expect("spend");
            assert!(level.admitted);
        }
        store.records.run_pending_tasks();
        let bound = 1_000 * (DEFAULT_MEMORY_BYTES / DEFAULT_MEMORY_ENTRIES);
        let held = store.records.weighted_size();
        assert!(held <= bound, "{held} bytes held, bound {bound}");
        // A bucket's record weighs about 100 bytes: tens of thousands of
        // the 100 000 were forgotten.
        assert!(store.records.entry_count() < 50_000);
    }

    #[tokio::test]
    async fn large_records_stay_within_the_byte_bound() {
        // 1 000 records' worth: 2 684 000 bytes.
        let store = MemoryStore::bounded(1_000);
        let bound = 1_000 * (DEFAULT_MEMORY_BYTES / DEFAULT_MEMORY_ENTRIES);
        // 100 records of 100 KiB: nearly four times the bound, in 100
        // records, far fewer than the 1 000 the count alone would allow.
        for i in 0..100 {
            let key = format!("resource:{i}");
            store
                .put(&key, vec![0u8; 100 << 10], Duration::from_secs(60))
                .await
                .expect("put");
        }
        store.records.run_pending_tasks();
        let held = store.records.weighted_size();
        assert!(held <= bound, "{held} bytes held, bound {bound}");
        assert!(held > bound / 2, "{held} bytes held, bound {bound}");
    }
}
