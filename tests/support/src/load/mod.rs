//! The mixed hostile load (issue 29, campaign 1): a deterministic mix of
//! benign and hostile calls to the hostile fixture, issued at a fixed
//! concurrency through any transport, each call checked against the outcome
//! its kind must have.
//!
//! Reload under load (campaign 3) is [`reload_under_load`]; crash safety
//! (campaign 4) is [`crash`]; the soak (campaign 2) is [`soak`].
//!
//! The CI-sized runs are `tests/all/campaigns.rs`; the full-size one, with RSS
//! and latency figures, is `scripts/load.sh` (the `campaign` bench). Both use
//! this module, so they issue the same calls and judge them the same way.

pub mod crash;
mod mcp;
mod reload;
pub mod soak;

pub use mcp::{ListChanges, McpServer, transport as mcp_transport};
pub use reload::{McpAnnouncements, ReloadTally, new_version, reload_under_load};

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use corral::{CallOptions, Host, Limits};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// The limits both transports run the campaign under: tight enough that a
/// hostile call ends quickly (the memory and output caps are reached well
/// within the fuel), with a wide margin for the benign ones (a benign
/// `crunch` needs about 0.4 M of the 50 M fuel units).
pub fn limits() -> Limits {
    Limits::default()
        .with_fuel(FUEL)
        .with_timeout_ms(TIMEOUT_MS)
        .with_memory_bytes(MEMORY_MIB << 20)
        .with_output_bytes(OUTPUT_KIB << 10)
}

/// A host over `dir` as the campaigns run it: [`limits`], the default
/// instance pool (as `corral serve` has), the tests' component cache.
///
/// # Panics
/// When the host does not build.
pub async fn host(dir: &std::path::Path) -> Host {
    Host::builder()
        .plugin_dir(dir)
        .limits(limits())
        .pool(corral::PoolConfig::default())
        .cache(crate::cache())
        .build()
        .await
        .expect("the campaign's host builds")
}

/// Fuel per call in the campaign, in units.
pub const FUEL: u64 = 50_000_000;
/// Deadline per call in the campaign, in milliseconds.
pub const TIMEOUT_MS: u64 = 5_000;
/// Memory cap per call in the campaign, in MiB.
pub const MEMORY_MIB: usize = 16;
/// Output cap per call in the campaign, in KiB.
pub const OUTPUT_KIB: usize = 64;

/// What one call of the mix does, and so what it must end in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Benign: `echo` of a text unique to the call.
    Echo,
    /// Benign: `crunch`, pure CPU, with a result checked against the host's
    /// own computation.
    Crunch,
    /// `spin` past its fuel: `out_of_fuel`.
    Fuel,
    /// `sleep` for a minute: `timeout` at the deadline.
    Deadline,
    /// `allocate` 64 MiB past the cap: `memory_limit`.
    Memory,
    /// `panic`: `trapped`.
    Trap,
    /// `big_result` of twice the output cap: `output_too_large`.
    OutputFlood,
    /// `flood_progress`, 20 000 notifications: succeeds, throttled.
    ProgressFlood,
    /// `flood_log`, 20 000 lines: succeeds, throttled.
    LogFlood,
    /// `recurse` without end: `stack_overflow`.
    StackOverflow,
}

/// The hostile kinds, in the order the mix cycles through them.
pub const HOSTILE: [Kind; 8] = [
    Kind::Fuel,
    Kind::Deadline,
    Kind::Memory,
    Kind::Trap,
    Kind::OutputFlood,
    Kind::ProgressFlood,
    Kind::LogFlood,
    Kind::StackOverflow,
];

/// Rounds of `crunch` in a benign call.
const CRUNCH_ROUNDS: u64 = 20_000;
/// Progress notifications or log lines in a flood.
const FLOOD: u64 = 20_000;

impl Kind {
    /// Whether the call is one of the hostile kinds.
    pub fn is_hostile(self) -> bool {
        !matches!(self, Self::Echo | Self::Crunch)
    }

    /// The tool and arguments of call number `i` of this kind.
    pub fn request(self, i: usize) -> (&'static str, Value) {
        match self {
            Self::Echo => ("echo", json!({ "text": format!("call {i}") })),
            Self::Crunch => ("crunch", json!({ "rounds": CRUNCH_ROUNDS + i as u64 })),
            Self::Fuel => ("spin", json!({})),
            Self::Deadline => ("sleep", json!({ "ms": 60_000 })),
            Self::Memory => ("allocate", json!({ "mib": 64 })),
            Self::Trap => ("panic", json!({ "message": format!("hostile {i}") })),
            Self::OutputFlood => ("big_result", json!({ "bytes": 2 * (OUTPUT_KIB << 10) })),
            Self::ProgressFlood => ("flood_progress", json!({ "count": FLOOD })),
            Self::LogFlood => ("flood_log", json!({ "count": FLOOD })),
            Self::StackOverflow => ("recurse", json!({})),
        }
    }

    /// The error kind ([`corral::CallError::kind`]) the call must end in, or
    /// `None` when it must succeed.
    pub fn expected_error(self) -> Option<&'static str> {
        match self {
            Self::Echo | Self::Crunch | Self::ProgressFlood | Self::LogFlood => None,
            Self::Fuel => Some("out_of_fuel"),
            Self::Deadline => Some("timeout"),
            Self::Memory => Some("memory_limit"),
            Self::Trap => Some("trapped"),
            Self::OutputFlood => Some("output_too_large"),
            Self::StackOverflow => Some("stack_overflow"),
        }
    }

    /// The result call number `i` of this kind must return, when it succeeds.
    fn expected_value(self, i: usize) -> Option<Value> {
        match self {
            Self::Echo => Some(json!({ "echo": format!("call {i}") })),
            Self::Crunch => {
                let mut x: u64 = 1;
                for _ in 0..CRUNCH_ROUNDS + i as u64 {
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                }
                Some(json!({ "state": x.to_string() }))
            }
            Self::ProgressFlood | Self::LogFlood => Some(json!({ "sent": FLOOD })),
            _ => None,
        }
    }
}

/// `calls` calls of which `hostile_percent` % are hostile, spread evenly and
/// cycling through [`HOSTILE`]; the benign ones alternate `echo` and
/// `crunch`. Deterministic, so two runs issue the same calls.
pub fn mix(calls: usize, hostile_percent: usize) -> Vec<Kind> {
    let mut hostile = 0;
    (0..calls)
        .map(|i| {
            // Hostile when the running share crosses the next whole call.
            if (i + 1) * hostile_percent / 100 > hostile {
                hostile += 1;
                HOSTILE[(hostile - 1) % HOSTILE.len()]
            } else if i % 2 == 0 {
                Kind::Echo
            } else {
                Kind::Crunch
            }
        })
        .collect()
}

/// How one call ended: its value, or its error kind and text.
pub type Ended = Result<Value, (String, String)>;

/// One call of a run.
#[derive(Debug, Clone)]
pub struct Record {
    /// Its position in the mix.
    pub index: usize,
    /// What it was.
    pub kind: Kind,
    /// From issue to answer.
    pub latency: Duration,
    /// How it ended.
    pub ended: Ended,
}

impl Record {
    /// Why the call did not end as its kind must, or `None` when it did.
    pub fn mismatch(&self) -> Option<String> {
        let (tool, _) = self.kind.request(self.index);
        let why = match (&self.ended, self.kind.expected_error()) {
            (Ok(value), None) => {
                let expected = self.kind.expected_value(self.index)?;
                (value != &expected).then(|| format!("returned {value}, expected {expected}"))
            }
            (Err((kind, _)), Some(expected)) if kind == expected => None,
            (Err((kind, text)), _) => Some(format!("failed as {kind}: {text}")),
            (Ok(value), Some(expected)) => Some(format!("returned {value}, expected {expected}")),
        }?;
        Some(format!("call {} ({tool}): {why}", self.index))
    }
}

/// Runs `kinds` with at most `concurrency` calls in flight, through `call`
/// (a transport: tool name and arguments in, how it ended out).
pub async fn run<F, Fut>(kinds: &[Kind], concurrency: usize, call: F) -> Vec<Record>
where
    F: Fn(&'static str, Value) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Ended> + Send,
{
    let slots = Arc::new(Semaphore::new(concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    for (index, &kind) in kinds.iter().enumerate() {
        let permit = slots.clone().acquire_owned().await.expect("semaphore open");
        let call = call.clone();
        tasks.spawn(async move {
            let (tool, args) = kind.request(index);
            let started = Instant::now();
            let ended = call(tool, args).await;
            drop(permit);
            Record {
                index,
                kind,
                latency: started.elapsed(),
                ended,
            }
        });
    }
    let mut records = tasks.join_all().await;
    records.sort_by_key(|r| r.index);
    records
}

/// The library transport: `Host::call` in this process.
pub fn library(
    host: Host,
) -> impl Fn(&'static str, Value) -> std::pin::Pin<Box<dyn Future<Output = Ended> + Send>>
+ Clone
+ Send
+ 'static {
    move |tool, args| {
        let host = host.clone();
        Box::pin(async move {
            match host
                .call(tool, &args.to_string(), &CallOptions::default())
                .await
            {
                Ok(out) => out
                    .into_json()
                    .ok_or_else(|| ("not_json".to_string(), String::new())),
                Err(err) => Err((err.kind().to_string(), err.to_string())),
            }
        })
    }
}

/// What a run came to.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Benign calls issued.
    pub benign: usize,
    /// Benign calls that succeeded with the right result.
    pub benign_ok: usize,
    /// Hostile calls issued.
    pub hostile: usize,
    /// Hostile calls that ended in their expected outcome.
    pub hostile_expected: usize,
    /// The first few mismatches, for the message.
    pub mismatches: Vec<String>,
    /// Benign latency, median.
    pub benign_p50: Duration,
    /// Benign latency, 99th percentile.
    pub benign_p99: Duration,
}

impl Tally {
    /// Counts `records`.
    pub fn of(records: &[Record]) -> Self {
        let mut tally = Self::default();
        let mut benign_latency = Vec::new();
        for record in records {
            let mismatch = record.mismatch();
            if record.kind.is_hostile() {
                tally.hostile += 1;
                tally.hostile_expected += usize::from(mismatch.is_none());
            } else {
                tally.benign += 1;
                tally.benign_ok += usize::from(mismatch.is_none());
                benign_latency.push(record.latency);
            }
            if let Some(why) = mismatch
                && tally.mismatches.len() < 10
            {
                tally.mismatches.push(why);
            }
        }
        benign_latency.sort();
        let at = |q: f64| {
            benign_latency
                .get(
                    ((benign_latency.len() as f64 * q) as usize)
                        .min(benign_latency.len().saturating_sub(1)),
                )
                .copied()
                .unwrap_or_default()
        };
        tally.benign_p50 = at(0.50);
        tally.benign_p99 = at(0.99);
        tally
    }

    /// Every benign call right and every hostile one as expected.
    pub fn all_as_expected(&self) -> bool {
        self.benign_ok == self.benign && self.hostile_expected == self.hostile
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "benign {}/{} right, hostile {}/{} as expected, benign p50 {:.2} ms p99 {:.2} ms",
            self.benign_ok,
            self.benign,
            self.hostile_expected,
            self.hostile,
            self.benign_p50.as_secs_f64() * 1e3,
            self.benign_p99.as_secs_f64() * 1e3,
        )?;
        for why in &self.mismatches {
            write!(f, "\n  {why}")?;
        }
        Ok(())
    }
}

/// The resident set size of process `pid` (`/proc/<pid>/status` `VmRSS`), in
/// MiB; `None` off Linux or when the process is gone.
pub fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// Of process `pid`'s resident set, in MiB: the part in the pooling
/// allocator's reservations (anonymous mappings of 1 GiB or more: the
/// linear-memory slots), and the rest. `None` off Linux or when the process
/// is gone.
///
/// The pool part is bounded by design: a slot keeps up to
/// `keep_resident_bytes` of what a call touched resident after the call, so
/// it grows as calls use more slots and stays once they have been used.
/// Growth of the rest is growth of anything else.
pub fn rss_split_mib(pid: u32) -> Option<(f64, f64)> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let (mut pool_kb, mut rest_kb, mut size_kb) = (0u64, 0u64, 0u64);
    let field = |line: &str, name: &str| -> Option<u64> {
        line.strip_prefix(name)?
            .trim()
            .trim_end_matches(" kB")
            .trim()
            .parse()
            .ok()
    };
    for line in smaps.lines() {
        if let Some(size) = field(line, "Size:") {
            size_kb = size;
        } else if let Some(rss) = field(line, "Rss:") {
            if size_kb >= 1 << 20 {
                pool_kb += rss;
            } else {
                rest_kb += rss;
            }
        }
    }
    Some((pool_kb as f64 / 1024.0, rest_kb as f64 / 1024.0))
}
