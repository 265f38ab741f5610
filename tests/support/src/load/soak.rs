//! Soak (issue 29, campaign 2): `corral serve --http` called over MCP at a
//! steady moderate rate for a long while, the same mix as the mixed load,
//! with the server sampled every few seconds: RSS (the pool's slots and the
//! rest, [`super::rss_split_mib`]), open file descriptors, threads, and
//! instances in use (`corral_instances_in_use` from `/metrics`).
//!
//! Before the first sample, a warm-up runs the mix at the soak's own cap of
//! calls in flight (64). The instance pool keeps up to
//! `keep_resident_bytes` (4 MiB) of each slot a call used resident, by
//! design, so without it each new high of calls in flight would touch a
//! fresh slot and read as 4 MiB of growth (the second 30-minute soak showed
//! such a step at 23 minutes); after it, no call of the soak touches a slot
//! that was never used.
//!
//! Beside the steady calls, a client opens a session of its own every
//! second, makes one call in it and closes it (`DELETE`), as the many
//! short-lived clients of a shared server do. The samples count the
//! sessions' `list_changed` listeners (`corral_change_subscribers`): a
//! listener that outlived its session (the leak the `mcp_messages` fuzz
//! target found, issue 29) shows as a count that climbs, where it should
//! stay at the soak's own session and the one being churned.
//!
//! Each second also opens a 2026-07-28 `subscriptions/listen` stream, reads
//! its acknowledgement and drops the connection, as a stateless client that
//! goes away does: its watcher counts in `corral_change_subscribers` too,
//! and must end with the stream.
//!
//! The verdict asks for no failed call, no listener or fd left once every
//! session has closed, and no upward trend: the slope of RSS, threads and
//! listeners over the second half of the run, by least squares, per hour
//! ([`SoakTally::passed`] says why fds are judged by their count instead).

use std::io::{Read as _, Write as _};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Kind, McpServer, Record, mix};

/// One look at the server.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// Seconds since the start.
    pub at: f64,
    /// RSS in the pool's slots, MiB.
    pub rss_pool: f64,
    /// RSS outside them, MiB.
    pub rss_rest: f64,
    /// Open file descriptors.
    pub fds: f64,
    /// Threads.
    pub threads: f64,
    /// Instances running.
    pub instances: f64,
    /// Sessions' `list_changed` listeners alive.
    pub listeners: f64,
}

/// What a soak came to.
#[derive(Debug, Default)]
pub struct SoakTally {
    /// Calls made.
    pub calls: usize,
    /// Calls that did not end as their kind must, with the first few.
    pub mismatches: usize,
    /// The first few mismatches.
    pub examples: Vec<String>,
    /// Every sample.
    pub samples: Vec<Sample>,
    /// Instances in use once the calls had drained.
    pub instances_after: f64,
    /// Short-lived sessions opened, called once and closed.
    pub sessions: usize,
    /// Listeners alive once every session, the soak's own included, had
    /// closed: 0 when each listener ended with its session.
    pub listeners_after: f64,
    /// The server's open fds before the warm-up, with the soak's own
    /// session open and idle.
    pub fds_before: f64,
    /// Its open fds once every session had closed: at most
    /// [`fds_before`](Self::fds_before) when no fd outlived its call or
    /// session.
    pub fds_after: f64,
}

/// Least-squares slope of `y` over `at` (per second), for the samples of
/// the second half.
fn slope(samples: &[Sample], y: impl Fn(&Sample) -> f64) -> f64 {
    let half = &samples[samples.len() / 2..];
    let n = half.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mx = half.iter().map(|s| s.at).sum::<f64>() / n;
    let my = half.iter().map(&y).sum::<f64>() / n;
    let sxy: f64 = half.iter().map(|s| (s.at - mx) * (y(s) - my)).sum();
    let sxx: f64 = half.iter().map(|s| (s.at - mx).powi(2)).sum();
    if sxx == 0.0 { 0.0 } else { sxy / sxx }
}

impl SoakTally {
    /// Slopes per hour over the second half: (RSS in the slots MiB, RSS
    /// rest MiB, fds, threads, listeners).
    pub fn slopes_per_hour(&self) -> (f64, f64, f64, f64, f64) {
        let h = |f: fn(&Sample) -> f64| slope(&self.samples, f) * 3600.0;
        (
            h(|s| s.rss_pool),
            h(|s| s.rss_rest),
            h(|s| s.fds),
            h(|s| s.threads),
            h(|s| s.listeners),
        )
    }

    /// No failed call, no instance left in use, no listener and no fd
    /// left once every session has closed, and no upward trend: over the
    /// second half the whole RSS grows by less than 5 % of its mean per
    /// hour, and threads and listeners by less than one per hour.
    ///
    /// The whole RSS, not one side of the split: the split goes by mapping
    /// size, and a slot's mapping can move 4 MiB from one side to the other
    /// between samples (seen in the first 30-minute soak). Fds by their
    /// count once every session has closed against the count before the
    /// warm-up, not by their slope: while the calls run, the count holds
    /// each connection in flight (21 to 23 at the soak's rate), and that
    /// jitter alone gives the second half's slope a standard error of
    /// about 1.2 per hour (+0.92 and +1.43 in two runs that left no fd
    /// behind).
    pub fn passed(&self) -> bool {
        let (_, _, _, threads, listeners) = self.slopes_per_hour();
        let total = slope(&self.samples, |s| s.rss_pool + s.rss_rest) * 3600.0;
        let half = &self.samples[self.samples.len() / 2..];
        let mean =
            half.iter().map(|s| s.rss_pool + s.rss_rest).sum::<f64>() / half.len().max(1) as f64;
        self.mismatches == 0
            && self.instances_after == 0.0
            && self.listeners_after == 0.0
            && self.fds_after <= self.fds_before
            && total < mean * 0.05
            && threads < 1.0
            && listeners < 1.0
    }
}

impl std::fmt::Display for SoakTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (pool, rest, fds, threads, listeners) = self.slopes_per_hour();
        let most = self.samples.iter().map(|s| s.listeners).fold(0.0, f64::max);
        let (first, last) = (
            self.samples.first().copied().unwrap_or_default(),
            self.samples.last().copied().unwrap_or_default(),
        );
        write!(
            f,
            "{} calls in {:.0} s, {} not as expected; {} samples: RSS {:.1} → {:.1} MiB \
             (slots {:.1} → {:.1}, rest {:.1} → {:.1}), fds {} → {}, threads {} → {}, \
             instances in use after {}; {} sessions opened and closed, listeners at most {} \
             and {} after, fds {} before the warm-up and {} after; second-half slopes per hour: total {:+.2} MiB, \
             slots {:+.2} MiB, rest {:+.2} MiB, fds {:+.2}, threads {:+.2}, listeners {:+.2}",
            self.calls,
            last.at,
            self.mismatches,
            self.samples.len(),
            first.rss_pool + first.rss_rest,
            last.rss_pool + last.rss_rest,
            first.rss_pool,
            last.rss_pool,
            first.rss_rest,
            last.rss_rest,
            first.fds,
            last.fds,
            first.threads,
            last.threads,
            self.instances_after,
            self.sessions,
            most,
            self.listeners_after,
            self.fds_before,
            self.fds_after,
            slope(&self.samples, |s| s.rss_pool + s.rss_rest) * 3600.0,
            pool,
            rest,
            fds,
            threads,
            listeners,
        )?;
        for example in &self.examples {
            write!(f, "\n  {example}")?;
        }
        Ok(())
    }
}

/// A value of the server's `/metrics` (`NAME VALUE` line).
fn metric(server: &McpServer, name: &str) -> Option<f64> {
    let addr = server
        .url()
        .strip_prefix("http://")?
        .split('/')
        .next()?
        .to_string();
    let mut stream = std::net::TcpStream::connect(&addr).ok()?;
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Looks at the server once, `at` seconds in.
fn sample(server: &McpServer, at: f64) -> Sample {
    let pid = server.pid();
    let (rss_pool, rss_rest) = super::rss_split_mib(pid).unwrap_or_default();
    let threads = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|t| t.trim().parse().ok())
        })
        .unwrap_or(0.0);
    Sample {
        at,
        rss_pool,
        rss_rest,
        fds: fds(server),
        threads,
        instances: metric(server, "corral_instances_in_use").unwrap_or(f64::NAN),
        listeners: metric(server, "corral_change_subscribers").unwrap_or(f64::NAN),
    }
}

/// The server's open file descriptors (0 when `/proc` cannot say).
fn fds(server: &McpServer) -> f64 {
    std::fs::read_dir(format!("/proc/{}/fd", server.pid())).map_or(0, Iterator::count) as f64
}

/// Reads `read` every 50 ms until `done` holds for the value, for up to
/// 10 s (the server ends a closed session's work after answering its
/// `DELETE`); the last value read.
async fn settle(read: impl Fn() -> f64, done: impl Fn(f64) -> bool) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = read();
        if done(seen) || Instant::now() >= deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The calls that did not end as their kind must: how many, and the first
/// ten.
#[derive(Clone, Default)]
struct Faults {
    count: Arc<AtomicUsize>,
    examples: Arc<Mutex<Vec<String>>>,
}

impl Faults {
    /// Counts `record` when it did not end as expected, and keeps the first
    /// ten reasons, each after `prefix`.
    fn check(&self, record: &Record, prefix: &str) {
        if let Some(why) = record.mismatch() {
            self.note(format!("{prefix}{why}"));
        }
    }

    /// Counts a fault, keeping the first ten reasons.
    fn note(&self, why: String) {
        self.count.fetch_add(1, Ordering::SeqCst);
        let mut examples = self.examples.lock().expect("lock");
        if examples.len() < 10 {
            examples.push(why);
        }
    }
}

/// A 2026-07-28 client's `subscriptions/listen` stream to `server`: opened,
/// read until its acknowledgement (the server's watcher is then running),
/// then dropped without a word, as a client that goes away does. `Ok` when
/// the acknowledgement came.
async fn listen_once(server: &McpServer) -> Result<(), String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let addr = server
        .url()
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .ok_or("no address")?
        .to_string();
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(&addr)
        .await
        .map_err(|e| e.to_string())?;
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = async {
        while !String::from_utf8_lossy(&seen).contains("notifications/subscriptions/acknowledged") {
            let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(format!(
                    "the stream ended first: {}",
                    String::from_utf8_lossy(&seen)
                ));
            }
            seen.extend_from_slice(&chunk[..n]);
        }
        Ok(())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .map_err(|_| "no acknowledgement within 10 s".to_string())?
}

/// Until `until`, every `every`: a new session (`initialize`, so the
/// server starts its `list_changed` listener), one `echo` in it, checked,
/// then the session closed (rmcp's client sends `DELETE` and waits for the
/// answer); and a listen stream opened and dropped ([`listen_once`]).
/// Returns how many sessions it opened.
async fn churn(server: &McpServer, until: Instant, every: Duration, faults: &Faults) -> usize {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut sessions = 0;
    while Instant::now() < until {
        ticks.tick().await;
        let client = server.client().await;
        let index = sessions;
        sessions += 1;
        let (tool, args) = Kind::Echo.request(index);
        let ended = super::mcp_transport(client.clone())(tool, args).await;
        let record = Record {
            index,
            kind: Kind::Echo,
            latency: Duration::ZERO,
            ended,
        };
        faults.check(&record, "a short session: ");
        let client = Arc::into_inner(client).expect("the call has ended, so no other holder");
        client.cancel().await.expect("the session closes");
        if let Err(err) = listen_once(server).await {
            faults.note(format!("a listen stream: {err}"));
        }
    }
    sessions
}

/// Calls `server` through `client` at `rate` calls per second (at most 64
/// in flight) for `duration`, cycling through the mix, sampling every
/// `every`; beside it, a short-lived session every second ([`churn`]).
pub async fn soak(
    server: &McpServer,
    client: Arc<rmcp::service::RunningService<rmcp::RoleClient, ()>>,
    duration: Duration,
    rate: f64,
    every: Duration,
) -> SoakTally {
    let kinds: Vec<Kind> = mix(1_000, 10);
    let call = super::mcp_transport(client.clone());
    let faults = Faults::default();
    let fds_before = fds(server);
    // The warm-up (module docs): as many calls in flight as the soak allows.
    for record in super::run(&kinds, 64, call.clone()).await {
        faults.check(&record, "warm-up: ");
    }
    let started = Instant::now();
    let until = started + duration;
    let ((mut samples, calls), sessions) = tokio::join!(
        steady(server, &kinds, call, until, rate, every, &faults),
        churn(server, until, Duration::from_secs(1), &faults),
    );
    samples.push(sample(server, started.elapsed().as_secs_f64()));
    let instances_after = samples.last().map_or(f64::NAN, |s| s.instances);
    // The soak's own session closes too (after the last sample, which the
    // trends would otherwise read as a fall), so no listener may be left.
    let client = Arc::into_inner(client).expect("every call has ended, so no other holder");
    client.cancel().await.expect("the session closes");
    let listeners = || metric(server, "corral_change_subscribers").unwrap_or(f64::NAN);
    let listeners_after = settle(listeners, |n| n == 0.0).await;
    let fds_after = settle(|| fds(server), |n| n <= fds_before).await;
    let examples = faults.examples.lock().expect("lock").clone();
    SoakTally {
        calls,
        mismatches: faults.count.load(Ordering::SeqCst),
        examples,
        samples,
        instances_after,
        sessions,
        listeners_after,
        fds_before,
        fds_after,
    }
}

/// The steady calls of [`soak`] until `until`, and the samples taken
/// meanwhile; returns the samples and how many calls it made, once every
/// call has ended.
async fn steady<F, Fut>(
    server: &McpServer,
    kinds: &[Kind],
    call: F,
    until: Instant,
    rate: f64,
    every: Duration,
    faults: &Faults,
) -> (Vec<Sample>, usize)
where
    F: Fn(&'static str, serde_json::Value) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = super::Ended> + Send,
{
    let started = Instant::now();
    let slots = Arc::new(tokio::sync::Semaphore::new(64));
    let mut samples = vec![sample(server, 0.0)];
    let mut next_sample = started + every;
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut calls = 0;
    let mut tasks = tokio::task::JoinSet::new();
    while Instant::now() < until {
        ticks.tick().await;
        if Instant::now() >= next_sample {
            samples.push(sample(server, started.elapsed().as_secs_f64()));
            next_sample += every;
        }
        // Reap what finished, so the set stays small.
        while tasks.try_join_next().is_some() {}
        let permit = slots.clone().acquire_owned().await.expect("open");
        let (index, kind) = (calls, kinds[calls % kinds.len()]);
        calls += 1;
        let (call, faults) = (call.clone(), faults.clone());
        tasks.spawn(async move {
            let (tool, args) = kind.request(index);
            let ended = call(tool, args).await;
            drop(permit);
            let record = Record {
                index,
                kind,
                latency: Duration::ZERO,
                ended,
            };
            faults.check(&record, "");
        });
    }
    while tasks.join_next().await.is_some() {}
    (samples, calls)
}
