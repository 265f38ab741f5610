//! Replaying one recording: the recorded files laid out in a scratch
//! directory per granted directory, the run repeated in a fresh sandbox
//! with every import answered from the tape, and the result compared.
//!
//! What a replay reaches: nothing outside. HTTP is answered from the
//! recording (the gate never resolves or connects; the resolver refuses
//! anyway), the clocks and random generators are the recording's, and the
//! guest's directories are scratch copies holding only what the recording
//! captured, removed after the run. Limits are the recorded ones, held to
//! the host's default ceiling ([`Limits::DEFAULT_MAX`](corral_sandbox::Limits::DEFAULT_MAX), the pool's memory),
//! except the wall-clock deadline: ten times the recorded one, between one
//! and ten minutes, so that a replay is stopped by fuel, which is
//! deterministic, rather than by a slower machine.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use corral_sandbox::tape::{Divergence, Event, Tape};
use corral_sandbox::{DirGrant, Grants, Op, ResolveFuture, Resolver, RunSetup};

use super::capture::outcome_json;
use super::file::Recording;

/// How a replay treats the plugin it runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayOptions {
    /// Run whatever build of the plugin the host has (a shadow test of a
    /// new build); `false` (the default) refuses a build other than the
    /// recorded one ([`ReplayError::OtherBuild`]).
    pub shadow: bool,
}

impl ReplayOptions {
    /// A shadow test: any build of the plugin.
    pub fn shadow() -> Self {
        Self { shadow: true }
    }
}

/// What a replay found: the three verdicts of `corral replay`'s table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The same imports were asked for, and the same output and log lines
    /// came out.
    Identical,
    /// The same imports, another output or other log lines: the diff of the
    /// recorded and the replayed outcome, one line each, prefixed `"  "`,
    /// `"- "` (recorded) or `"+ "` (replayed).
    OutputChanged(Vec<String>),
    /// The guest asked for something the recording does not hold.
    Diverged(Divergence),
}

/// One replay's report.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReplayReport {
    /// The tool, as the host shows it.
    pub tool: String,
    /// The plugin.
    pub plugin: String,
    /// Whether the replayed build is the recorded one.
    pub same_build: bool,
    /// The finding.
    pub verdict: Verdict,
    /// The recorded outcome, as JSON text.
    pub recorded: String,
    /// The replayed outcome, as JSON text.
    pub replayed: String,
    /// Fuel of the recorded run and of the replay.
    pub fuel: (u64, u64),
    /// Recorded input events the replay never asked for.
    pub unused: usize,
    /// What the recording holds only in part (from the recording and from
    /// the replay): a verdict over it may not be faithful.
    pub incomplete: Vec<String>,
    /// How long the replay's run took.
    pub elapsed: Duration,
}

/// Why a recording could not be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The host has no plugin of the recorded name.
    #[error(
        "plugin `{plugin}` is not loaded; replay from the plugin directory it was recorded \
         with, or give its build with `--plugin FILE`"
    )]
    NotLoaded {
        /// The recorded plugin.
        plugin: String,
    },
    /// The host has another build and the replay is not a shadow test.
    #[error(
        "plugin `{plugin}` was recorded at build {recorded}, the loaded build is {loaded}; \
         replay it against the recorded build, or run a shadow test of the new build \
         (`corral replay RECORDING --plugin FILE`)"
    )]
    OtherBuild {
        /// The plugin.
        plugin: String,
        /// sha256 of the recorded build.
        recorded: String,
        /// sha256 of the loaded build.
        loaded: String,
    },
    /// A file the run read was too large to record.
    #[error(
        "the recording does not hold `{path}` ({size} bytes, sha256 {sha256}): it was above the \
         recording's cap; raise `max_recording_bytes` and record the call again"
    )]
    NeedsFile {
        /// The guest path.
        path: String,
        /// Its size.
        size: u64,
        /// Its sha256.
        sha256: String,
    },
    /// The scratch directories could not be laid out.
    #[error("cannot lay out the recorded files in a scratch directory: {0}")]
    Scratch(#[source] std::io::Error),
    /// The host is shutting down.
    #[error("the host is shutting down")]
    ShuttingDown,
}

/// [`replay`](super::replay) on `plugin`, with a slot of `permits` on `engine` (the
/// update gate's replay of a build not served yet).
pub(crate) async fn replay_plugin(
    engine: &corral_sandbox::Engine,
    permits: &tokio::sync::Semaphore,
    plugin: &crate::Plugin,
    recording: &Recording,
    options: ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let header = &recording.header;
    let same_build = plugin.sha256() == header.plugin_sha256;
    if !same_build && !options.shadow {
        return Err(ReplayError::OtherBuild {
            plugin: header.plugin.clone(),
            recorded: header.plugin_sha256.clone(),
            loaded: plugin.sha256().to_owned(),
        });
    }
    if let Some(file) = recording.files.iter().find(|f| f.contents.is_none()) {
        return Err(ReplayError::NeedsFile {
            path: file.path.clone(),
            size: file.size,
            sha256: file.sha256.clone(),
        });
    }
    let scratch = tempfile::Builder::new()
        .prefix("corral-replay-")
        .tempdir()
        .map_err(ReplayError::Scratch)?;
    let grants = lay_out(recording, scratch.path()).map_err(ReplayError::Scratch)?;
    // A recording is not trusted: its limits are held to the host's
    // default ceiling (and the pool's memory), and the deadline, ten times
    // the recorded one so that fuel decides, to between 1 and 10 minutes.
    let ceiling =
        corral_sandbox::Limits::DEFAULT_MAX.with_memory_bytes(engine.pool().max_memory_bytes);
    let mut limits = header.limits.min(&ceiling);
    limits.timeout_ms = limits.timeout_ms.saturating_mul(10).clamp(60_000, 600_000);
    let tape = Tape::replay(
        recording.events.clone(),
        recording.files.clone(),
        recording.insecure_seed(),
    );
    let _slot = permits
        .acquire()
        .await
        .map_err(|_| ReplayError::ShuttingDown)?;
    let tool: Arc<str> = header.shown.as_str().into();
    let setup = RunSetup {
        engine,
        pre: plugin.pre(),
        limits: &limits,
        plugin: plugin.name_arc(),
        tool: tool.clone(),
        grants: &grants,
        approval: None,
        client: None,
        tools: None,
        resolver: Arc::new(Refuse),
        progress: None,
        leaks: corral_sandbox::Leaks::new(plugin.grants().redactor.clone(), tool, Arc::default()),
        tape: Some(tape.clone()),
        slot: None,
    };
    let started = Instant::now();
    let (result, report) = corral_sandbox::run(
        setup,
        Op::Call {
            name: &header.tool,
            arguments: &header.arguments,
            context: &header.context,
        },
    )
    .await;
    let elapsed = started.elapsed();
    let log = tape.take_replay();
    let (replayed, _) = outcome_json(&result);
    let recorded_lines = output_lines(&recording.outcome.result, &recording.events);
    let replayed_lines = output_lines(&replayed, &log.produced);
    let verdict = match log.divergence {
        Some(divergence) => Verdict::Diverged(divergence),
        None if recorded_lines == replayed_lines => Verdict::Identical,
        None => Verdict::OutputChanged(corral_names::diff::line_diff(
            &recorded_lines,
            &replayed_lines,
        )),
    };
    let mut incomplete = recording.incomplete.clone();
    incomplete.extend(log.incomplete);
    Ok(ReplayReport {
        tool: header.shown.clone(),
        plugin: header.plugin.clone(),
        same_build,
        verdict,
        recorded: recording.outcome.result.clone(),
        replayed,
        fuel: (recording.outcome.fuel, report.fuel_consumed),
        unused: log.unused,
        incomplete,
        elapsed,
    })
}

/// The outcome and the log and progress lines, as the text a replay
/// compares.
fn output_lines(outcome: &str, events: &[Event]) -> String {
    let mut text = outcome.to_owned();
    for event in events {
        match event {
            Event::Log { level, message } => {
                text.push_str(&format!("\nlog {level}: {message}"));
            }
            Event::Progress { message } => text.push_str(&format!("\nprogress: {message}")),
            _ => {}
        }
    }
    text
}

/// Lays the recorded files out under `scratch`, one directory per granted
/// directory, and returns the grants that preopen them (and the recorded
/// environment).
fn lay_out(recording: &Recording, scratch: &Path) -> std::io::Result<Grants> {
    let mut grants = Grants::none();
    grants.env = recording.header.grants.env.clone();
    grants.client = recording.header.grants.client;
    let mut roots = Vec::new();
    for (index, (guest, _, writable)) in recording.header.grants.dirs.iter().enumerate() {
        let host = scratch.join(index.to_string());
        std::fs::create_dir_all(&host)?;
        roots.push((guest.clone(), host.clone()));
        grants.dirs.push(DirGrant {
            host_as_written: host.display().to_string(),
            host,
            guest: guest.clone(),
            writable: *writable,
        });
    }
    // The longest guest prefix wins, as in wasi-libc.
    roots.sort_by_key(|(guest, _)| std::cmp::Reverse(guest.len()));
    let place = |path: &str| -> Option<std::path::PathBuf> {
        roots.iter().find_map(|(guest, host)| {
            let rest = under(guest, path)?;
            // A recorded path is normalised; refuse anything that is not
            // a plain relative path all the same.
            let rest = Path::new(rest);
            rest.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
                .then(|| host.join(rest))
        })
    };
    let captured: std::collections::HashSet<&str> =
        recording.files.iter().map(|f| f.path.as_str()).collect();
    for event in &recording.events {
        match event {
            // Opened to read, not captured: a directory.
            Event::Open {
                path,
                op,
                error: None,
            } if op == "read" && !captured.contains(path.as_str()) => {
                if let Some(dir) = place(path) {
                    std::fs::create_dir_all(dir)?;
                }
            }
            Event::Stat {
                path,
                result: Ok(stat),
            } if stat.kind == "directory" => {
                if let Some(dir) = place(path) {
                    std::fs::create_dir_all(dir)?;
                }
            }
            Event::Entry {
                path,
                name: Some(name),
                kind,
            } if !name.contains('/') && name != "." && name != ".." => {
                if let Some(dir) = place(path) {
                    std::fs::create_dir_all(&dir)?;
                    let entry = dir.join(name);
                    if kind == "directory" {
                        std::fs::create_dir_all(entry)?;
                    } else if !entry.exists() {
                        std::fs::write(entry, b"")?;
                    }
                }
            }
            _ => {}
        }
    }
    for file in &recording.files {
        if let (Some(at), Some(contents)) = (place(&file.path), &file.contents) {
            if let Some(parent) = at.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(at, contents.as_slice())?;
        }
    }
    Ok(grants)
}

/// `path` under the guest directory `prefix`, component-wise, without a
/// leading `/`.
fn under<'p>(prefix: &str, path: &'p str) -> Option<&'p str> {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return Some(path.trim_start_matches('/'));
    }
    match path.strip_prefix(prefix)? {
        "" => Some(""),
        rest => rest.strip_prefix('/'),
    }
}

/// The resolver of a replay: it refuses every lookup (none should happen:
/// the tape answers every request before the gate).
#[derive(Debug)]
struct Refuse;

impl Resolver for Refuse {
    fn lookup<'a>(&'a self, host: &'a str, _port: u16) -> ResolveFuture<'a> {
        Box::pin(async move {
            Err(std::io::Error::other(format!(
                "a replay resolves no name (`{host}`)"
            )))
        })
    }
}
