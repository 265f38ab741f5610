//! Reload under load (issue 29, campaign 3): calls run through the library
//! while a mutator changes the plugin directory every `period`, and the
//! host's own watcher (`Host::watch`) reloads it.
//!
//! The mutator cycles through: a new version of the hostile fixture
//! (renamed into place), a second plugin added, a broken version written in
//! place (half the bytes), a repairing new version, a policy with a new
//! description, the second plugin removed, the policy removed. Every version
//! is compiled once before the run, so the reloads hit the compile cache.
//!
//! The calls alternate `echo` (always served: no step removes it, and a
//! broken version never replaces a working one) and the second plugin's
//! `dup_tool` (served only while it is there: `unknown_tool` when it is not).
//! Each call also checks, as it starts, that the `echo` being served is one
//! of the valid versions.
//!
//! Given the `corral` binary, a `corral serve --http` watching the same
//! directory runs beside the host, and an MCP client counts the
//! `notifications/tools/list_changed` it sends: the same reloads, seen
//! through the protocol.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use corral::Host;
use tempfile::TempDir;

use crate::{DUP_A, HOSTILE, cache, guest, plugin_dir};

/// What a reload campaign came to.
#[derive(Debug, Default)]
pub struct ReloadTally {
    /// Calls issued.
    pub calls: usize,
    /// Calls that succeeded with the right result.
    pub ok: usize,
    /// `dup_tool` calls made while it was not served (`unknown_tool`).
    pub unknown: usize,
    /// Calls that failed otherwise: failed in-flight calls.
    pub failed: Vec<String>,
    /// Calls that started while a version that is not one of the valid ones
    /// was served.
    pub invalid_served: usize,
    /// Directory changes the mutator made.
    pub mutations: usize,
    /// Tool-set changes announced (`Host::subscribe`) during the calls.
    pub announced: usize,
    /// The longest gap between two announcements while the mutator ran.
    pub longest_silence: Duration,
    /// Whether the last change, made after the calls, was announced and
    /// served.
    pub last_change_served: bool,
    /// What the MCP client of a watching `corral serve --http` received,
    /// when the campaign ran one.
    pub mcp: Option<McpAnnouncements>,
    /// How long the calls took.
    pub elapsed: Duration,
}

/// The `notifications/tools/list_changed` an MCP client received from a
/// `corral serve --http` watching the campaign's directory.
#[derive(Debug, Default)]
pub struct McpAnnouncements {
    /// Notifications received while the calls ran.
    pub announced: usize,
    /// The longest gap between two of them while the calls ran.
    pub longest_silence: Duration,
    /// Whether one arrived after the last change, made after the calls.
    pub last_change_announced: bool,
}

impl ReloadTally {
    /// No failed in-flight call, nothing invalid served, and the last change
    /// announced (over MCP too, when it ran).
    pub fn passed(&self) -> bool {
        self.failed.is_empty()
            && self.invalid_served == 0
            && self.last_change_served
            && self.mcp.as_ref().is_none_or(|m| m.last_change_announced)
    }
}

impl std::fmt::Display for ReloadTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} calls in {:.1} s: {} ok, {} unknown tool (removed), {} failed in flight, \
             {} started on an invalid version; {} directory changes, {} list changes \
             announced, longest silence {:.2} s, last change served: {}",
            self.calls,
            self.elapsed.as_secs_f64(),
            self.ok,
            self.unknown,
            self.failed.len(),
            self.invalid_served,
            self.mutations,
            self.announced,
            self.longest_silence.as_secs_f64(),
            self.last_change_served,
        )?;
        if let Some(mcp) = &self.mcp {
            write!(
                f,
                "; over MCP: {} list_changed received, longest silence {:.2} s, last change \
                 announced: {}",
                mcp.announced,
                mcp.longest_silence.as_secs_f64(),
                mcp.last_change_announced,
            )?;
        }
        for why in self.failed.iter().take(10) {
            write!(f, "\n  {why}")?;
        }
        Ok(())
    }
}

/// The bytes of `name` with a custom section appended: the same tools, a new
/// sha256.
pub fn new_version(name: &str, tag: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(guest(name)).expect("guest");
    let section_name = b"corral-version";
    let payload = tag.as_bytes();
    let size = 1 + section_name.len() + payload.len();
    assert!(size < 128, "one-byte LEB128 size");
    bytes.extend_from_slice(&[0, size as u8, section_name.len() as u8]);
    bytes.extend_from_slice(section_name);
    bytes.extend_from_slice(payload);
    bytes
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Writes `bytes` beside `path` and renames it into place.
fn replace_atomically(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

/// The directory and the versions the mutator writes.
struct Scene {
    dir: TempDir,
    versions: Vec<Vec<u8>>,
    valid: Vec<String>,
}

impl Scene {
    /// The hostile fixture alone, and `count` new versions of it, each
    /// compiled into the cache once.
    async fn new(count: usize) -> Self {
        let dir = plugin_dir(&[HOSTILE]);
        let versions: Vec<Vec<u8>> = (0..=count)
            .map(|i| new_version(HOSTILE, &format!("r{i}")))
            .collect();
        let mut valid = vec![sha256(&std::fs::read(guest(HOSTILE)).expect("guest"))];
        for bytes in &versions {
            let warm = plugin_dir(&[DUP_A]);
            std::fs::write(warm.path().join(HOSTILE), bytes).expect("write");
            Host::builder()
                .plugin_dir(warm.path())
                .cache(cache())
                .build()
                .await
                .expect("a valid version builds");
            valid.push(sha256(bytes));
        }
        Self {
            dir,
            versions,
            valid,
        }
    }

    /// Change number `step` of the cycle.
    fn mutate(&self, step: usize) {
        let dir = self.dir.path();
        let version = &self.versions[(step / 7) % (self.versions.len() - 1)];
        let policy = dir.join(HOSTILE.replace(".wasm", ".policy.toml"));
        match step % 7 {
            0 => replace_atomically(&dir.join(HOSTILE), version),
            1 => replace_atomically(&dir.join(DUP_A), &std::fs::read(guest(DUP_A)).expect("guest")),
            // In place, half written: never served.
            2 => std::fs::write(dir.join(HOSTILE), &version[..version.len() / 2]).expect("write"),
            3 => replace_atomically(&dir.join(HOSTILE), version),
            4 => std::fs::write(
                &policy,
                format!("version = 1\n[presentation]\ndescriptions = {{ echo = \"Echo, step {step}.\" }}\n"),
            )
            .expect("policy"),
            5 => std::fs::remove_file(dir.join(DUP_A)).expect("remove"),
            _ => std::fs::remove_file(&policy).expect("remove policy"),
        }
    }
}

/// The longest gap between consecutive `times` (sorted) from `from` up to
/// `until`, counting the gap from `from` to the first.
fn longest_silence(times: &[Instant], from: Instant, until: Instant) -> Duration {
    let mut longest = Duration::ZERO;
    let mut last = from;
    for &t in times.iter().filter(|&&t| t <= until) {
        longest = longest.max(t.saturating_duration_since(last));
        last = t;
    }
    longest
}

/// Runs `calls` calls, one issued every `pace` with at most `concurrency`
/// in flight, while the directory changes every `period`; then makes one
/// last change and waits up to 30 s for it to be served. With `corral`
/// (the binary's path), a `corral serve --http` watches the same directory
/// and an MCP client counts its `notifications/tools/list_changed`.
pub async fn reload_under_load(
    calls: usize,
    concurrency: usize,
    pace: Duration,
    period: Duration,
    corral: Option<&Path>,
) -> ReloadTally {
    let scene = Arc::new(Scene::new(2).await);
    let host = super::host(scene.dir.path()).await;
    let server = corral
        .map(|bin| super::McpServer::start_watching(bin, scene.dir.path(), &crate::cache_dir()));
    let mcp = match &server {
        Some(server) => Some(server.list_changes().await),
        None => None,
    };
    let mut changes = host.subscribe();
    changes.borrow_and_update();
    let watcher = host.watch().expect("watch");

    // Announcements, with the time of each.
    let announced = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let listener = {
        let (announced, mut changes) = (announced.clone(), changes.clone());
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                announced.lock().expect("lock").push(Instant::now());
            }
        })
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mutations = Arc::new(AtomicUsize::new(0));
    let mutator = {
        let (scene, stop, mutations) = (scene.clone(), stop.clone(), mutations.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                scene.mutate(mutations.fetch_add(1, Ordering::SeqCst));
                std::thread::sleep(period);
            }
        })
    };

    let started = Instant::now();
    let invalid = Arc::new(AtomicUsize::new(0));
    let call = {
        let (library, valid, invalid) = (
            super::library(host.clone()),
            scene.valid.clone(),
            invalid.clone(),
        );
        let host = host.clone();
        move |tool: &'static str, args: serde_json::Value| {
            // Which `echo` is served as the call starts.
            let served = host
                .tool("echo")
                .and_then(|t| t.plugin().map(|p| p.sha256().to_string()));
            if !served.is_some_and(|sha| valid.contains(&sha)) {
                invalid.fetch_add(1, Ordering::SeqCst);
            }
            library(tool, args)
        }
    };
    let kinds: Vec<usize> = (0..calls).collect();
    let records = run_calls(&kinds, concurrency, pace, call).await;
    let elapsed = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    mutator.join().expect("mutator");

    let mut tally = ReloadTally {
        calls,
        elapsed,
        mutations: mutations.load(Ordering::SeqCst),
        invalid_served: invalid.load(Ordering::SeqCst),
        ..ReloadTally::default()
    };
    for (i, ended) in records {
        match (i % 2, ended) {
            (0, Ok(value)) if value["echo"] == format!("reload {i}") => tally.ok += 1,
            (1, Ok(value)) if value["from"].as_str().is_some_and(|f| f.contains("dup")) => {
                tally.ok += 1;
            }
            (1, Err((kind, _))) if kind == "unknown_tool" => tally.unknown += 1,
            (_, Ok(value)) => tally.failed.push(format!("call {i}: returned {value}")),
            (_, Err((kind, text))) => tally.failed.push(format!("call {i}: {kind}: {text}")),
        }
    }
    let until = started + elapsed;
    {
        let times = announced.lock().expect("lock");
        tally.announced = times.iter().filter(|&&t| t <= until).count();
        tally.longest_silence = longest_silence(&times, started, until);
    }
    if let Some((received, _)) = &mcp {
        let times = received.times();
        tally.mcp = Some(McpAnnouncements {
            announced: times.iter().filter(|&&t| t <= until).count(),
            longest_silence: longest_silence(&times, started, until),
            last_change_announced: false,
        });
    }

    // One last change after the storm, once every reload of the storm is
    // over (nothing announced for 2 s, twice the longest a burst is held),
    // so that what is announced next is this change: it must be announced
    // and served.
    let quiet = Duration::from_secs(2);
    loop {
        let latest = |times: &[Instant]| times.last().copied().unwrap_or(started);
        let mut newest = latest(&announced.lock().expect("lock"));
        if let Some((received, _)) = &mcp {
            newest = newest.max(latest(&received.times()));
        }
        if newest.elapsed() >= quiet {
            break;
        }
        tokio::time::sleep_until((newest + quiet).into()).await;
    }
    let last = scene.versions.last().expect("a last version");
    changes.borrow_and_update();
    let changed_at = Instant::now();
    replace_atomically(&scene.dir.path().join(HOSTILE), last);
    let want = sha256(last);
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let served = host
            .tool("echo")
            .and_then(|t| t.plugin().map(|p| p.sha256().to_string()));
        if served.as_deref() == Some(want.as_str()) {
            tally.last_change_served = true;
            break;
        }
        let _ = tokio::time::timeout_at(deadline.into(), changes.changed()).await;
    }
    if let (Some((received, _)), Some(tally)) = (&mcp, tally.mcp.as_mut()) {
        // The server reloads on its own watcher: its notification.
        tally.last_change_announced = received.arrived_since(changed_at, deadline).await;
    }
    drop(mcp);
    drop(server);
    drop(watcher);
    listener.abort();
    tally
}

/// `calls` alternating `echo` and `dup_tool`, one issued every `pace`, at
/// most `concurrency` in flight, through `call`.
async fn run_calls<F, Fut>(
    indices: &[usize],
    concurrency: usize,
    pace: Duration,
    call: F,
) -> Vec<(usize, super::Ended)>
where
    F: Fn(&'static str, serde_json::Value) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = super::Ended> + Send,
{
    let slots = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    let mut ticks = tokio::time::interval(pace);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for &i in indices {
        ticks.tick().await;
        let permit = slots.clone().acquire_owned().await.expect("open");
        let call = call.clone();
        tasks.spawn(async move {
            let ended = if i % 2 == 0 {
                call("echo", serde_json::json!({ "text": format!("reload {i}") })).await
            } else {
                call("dup_tool", serde_json::json!({})).await
            };
            drop(permit);
            (i, ended)
        });
    }
    tasks.join_all().await
}
