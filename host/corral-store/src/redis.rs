//! The Redis [`SharedStore`] (feature `redis`): every replica pointed at the
//! same server shares the records. Each operation is one Redis command (or
//! one `MULTI` of two on the same key, or the token bucket's Lua script,
//! [`SPEND`]), so each is atomic on its key and takes one round trip.
//!
//! The connection is made on first use, not at start, so a replica starts
//! while Redis is down; the `redis` crate's connection manager reconnects
//! after a failure. Every operation gives up after [`REDIS_TIMEOUT`] and
//! fails with [`StoreError::Unreachable`], naming the server without its
//! credentials.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::OnceCell;

use crate::{Bucket, Level, SharedStore, Spend, StoreError, StoreFuture};

/// [`Bucket::spend`] in Lua, line for line, for a batch of buckets on the
/// server's clock (`TIME`, which Redis 5 and later replicate as effects):
/// each `KEYS[i]` a bucket, `ARGV[4i-3..4i]` its ms per unit, capacity,
/// mode (`check`, `take`, `charge`) and units. Every level is worked out
/// first; then, unless one was refused, every bucket is written (a refused
/// batch writes only its charges). Replies `admitted, left, wait_ms` per
/// bucket, the floats as strings (Redis would cut a Lua number to an
/// integer).
const SPEND: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local dust = 1e-9
local all = true
local plan = {}
for i, key in ipairs(KEYS) do
  local per = tonumber(ARGV[4 * i - 3])
  local cap = tonumber(ARGV[4 * i - 2])
  local mode = ARGV[4 * i - 1]
  local n = tonumber(ARGV[4 * i])
  local stored = redis.call('GET', key)
  local full = now
  if stored then
    local f = tonumber(stored)
    if f == nil then return redis.error_reply('NOTBUCKET ' .. key .. ' holds no bucket') end
    if f > now then full = f end
  end
  local used = (full - now) / per
  local admitted, cost, over = true, 0, 0
  if mode == 'check' then
    admitted = used < cap - dust
    over = used - cap
  elseif mode == 'take' then
    admitted = used + n <= cap + dust
    if admitted then cost = n end
    over = used + n - cap
  else
    cost = n
  end
  if not admitted then all = false end
  plan[i] = {key, stored, full + cost * per, per, cap, admitted, over, mode}
end
local out = {}
for i, p in ipairs(plan) do
  local new = p[3]
  if not all and p[8] ~= 'charge' then new = math.max(now, tonumber(p[2] or now)) end
  if new > now then
    redis.call('SET', p[1], string.format('%.17g', new), 'PX', math.max(1, math.ceil(new - now)))
  elseif p[2] then
    redis.call('DEL', p[1])
  end
  local wait = 0
  if not p[6] then wait = math.max(1, p[7] * p[4]) end
  out[3 * i - 2] = p[6] and 1 or 0
  out[3 * i - 1] = string.format('%.17g', p[5] - (new - now) / p[4])
  out[3 * i] = string.format('%.17g', wait)
end
return out
";

/// The script, hashed once (`EVALSHA`, with `EVAL` when the server has not
/// seen it).
fn script() -> &'static redis::Script {
    static SCRIPT: std::sync::OnceLock<redis::Script> = std::sync::OnceLock::new();
    SCRIPT.get_or_init(|| redis::Script::new(SPEND))
}

/// How long a connection attempt or a command may take: 2 s.
pub const REDIS_TIMEOUT: Duration = Duration::from_secs(2);

/// Records in a Redis server shared by the replicas.
pub struct RedisStore {
    client: redis::Client,
    shown: String,
    connection: OnceCell<ConnectionManager>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("server", &self.shown)
            .finish_non_exhaustive()
    }
}

/// `url` without its credentials (`redis://user:pass@host:6379/0` →
/// `redis://host:6379/0`).
fn without_credentials(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://{}", &url[at + 1..]),
        _ => url.to_owned(),
    }
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisStore {
    /// A store on the server at `url` (`redis://[user:password@]host[:port][/db]`).
    /// Nothing is connected until the first operation.
    ///
    /// # Errors
    /// [`StoreError::Unreachable`] when `url` is not a Redis URL.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let shown = without_credentials(url);
        let client = redis::Client::open(url).map_err(|err| StoreError::Unreachable {
            store: shown.clone(),
            message: format!("not a Redis URL ({err}); write redis://host:port"),
        })?;
        Ok(Self {
            client,
            shown,
            connection: OnceCell::new(),
        })
    }

    fn unreachable(&self, err: &redis::RedisError) -> StoreError {
        StoreError::Unreachable {
            store: self.shown.clone(),
            message: err.to_string(),
        }
    }

    /// The shared connection, made on first use.
    async fn connection(&self) -> Result<ConnectionManager, StoreError> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_TIMEOUT))
            .set_response_timeout(Some(REDIS_TIMEOUT))
            .set_number_of_retries(1);
        let made = self
            .connection
            .get_or_try_init(|| ConnectionManager::new_with_config(self.client.clone(), config))
            .await;
        made.cloned().map_err(|err| self.unreachable(&err))
    }

    /// Runs `cmd` and reads its reply as `T`.
    async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, StoreError> {
        let mut connection = self.connection().await?;
        cmd.query_async(&mut connection)
            .await
            .map_err(|err| self.unreachable(&err))
    }
}

impl SharedStore for RedisStore {
    fn describe(&self) -> String {
        self.shown.clone()
    }

    fn check(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let _: String = self.query(&redis::cmd("PING")).await?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move { self.query(redis::cmd("GET").arg(key)).await })
    }

    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: () = self
                .query(
                    redis::cmd("SET")
                        .arg(key)
                        .arg(value)
                        .arg("PX")
                        .arg(millis(ttl)),
                )
                .await?;
            Ok(())
        })
    }

    fn put_new<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let set: Option<String> = self
                .query(
                    redis::cmd("SET")
                        .arg(key)
                        .arg(value)
                        .arg("PX")
                        .arg(millis(ttl))
                        .arg("NX"),
                )
                .await?;
            Ok(set.is_some())
        })
    }

    fn add<'a>(&'a self, key: &'a str, delta: i64, ttl: Duration) -> StoreFuture<'a, i64> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let reply: Result<(i64,), redis::RedisError> = redis::pipe()
                .atomic()
                .cmd("INCRBY")
                .arg(key)
                .arg(delta)
                .cmd("PEXPIRE")
                .arg(key)
                .arg(millis(ttl))
                .ignore()
                .query_async(&mut connection)
                .await;
            match reply {
                Ok((value,)) => Ok(value),
                // An error reply (not an integer, wrong type): the key holds
                // something else.
                Err(err) if matches!(err.kind(), redis::ErrorKind::Server(_)) => {
                    Err(StoreError::NotACounter {
                        key: key.to_owned(),
                        found: err.to_string(),
                    })
                }
                Err(err) => Err(self.unreachable(&err)),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = self.query(redis::cmd("DEL").arg(key)).await?;
            Ok(())
        })
    }

    fn spend<'a>(&'a self, key: &'a str, bucket: Bucket, spend: Spend) -> StoreFuture<'a, Level> {
        Box::pin(async move {
            let batch = [(key.to_owned(), bucket, spend)];
            let mut levels = self.spend_all(&batch).await?;
            Ok(levels.remove(0))
        })
    }

    fn spend_all<'a>(
        &'a self,
        spends: &'a [(String, Bucket, Spend)],
    ) -> StoreFuture<'a, Vec<Level>> {
        Box::pin(async move {
            if spends.is_empty() {
                return Ok(Vec::new());
            }
            let mut invocation = script().prepare_invoke();
            for (key, bucket, spend) in spends {
                let (mode, units) = match spend {
                    Spend::Check => ("check", 0.0),
                    Spend::Take(n) => ("take", *n),
                    Spend::Charge(n) => ("charge", *n),
                };
                invocation
                    .key(key)
                    .arg(bucket.ms_per_unit)
                    .arg(bucket.capacity)
                    .arg(mode)
                    .arg(units);
            }
            let mut connection = self.connection().await?;
            let reply: Result<Vec<String>, redis::RedisError> =
                invocation.invoke_async(&mut connection).await;
            match reply {
                Ok(flat) => Ok(flat
                    .chunks(3)
                    .map(|c| {
                        let wait: f64 = c.get(2).and_then(|w| w.parse().ok()).unwrap_or(1.0);
                        Level {
                            admitted: c.first().is_some_and(|a| a == "1"),
                            left: c.get(1).and_then(|l| l.parse().ok()).unwrap_or(0.0),
                            wait: Duration::from_secs_f64(wait.max(0.0) / 1_000.0),
                        }
                    })
                    .collect()),
                Err(err) if matches!(err.kind(), redis::ErrorKind::Server(_)) => {
                    Err(StoreError::NotACounter {
                        key: spends[0].0.clone(),
                        found: err.to_string(),
                    })
                }
                Err(err) => Err(self.unreachable(&err)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_show() {
        assert_eq!(
            without_credentials("redis://user:s3cret@cache:6379/2"),
            "redis://cache:6379/2"
        );
        assert_eq!(without_credentials("redis://cache"), "redis://cache");
    }

    #[tokio::test]
    async fn an_unreachable_server_fails_naming_it_without_credentials() {
        // Port 9 on loopback (discard) is closed on test machines.
        let store = RedisStore::open("redis://user:s3cret@127.0.0.1:9").expect("a Redis URL");
        let err = store.get("k").await.unwrap_err().to_string();
        assert!(err.contains("redis://127.0.0.1:9"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
        assert!(err.contains("unreachable"), "{err}");
        assert!(store.check().await.is_err());
    }

    /// A `redis-server` of its own on a free loopback port (the test
    /// command installs Debian's), stopped when dropped.
    struct Server(std::process::Child, u16);

    impl Server {
        fn start() -> Self {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let child = std::process::Command::new("redis-server")
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                ])
                .args(["--appendonly", "no"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect(
                    "redis-server (Debian's redis-server package; scripts/test.sh installs it)",
                );
            Self(child, port)
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[tokio::test]
    async fn a_real_server_keeps_the_contract() {
        let server = Server::start();
        let store = RedisStore::open(&format!("redis://127.0.0.1:{}", server.1)).expect("url");
        // Wait for the server to accept: the first PING that answers.
        let start = std::time::Instant::now();
        while store.check().await.is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "redis-server never answered"
            );
            tokio::task::yield_now().await;
        }
        crate::tests::contract(&store).await;
    }
}
