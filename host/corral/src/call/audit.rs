//! The audit log (TnsAI's `@Security`): one JSON object per line.
//! Two kinds of line, told apart by `event`:
//!
//! - `"approval"`: a gated call's review and decision (audit level `gated`,
//!   the default, or `all`);
//! - `"call"`: one execution of a tool whose audit level is `all`, and
//!   every run of `execute_code` ([`CallRecord`]): its own `call_id`, the
//!   `parent_id` of the script run that made it (`null` for a call the
//!   caller made), tool, plugin digest, the context pairs that reached
//!   the plugin, outcome, duration, fuel, attempts, whether it came from the
//!   cache, the arguments' sha256, and the arguments themselves (with the
//!   `mask_fields` replaced by `"***"`) only when `record_arguments` is set.
//!
//! Every line also carries `"replica"`: the id of the process that wrote it
//! ([`AuditLog::with_replica`]; `null` when none was set), so the logs of
//! replicas behind a load balancer can be merged and still say who decided.
//!
//! Approval line shape (keys always present, `null` when not applicable):
//! `{"time": RFC 3339 UTC with ms, "event": "approval", "gate": "declared"|"requested", "tool",
//! "plugin", "plugin_sha256", "arguments_sha256": hex sha256 of the arguments'
//! JSON text, "reviewer": reviewer name or "standing" or "none", "decision":
//! "continue"|"continue_always"|"exit_early"|"edit"|"timeout"|"error",
//! "reason": text or null, "edited_arguments": the reviewer's revised
//! arguments or null, "review_ms", "parent_id": the `call_id` of the script
//! run that made the call, or null}`.
//!
//! Crash safety: the file is opened in append mode and each record is one
//! `write` of a complete line followed by `fdatasync`, so earlier lines are
//! never rewritten. If a crash tore the last line, the next open starts on a
//! fresh line, so the torn line stays isolated and every other line parses.
//! The torn line is kept, not cut: it is evidence of the crash, and the log
//! is only ever appended to. Readers skip a line that is not JSON; only a
//! record cut by a crash can be one (tested at every byte of a record).
//!
//! Rotation is left to the system's tool (logrotate and the like): before
//! each append the log checks that its path still names the file it holds
//! open, and reopens the path when the file was moved away or deleted, so
//! records never go to a rotated file.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Serialize;
use sha2::{Digest as _, Sha256};

/// Why the audit log could not be opened.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot open the audit log {}: {source}; check the path and its permissions",
    .path.display()
)]
pub struct AuditError {
    /// The file.
    pub path: PathBuf,
    /// The I/O error.
    pub source: std::io::Error,
}

/// One line of the audit log; see the module docs for the shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the decision was made, RFC 3339 UTC with milliseconds.
    pub time: String,
    /// `approval`.
    pub event: &'static str,
    /// Which gate: `declared` or `requested` (the `Display` of
    /// [`Gate`](crate::call::approval::Gate)).
    pub gate: String,
    /// The tool.
    pub tool: String,
    /// The plugin.
    pub plugin: String,
    /// The plugin's sha256 (empty for pipelines and built-ins).
    pub plugin_sha256: String,
    /// sha256 of the arguments' JSON text as reviewed.
    pub arguments_sha256: String,
    /// Who decided: a reviewer's name, `standing`, or `none` when no reviewer
    /// is configured.
    pub reviewer: String,
    /// The decision's kind, or `timeout` / `error`.
    pub decision: String,
    /// The reason of a denial, timeout or error.
    pub reason: Option<String>,
    /// The reviewer's revised arguments, for `edit`.
    pub edited_arguments: Option<serde_json::Value>,
    /// How long the review took, in milliseconds.
    pub review_ms: u64,
    /// The `call_id` of the script run (`execute_code`) that made the
    /// call, if one did.
    pub parent_id: Option<String>,
}

impl AuditRecord {
    /// Hex sha256 of `text`.
    pub fn hash(text: &str) -> String {
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    /// The current time in the log's format.
    pub fn now() -> String {
        humantime::format_rfc3339_millis(SystemTime::now()).to_string()
    }

    /// A fresh id for a call record: 32 lowercase hex characters, the
    /// sha256 of the time, the process and a counter, cut to 16 bytes. Ids
    /// are unique in a log (and across replicas), not secret.
    pub fn new_id() -> String {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let now = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut hash = Sha256::new();
        hash.update(now.to_le_bytes());
        hash.update(std::process::id().to_le_bytes());
        hash.update(
            COUNTER
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                .to_le_bytes(),
        );
        hex::encode(&hash.finalize()[..16])
    }
}

/// One execution of a tool audited at level `all`; see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallRecord {
    /// When the call ended, RFC 3339 UTC with milliseconds.
    pub time: String,
    /// `call`.
    pub event: &'static str,
    /// This record's id ([`AuditRecord::new_id`]).
    pub call_id: String,
    /// The `call_id` of the script run (`execute_code`) that made this
    /// call; `None` for a call the caller made.
    pub parent_id: Option<String>,
    /// The tool.
    pub tool: String,
    /// The plugin.
    pub plugin: String,
    /// The plugin's sha256.
    pub plugin_sha256: String,
    /// The context pairs that reached the plugin.
    pub context: std::collections::BTreeMap<String, String>,
    /// `ok`, or the error's kind.
    pub outcome: String,
    /// The tool's error code, if it gave one.
    pub code: Option<i32>,
    /// Wall-clock time of the call, in milliseconds.
    pub duration_ms: f64,
    /// Fuel units the guest used.
    pub fuel: u64,
    /// Sandboxed attempts (0 for a cached result).
    pub attempts: u32,
    /// Whether the result came from the cache.
    pub cache_hit: bool,
    /// sha256 of the arguments' JSON text.
    pub arguments_sha256: String,
    /// The arguments, masked, when the tool's audit records them.
    pub arguments: Option<serde_json::Value>,
    /// How many forms of the plugin's secrets the leak scan redacted in
    /// this call (output, errors, logs, HTTP both ways); written only when
    /// not 0, and such a call is recorded whatever its audit level.
    #[serde(skip_serializing_if = "is_zero")]
    pub secrets_redacted: u32,
}

impl CallRecord {
    /// Sets the outcome to `err`'s kind and code.
    pub(crate) fn failed(&mut self, err: &corral_sandbox::CallError) {
        self.outcome = err.kind().into();
        self.code = err.code();
    }

    /// Appends this record to `log`; a failed write is logged at ERROR
    /// (the call's result stands).
    pub(crate) fn append_to(&self, log: &AuditLog) {
        if let Err(err) = log.append(self) {
            tracing::error!(path = %log.path().display(), "audit log write failed: {err}");
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `value` with every object key named in `fields` (at any depth) replaced
/// by `"***"`.
pub fn mask(value: &serde_json::Value, fields: &[String]) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let shown = if fields.iter().any(|f| f == k) {
                        Value::String("***".into())
                    } else {
                        mask(v, fields)
                    };
                    (k.clone(), shown)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| mask(v, fields)).collect()),
        other => other.clone(),
    }
}

/// An append-only JSON-lines file.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<File>,
    replica: Option<String>,
}

/// A record with the writer's replica id after its own keys.
#[derive(Serialize)]
struct Stamped<'a, R: Serialize> {
    #[serde(flatten)]
    record: &'a R,
    replica: Option<&'a str>,
}

impl AuditLog {
    /// Opens (or creates) the log at `path` for appending. Parent directories
    /// are created.
    ///
    /// # Errors
    /// [`AuditError`] when the file cannot be opened or created.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, AuditError> {
        let path = path.into();
        let file = open_for_append(&path).map_err(|source| AuditError {
            path: path.clone(),
            source,
        })?;
        Ok(Self {
            path,
            file: Mutex::new(file),
            replica: None,
        })
    }

    /// Names the process in every record it appends (`"replica"`), e.g. a
    /// pod's name; at most 256 characters, control characters escaped
    /// (it may come from the environment). Default: none (`null`).
    #[must_use]
    pub fn with_replica(mut self, id: impl AsRef<str>) -> Self {
        let id: String = id.as_ref().chars().take(256).collect();
        self.replica = Some(corral_names::text::escape(&id).into_owned());
        self
    }

    /// The replica id records carry, if one was set.
    pub fn replica(&self) -> Option<&str> {
        self.replica.as_deref()
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as one line and syncs it to disk.
    ///
    /// # Errors
    /// The I/O error; the gate then denies the call (an unaudited decision is
    /// not allowed to take effect).
    pub fn append(&self, record: &impl Serialize) -> std::io::Result<()> {
        let stamped = Stamped {
            record,
            replica: self.replica.as_deref(),
        };
        let mut line = serde_json::to_vec(&stamped).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("audit log lock poisoned"))?;
        if !same_file(&file, &self.path) {
            tracing::info!(path = %self.path.display(), "audit log rotated; reopening");
            *file = open_for_append(&self.path)?;
        }
        file.write_all(&line)?;
        file.sync_data()
    }
}

/// Opens (or creates, with its parent directories) `path` for appending, and
/// starts a fresh line if a crash tore the last one.
fn open_for_append(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)?;
    // A torn last line (crash mid-append) must not swallow the next one.
    let len = file.seek(SeekFrom::End(0))?;
    if len > 0 {
        file.seek(SeekFrom::Start(len - 1))?;
        let mut last = [0u8; 1];
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    Ok(file)
}

/// Whether `path` still names the open `file` (same device and inode).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Whether `path` still exists (without inodes, only a deleted log is noticed).
#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tool: &str) -> AuditRecord {
        AuditRecord {
            time: AuditRecord::now(),
            event: "approval",
            gate: "declared".into(),
            tool: tool.into(),
            plugin: "p".into(),
            plugin_sha256: "00".into(),
            arguments_sha256: AuditRecord::hash("{}"),
            reviewer: "auto".into(),
            decision: "continue".into(),
            reason: None,
            edited_arguments: None,
            review_ms: 0,
            parent_id: None,
        }
    }

    #[test]
    fn every_line_names_the_replica_that_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        AuditLog::open(&path)
            .unwrap()
            .append(&record("anonymous"))
            .unwrap();
        let log = AuditLog::open(&path)
            .unwrap()
            .with_replica("corral-7f9c\u{1b}[2J");
        assert_eq!(log.replica(), Some("corral-7f9c\\u{1b}[2J"));
        log.append(&record("named")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["replica"], serde_json::Value::Null);
        assert_eq!(lines[1]["replica"], "corral-7f9c\\u{1b}[2J");
        assert_eq!(lines[1]["tool"], "named", "the record's own keys stay");
    }

    #[test]
    fn a_torn_last_line_stays_isolated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        {
            let log = AuditLog::open(&path).unwrap();
            log.append(&record("first")).unwrap();
        }
        // Simulate a crash in the middle of the second append.
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"time": "2026-11-"#).unwrap();
        drop(file);

        let log = AuditLog::open(&path).unwrap();
        log.append(&record("third")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        let third: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(first["tool"], "first");
        assert_eq!(third["tool"], "third");
        assert!(serde_json::from_str::<serde_json::Value>(lines[1]).is_err());
    }

    #[test]
    fn a_record_cut_at_any_byte_leaves_every_other_line_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        {
            let log = AuditLog::open(&path).unwrap();
            log.append(&record("first")).unwrap();
            log.append(&record("second")).unwrap();
        }
        let whole = std::fs::read(&path).unwrap();
        let second_at = whole.iter().position(|&b| b == b'\n').unwrap() + 1;
        // A crash can leave the second record cut after any of its bytes.
        for cut in second_at..=whole.len() {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let log = AuditLog::open(&path).unwrap();
            log.append(&record("next")).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let parsed = |line: &str| serde_json::from_str::<serde_json::Value>(line).ok();
            assert_eq!(parsed(lines[0]).unwrap()["tool"], "first", "cut at {cut}");
            assert_eq!(
                parsed(lines.last().unwrap()).unwrap()["tool"],
                "next",
                "cut at {cut}: {text}"
            );
            let torn = &lines[1..lines.len() - 1];
            assert_eq!(
                torn.len(),
                usize::from(cut > second_at),
                "cut at {cut}: {text}"
            );
            // The cut record is alone on its line: whole (cut after its last
            // byte) or not JSON at all, never glued to the next record.
            for line in torn {
                match parsed(line) {
                    Some(value) => assert_eq!(value["tool"], "second", "cut at {cut}"),
                    None => assert!(!line.contains("next"), "cut at {cut}: {text}"),
                }
            }
        }
    }

    #[test]
    fn a_rotated_log_is_reopened_at_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let rotated = dir.path().join("audit.jsonl.1");
        let log = AuditLog::open(&path).unwrap();
        log.append(&record("before")).unwrap();
        // logrotate's default: move the file away; the next record starts a new one.
        std::fs::rename(&path, &rotated).unwrap();
        log.append(&record("after")).unwrap();
        let old = std::fs::read_to_string(&rotated).unwrap();
        let new = std::fs::read_to_string(&path).unwrap();
        assert_eq!(old.lines().count(), 1, "{old}");
        assert!(old.contains("\"before\""), "{old}");
        assert_eq!(new.lines().count(), 1, "{new}");
        assert!(new.contains("\"after\""), "{new}");
        // Deleted outright: recreated.
        std::fs::remove_file(&path).unwrap();
        log.append(&record("again")).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("\"again\"")
        );
    }
}
