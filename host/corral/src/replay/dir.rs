//! The recordings directory: where recorded runs are written, bounded by
//! count and bytes, the oldest removed first.
//!
//! The directory is created with mode 0700 at the first write (an
//! existing one is left as it is, with a warning when others can list
//! it: it may be `/tmp`); each recording is written whole by
//! [`corral_files::write_whole`] with mode 0600, unsynced (a recording
//! lost in a crash is only a missed diagnostic; a torn one fails its
//! digest). Names are `MILLIS-PLUGIN-TOOL-N.rec`, so they sort by age.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::file::Recording;

/// Where recordings go and how many are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordingsConfig {
    /// The directory (created 0700 when missing).
    pub dir: PathBuf,
    /// Most recordings kept: [`RecordingsConfig::DEFAULT_MAX_FILES`].
    pub max_files: usize,
    /// Most bytes of recordings kept: [`RecordingsConfig::DEFAULT_MAX_BYTES`].
    pub max_bytes: u64,
    /// Cap of one recording's events and file contents before
    /// compression, in bytes:
    /// [`DEFAULT_MAX_RECORDING_BYTES`](corral_sandbox::tape::DEFAULT_MAX_RECORDING_BYTES).
    pub max_recording_bytes: usize,
    /// Let a new build whose replays changed outputs replace a plugin with
    /// `[record] gate_updates` anyway (logged); `false` (the default) keeps
    /// the old build serving until the new one is accepted
    /// ([`Recordings::accept`]).
    pub accept_changes: bool,
}

impl RecordingsConfig {
    /// Default count: 1 000 recordings.
    pub const DEFAULT_MAX_FILES: usize = 1000;
    /// Default bytes: 256 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

    /// Recordings in `dir` with the default bounds.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            max_files: Self::DEFAULT_MAX_FILES,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_recording_bytes: corral_sandbox::tape::DEFAULT_MAX_RECORDING_BYTES,
            accept_changes: false,
        }
    }

    /// This config letting changed builds through the update gate.
    #[must_use]
    pub fn with_accept_changes(mut self, accept: bool) -> Self {
        self.accept_changes = accept;
        self
    }

    /// These bounds with at most `files` recordings of at most `bytes`
    /// together.
    #[must_use]
    pub fn with_bounds(mut self, files: usize, bytes: u64) -> Self {
        self.max_files = files.max(1);
        self.max_bytes = bytes;
        self
    }

    /// This config with each recording capped at `bytes`.
    #[must_use]
    pub fn with_recording_cap(mut self, bytes: usize) -> Self {
        self.max_recording_bytes = bytes;
        self
    }
}

/// An open recordings directory.
#[derive(Debug)]
pub struct Recordings {
    config: RecordingsConfig,
    /// The recordings kept, oldest first, with their sizes.
    kept: Mutex<VecDeque<(PathBuf, u64)>>,
    counter: AtomicU64,
    /// The directory was made private by this process.
    ready: std::sync::OnceLock<()>,
    /// The writer thread's queue (made at the first background write).
    queue: Mutex<Option<std::sync::mpsc::SyncSender<Recording>>>,
    /// Sampled recordings dropped because the queue was full.
    dropped: AtomicU64,
}

/// Recordings waiting for the writer thread, at most: 64. A sampled
/// recording past them is dropped (counted, logged), never waited for.
pub const MAX_QUEUED: usize = 64;

impl Recordings {
    /// Opens the directory of `config` (made, 0700, at the first write)
    /// and takes stock of the recordings already in it.
    ///
    /// # Errors
    /// When the directory exists and cannot be listed.
    pub fn open(config: RecordingsConfig) -> std::io::Result<Self> {
        let entries = match std::fs::read_dir(&config.dir) {
            Ok(entries) => Some(entries),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(err),
        };
        let mut kept: Vec<(PathBuf, u64)> = entries
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "rec"))
            .filter_map(|e| Some((e.path(), e.metadata().ok()?.len())))
            .collect();
        kept.sort();
        let recordings = Self {
            config,
            kept: Mutex::new(kept.into()),
            counter: AtomicU64::new(0),
            ready: std::sync::OnceLock::new(),
            queue: Mutex::new(None),
            dropped: AtomicU64::new(0),
        };
        recordings.evict();
        Ok(recordings)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    /// The cap of one recording, in bytes.
    pub fn recording_cap(&self) -> usize {
        self.config.max_recording_bytes
    }

    /// Whether updates that change recorded outputs go through anyway.
    pub fn accepts_changes(&self) -> bool {
        self.config.accept_changes
    }

    /// Marks the build with sha256 `sha256` accepted: the update gate lets
    /// it replace its plugin whatever its replays show (a person looked:
    /// `corral replay DIR --plugin FILE --accept`). Writes
    /// `accepted/SHA256` (0600) in the directory.
    ///
    /// # Errors
    /// When `sha256` is not 64 hex digits, or the file cannot be written.
    pub fn accept(&self, sha256: &str) -> std::io::Result<()> {
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(std::io::Error::other(format!("`{sha256}` is not a sha256")));
        }
        let dir = self.config.dir.join("accepted");
        corral_files::create_private_dir(&dir)?;
        corral_files::write_whole(
            &dir.join(sha256.to_ascii_lowercase()),
            b"",
            corral_files::WriteOptions::PRIVATE,
        )
    }

    /// [`Recordings::accept`] of the component file at `path`; answers its
    /// sha256.
    ///
    /// # Errors
    /// When the file cannot be read, or the mark written.
    pub fn accept_file(&self, path: &Path) -> std::io::Result<String> {
        use sha2::Digest as _;
        let sha256 = hex::encode(sha2::Sha256::digest(std::fs::read(path)?));
        self.accept(&sha256)?;
        Ok(sha256)
    }

    /// Whether the build with sha256 `sha256` was accepted.
    pub fn accepted(&self, sha256: &str) -> bool {
        self.config
            .dir
            .join("accepted")
            .join(sha256.to_ascii_lowercase())
            .is_file()
    }

    /// The newest recordings (at most `most`) of `plugin` at build
    /// `sha256`, read whole; unreadable ones are skipped.
    pub fn of_build(&self, plugin: &str, sha256: &str, most: usize) -> Vec<Recording> {
        // Listed afresh: another process (`corral call --record`) may have
        // written some.
        let mut files = recordings_in(&self.config.dir).unwrap_or_default();
        files.reverse();
        let marker = format!("-{plugin}-");
        files
            .iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(&marker))
            })
            .filter_map(|p| Recording::read(p).ok())
            .filter(|r| r.header.plugin == plugin && r.header.plugin_sha256 == sha256)
            .take(most)
            .collect()
    }

    /// Queues `recording` for the writer thread (one per directory, made
    /// at the first call, ended when the directory is dropped): a sampled
    /// call never waits for its recording. With [`MAX_QUEUED`] waiting, it
    /// is dropped and counted ([`Recordings::dropped`]).
    pub(crate) fn write_later(self: &std::sync::Arc<Self>, recording: Recording) {
        let mut queue = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if queue.is_none() {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<Recording>(MAX_QUEUED);
            let owner = std::sync::Arc::downgrade(self);
            let spawned = std::thread::Builder::new()
                .name("corral-recordings".into())
                .spawn(move || {
                    while let Ok(recording) = receiver.recv() {
                        let Some(owner) = owner.upgrade() else { break };
                        if let Err(err) = owner.write(&recording) {
                            tracing::warn!(
                                tool = recording.header.shown,
                                "recording not written: {err}"
                            );
                        }
                    }
                });
            match spawned {
                Ok(_) => *queue = Some(sender),
                Err(err) => {
                    tracing::warn!("cannot start the recordings writer: {err}");
                    return;
                }
            }
        }
        if let Some(sender) = queue.as_ref()
            && sender.try_send(recording).is_err()
        {
            metrics::counter!("corral_recordings_dropped_total").increment(1);
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(
                    dropped,
                    "sampled recordings dropped: the writer is {MAX_QUEUED} behind; \
                     lower `[record] rate`"
                );
            }
        }
    }

    /// Sampled recordings dropped so far because the writer was behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Writes `recording` and removes the oldest recordings past the
    /// bounds. Blocking: call it off the async runtime's workers.
    ///
    /// # Errors
    /// When it cannot be encoded or written, or the directory cannot be
    /// made.
    pub fn write(&self, recording: &Recording) -> std::io::Result<PathBuf> {
        if self.ready.get().is_none() {
            let dir = &self.config.dir;
            corral_files::create_private_dir(dir)?;
            // An existing directory is the operator's (`--record /tmp`):
            // never narrowed. The files stay 0600; their names show.
            if !corral_files::is_private(dir) {
                tracing::warn!(
                    dir = %dir.display(),
                    "the recordings directory can be listed by other users; each recording \
                     is private (0600), but its name shows the plugin and tool"
                );
            }
            let _ = self.ready.set(());
        }
        let bytes = recording.encode()?;
        let name = format!(
            "{:013}-{}-{}-{}.rec",
            recording.header.recorded_at_ms,
            recording.header.plugin,
            recording.header.tool,
            self.counter.fetch_add(1, Ordering::Relaxed)
        );
        let path = self.config.dir.join(name);
        // Unsynced: a recording lost in a crash is a missed diagnostic, and a
        // torn one fails its digest.
        let options = corral_files::WriteOptions {
            durability: corral_files::Durability::Unsynced,
            mode: 0o600,
        };
        corral_files::write_whole(&path, &bytes, options)?;
        self.lock().push_back((path.clone(), bytes.len() as u64));
        metrics::counter!("corral_recordings_written_total").increment(1);
        self.evict();
        Ok(path)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(PathBuf, u64)>> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Removes the oldest recordings until both bounds hold.
    fn evict(&self) {
        let mut kept = self.lock();
        let mut total: u64 = kept.iter().map(|(_, size)| size).sum();
        while kept.len() > self.config.max_files
            || (total > self.config.max_bytes && !kept.is_empty())
        {
            let Some((path, size)) = kept.pop_front() else {
                break;
            };
            total -= size;
            if let Err(err) = std::fs::remove_file(&path)
                && err.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(path = %path.display(), "cannot remove an old recording: {err}");
            }
        }
    }
}

/// The recordings under `path`: the file itself, or a directory's `*.rec`
/// files, oldest first.
///
/// # Errors
/// When `path` cannot be read.
pub fn recordings_in(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rec"))
        .collect();
    files.sort();
    Ok(files)
}
