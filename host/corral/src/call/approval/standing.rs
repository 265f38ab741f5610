//! Standing approvals ("always allow this tool"), bound to code: each is keyed
//! by the tool name and the sha256 of the plugin component that provides it.
//! When the plugin file changes, its sha256 changes, the standing approval no
//! longer matches and the reviewer is asked again.
//!
//! Held in memory, and optionally in a JSON file so they outlive one process
//! and are shared by every replica that points at the same file:
//! `{"version": 1, "approvals": [{"tool", "plugin", "sha256",
//! "granted_at"}]}`.
//!
//! Sharing one file between processes (replicas on a shared volume):
//! - **Readers reload on change.** Each check ([`StandingApprovals::allows`])
//!   compares the file's identity (device, inode, length, modification
//!   time: one `stat`) with what it last read, and reads it again when it
//!   changed; a grant made by another replica holds here from the next
//!   check on. A file that no longer parses keeps the last good set, with a
//!   warning.
//! - **Writers lock, re-read, merge, replace.** A grant takes the file's
//!   exclusive lock (`corral_files::update_locked`: `flock(2)` on
//!   `.<name>.lock` beside it), reads the file again, adds its entry, and
//!   rewrites it whole (`corral_files::write_whole`), so no grant of
//!   another replica is lost and a crash leaves the old list or the new
//!   one. Under the lock, any temporary file of the set is a killed
//!   writer's and is removed.
//! - **Read-only** ([`StandingApprovals::file_read_only`]): for a file an
//!   operator provides on a read-only volume (a Kubernetes ConfigMap). It
//!   is read and reloaded on change, never written; an "always" answer
//!   then holds in this process only.
//!
//! A grant that cannot be saved (read-only, or a failed write) holds in this
//! process only, whatever the file says later.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Version of the standing-approvals file format.
const FILE_VERSION: u32 = 1;

/// Why a standing-approvals file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StandingError {
    /// The file exists but cannot be read.
    #[error("cannot read standing approvals {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a standing-approvals file of a known version.
    #[error(
        "standing approvals {} are not valid: {message}; fix or delete the file \
         (every tool will be reviewed again)",
        .path.display()
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    tool: String,
    plugin: String,
    sha256: String,
    granted_at: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    approvals: Vec<Entry>,
}

type Entries = BTreeMap<(String, String), Entry>;

/// What identifies one version of the file ([`corral_files::Identity`]:
/// one `stat`; a rename in gives a new inode, an edit in place a new time).
/// `None` when there is no file.
type Stamp = Option<corral_files::Identity>;

/// The set of standing approvals of a host.
///
/// Default ([`StandingApprovals::in_memory`]): empty and not persisted.
#[derive(Debug, Default)]
pub struct StandingApprovals {
    state: Mutex<State>,
    path: Option<PathBuf>,
    read_only: bool,
}

#[derive(Debug, Default)]
struct State {
    /// As last read from, or written to, the file.
    file: Entries,
    /// The file those came from.
    stamp: Stamp,
    /// Grants not saved (read-only, or a failed write): this process only.
    local: Entries,
}

impl StandingApprovals {
    /// An empty set that lives as long as the host.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// The set stored in `path`, shared with every process that uses the
    /// same file (see the module docs); created on the first grant if
    /// missing. Temporary files a killed writer left are removed, under the
    /// lock, when the directory can be written.
    ///
    /// # Errors
    /// [`StandingError`] when the file exists but cannot be read or parsed.
    pub fn file(path: impl Into<PathBuf>) -> Result<Self, StandingError> {
        let path = path.into();
        // Taking the lock sweeps; a directory that cannot hold the lock
        // file (read-only, missing) is not an error here.
        let _ = corral_files::update_locked(&path, || Ok::<_, ()>(()), |_| ());
        Self::open(path, false)
    }

    /// The set stored in `path`, read (and read again when it changes) but
    /// never written: an "always" answer holds in this process only. For a
    /// file on a read-only volume.
    ///
    /// # Errors
    /// [`StandingError`] when the file exists but cannot be read or parsed.
    pub fn file_read_only(path: impl Into<PathBuf>) -> Result<Self, StandingError> {
        Self::open(path.into(), true)
    }

    fn open(path: PathBuf, read_only: bool) -> Result<Self, StandingError> {
        let (file, stamp) = read(&path)?;
        Ok(Self {
            state: Mutex::new(State {
                file,
                stamp,
                local: Entries::new(),
            }),
            path: Some(path),
            read_only,
        })
    }

    /// Whether `tool` has a standing approval for the plugin build `sha256`.
    /// File-backed, it first reads the file again if it changed.
    pub fn allows(&self, tool: &str, sha256: &str) -> bool {
        if sha256.is_empty() {
            return false;
        }
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        if let Some(path) = &self.path
            && stamp(path) != state.stamp
        {
            match read(path) {
                Ok((file, stamp)) => (state.file, state.stamp) = (file, stamp),
                Err(err) => {
                    tracing::warn!("{err}; keeping the standing approvals last read");
                    // Warn once per version of the file.
                    state.stamp = stamp(path);
                }
            }
        }
        let key = (tool.to_string(), sha256.to_string());
        state.file.contains_key(&key) || state.local.contains_key(&key)
    }

    /// Every standing approval, as `(tool, plugin, sha256, granted_at)`
    /// (the file's, read again if it changed, and this process's), for
    /// `corral policy unused`: an approval of a tool no call used is an
    /// exemption nobody needs.
    pub fn listed(&self) -> Vec<(String, String, String, String)> {
        let Ok(mut state) = self.state.lock() else {
            return Vec::new();
        };
        if let Some(path) = &self.path
            && stamp(path) != state.stamp
            && let Ok((file, stamp)) = read(path)
        {
            (state.file, state.stamp) = (file, stamp);
        }
        state
            .file
            .values()
            .chain(state.local.values())
            .map(|e| {
                (
                    e.tool.clone(),
                    e.plugin.clone(),
                    e.sha256.clone(),
                    e.granted_at.clone(),
                )
            })
            .collect()
    }

    /// Records a standing approval of `tool` as built in the plugin
    /// component whose sha256 is `sha256` (`plugin` is its name, for people
    /// reading the file), and saves it when file-backed. The gate calls it
    /// when a reviewer answers "always"; an operator can call it to approve
    /// a build ahead of time. Approvals for tools without a sha256
    /// (pipelines, built-ins) are not recorded: they would not be bound to
    /// code.
    ///
    /// Saving takes the file's lock, reads the file again, adds the entry
    /// and replaces the file whole (module docs), so grants made meanwhile
    /// by other processes are kept.
    ///
    /// # Errors
    /// The I/O error of locking, reading or writing the file, or
    /// [`std::io::ErrorKind::ReadOnlyFilesystem`] for a read-only set; the
    /// approval then holds in this process only.
    pub fn grant(&self, tool: &str, plugin: &str, sha256: &str) -> std::io::Result<()> {
        if sha256.is_empty() {
            return Ok(());
        }
        let entry = Entry {
            tool: tool.to_string(),
            plugin: plugin.to_string(),
            sha256: sha256.to_string(),
            granted_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        };
        let key = (entry.tool.clone(), entry.sha256.clone());
        let mut state = self
            .state
            .lock()
            .map_err(|_| std::io::Error::other("standing approvals lock poisoned"))?;
        let saved = match &self.path {
            None => Err(None),
            Some(path) if self.read_only => Err(Some(std::io::Error::new(
                std::io::ErrorKind::ReadOnlyFilesystem,
                format!(
                    "the standing approvals {} are read-only by configuration",
                    path.display()
                ),
            ))),
            Some(path) => save(path, key.clone(), entry.clone()).map_err(Some),
        };
        match saved {
            Ok((file, stamp)) => {
                (state.file, state.stamp) = (file, stamp);
                Ok(())
            }
            Err(err) => {
                state.local.insert(key, entry);
                err.map_or(Ok(()), Err)
            }
        }
    }
}

/// The file's [`Stamp`] now.
fn stamp(path: &Path) -> Stamp {
    corral_files::Identity::of(path)
}

/// The entries of the file at `path` (none when it does not exist) and the
/// stamp of what was read.
fn read(path: &Path) -> Result<(Entries, Stamp), StandingError> {
    // Stamp first: a change after it is seen as a change next time.
    let before = stamp(path);
    let text = match corral_files::read_text(path, corral_files::Kind::StandingApprovals) {
        Ok(None) => return Ok((Entries::new(), None)),
        Err(err) => {
            return Err(StandingError::Read {
                path: path.to_path_buf(),
                source: err.into(),
            });
        }
        Ok(Some(text)) => text,
    };
    let invalid = |message: String| StandingError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let file: File = serde_json::from_str(&text).map_err(|err| invalid(err.to_string()))?;
    if file.version != FILE_VERSION {
        return Err(invalid(format!(
            "version {} is not supported (expected {FILE_VERSION})",
            file.version
        )));
    }
    let entries = file
        .approvals
        .into_iter()
        .map(|e| ((e.tool.clone(), e.sha256.clone()), e))
        .collect();
    Ok((entries, before))
}

/// Under the file's lock ([`corral_files::update_locked`]): reads it
/// again, adds `entry`, replaces it whole. Returns the entries written and
/// the new file's stamp.
fn save(path: &Path, key: (String, String), entry: Entry) -> std::io::Result<(Entries, Stamp)> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    corral_files::update_locked(
        path,
        || {
            let (mut entries, _) = read(path).map_err(std::io::Error::other)?;
            entries.insert(key, entry);
            let file = File {
                version: FILE_VERSION,
                approvals: entries.values().cloned().collect(),
            };
            let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
            corral_files::write_whole(path, text.as_bytes(), corral_files::WriteOptions::SYNCED)?;
            Ok((entries, stamp(path)))
        },
        |err| err,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_bound_to_the_sha256_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("standing.json");
        let set = StandingApprovals::file(&path).unwrap();
        assert!(!set.allows("rm", "aaa"));
        set.grant("rm", "files", "aaa").unwrap();
        assert!(set.allows("rm", "aaa"));
        assert!(!set.allows("rm", "bbb"), "another build of the plugin");
        assert!(!set.allows("other", "aaa"), "another tool of the plugin");

        let reloaded = StandingApprovals::file(&path).unwrap();
        assert!(reloaded.allows("rm", "aaa"));
        assert!(!reloaded.allows("rm", "bbb"));
    }

    /// Two sets on one file, as two replicas: each sees the other's grants
    /// at its next check, and each grant keeps the other's in the file.
    #[test]
    fn sets_sharing_a_file_see_and_keep_each_others_grants() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("standing.json");
        let (a, b) = (
            StandingApprovals::file(&path).unwrap(),
            StandingApprovals::file(&path).unwrap(),
        );
        a.grant("rm", "files", "aaa").unwrap();
        assert!(b.allows("rm", "aaa"), "b reads the file again");
        b.grant("mv", "files", "bbb").unwrap();
        assert!(a.allows("mv", "bbb"));
        let reopened = StandingApprovals::file(&path).unwrap();
        assert!(reopened.allows("rm", "aaa") && reopened.allows("mv", "bbb"));
        // The lock file stays; no temporary file does.
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [".standing.json.lock", "standing.json"]);
    }

    /// Grants from many threads, each through a set of its own (separate
    /// open files, so they lock against each other as processes do): none
    /// is lost.
    #[test]
    fn concurrent_grants_through_separate_sets_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("standing.json");
        std::thread::scope(|scope| {
            for t in 0..4 {
                let path = &path;
                scope.spawn(move || {
                    let set = StandingApprovals::file(path).unwrap();
                    for i in 0..10 {
                        set.grant(&format!("tool_{t}_{i}"), "p", "sha").unwrap();
                    }
                });
            }
        });
        let set = StandingApprovals::file(&path).unwrap();
        for t in 0..4 {
            for i in 0..10 {
                assert!(set.allows(&format!("tool_{t}_{i}"), "sha"), "{t} {i}");
            }
        }
    }

    /// A read-only set never writes; its grants hold in this process; it
    /// reads the file again when an operator changes it; a file that stops
    /// parsing keeps the last good set.
    #[test]
    fn a_read_only_set_reloads_never_writes_and_keeps_the_last_good_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("standing.json");
        StandingApprovals::file(&path)
            .unwrap()
            .grant("rm", "files", "aaa")
            .unwrap();
        let before = std::fs::read(&path).unwrap();
        let set = StandingApprovals::file_read_only(&path).unwrap();
        assert!(set.allows("rm", "aaa"));
        let err = set.grant("mv", "files", "bbb").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ReadOnlyFilesystem);
        assert!(
            err.to_string().contains("read-only by configuration"),
            "{err}"
        );
        assert!(set.allows("mv", "bbb"), "holds in this process");
        assert_eq!(std::fs::read(&path).unwrap(), before, "never written");

        StandingApprovals::file(&path)
            .unwrap()
            .grant("cp", "files", "ccc")
            .unwrap();
        assert!(set.allows("cp", "ccc"), "the operator's change is read");
        std::fs::write(&path, "{not json").unwrap();
        assert!(set.allows("cp", "ccc"), "the last good set stays");
        assert!(set.allows("mv", "bbb"));
    }

    #[test]
    fn tools_without_code_identity_get_no_standing_approval() {
        let set = StandingApprovals::in_memory();
        set.grant("my_pipeline", "pipelines", "").unwrap();
        assert!(!set.allows("my_pipeline", ""));
    }

    #[test]
    fn a_bad_file_is_reported_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("standing.json");
        std::fs::write(&path, r#"{"version": 9, "approvals": []}"#).unwrap();
        let err = StandingApprovals::file(&path).unwrap_err().to_string();
        assert!(err.contains("standing.json"), "{err}");
        assert!(err.contains("version 9 is not supported"), "{err}");
    }
}
