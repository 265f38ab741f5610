//! Standing approvals ("always allow this tool"), bound to code: each is keyed
//! by the tool name and the sha256 of the plugin component that provides it.
//! When the plugin file changes, its sha256 changes, the standing approval no
//! longer matches and the reviewer is asked again.
//!
//! Held in memory, and optionally persisted to a JSON file so they outlive one
//! process: `{"version": 1, "approvals": [{"tool", "plugin", "sha256",
//! "granted_at"}]}`. The file is rewritten whole through a temporary file and a
//! rename ([`crate::whole_file`]), so a crash leaves either the old or the new
//! list; the temporary file a killed writer leaves is removed when the file
//! is next opened.

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

/// The set of standing approvals of a host.
///
/// Default ([`StandingApprovals::in_memory`]): empty and not persisted.
#[derive(Debug, Default)]
pub struct StandingApprovals {
    /// Keyed by (tool, sha256).
    entries: Mutex<BTreeMap<(String, String), Entry>>,
    path: Option<PathBuf>,
}

impl StandingApprovals {
    /// An empty set that lives as long as the host.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// The set stored in `path`, created on the first grant if missing.
    ///
    /// # Errors
    /// [`StandingError`] when the file exists but cannot be read or parsed.
    pub fn file(path: impl Into<PathBuf>) -> Result<Self, StandingError> {
        let path = path.into();
        if let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            // Only this file's: the directory may hold anything.
            crate::whole_file::sweep(dir, Some(name));
        }
        let entries = match std::fs::read_to_string(&path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(source) => return Err(StandingError::Read { path, source }),
            Ok(text) => {
                let file: File =
                    serde_json::from_str(&text).map_err(|err| StandingError::Invalid {
                        path: path.clone(),
                        message: err.to_string(),
                    })?;
                if file.version != FILE_VERSION {
                    return Err(StandingError::Invalid {
                        path,
                        message: format!(
                            "version {} is not supported (expected {FILE_VERSION})",
                            file.version
                        ),
                    });
                }
                file.approvals
                    .into_iter()
                    .map(|e| ((e.tool.clone(), e.sha256.clone()), e))
                    .collect()
            }
        };
        Ok(Self {
            entries: Mutex::new(entries),
            path: Some(path),
        })
    }

    /// Whether `tool` has a standing approval for the plugin build `sha256`.
    pub fn allows(&self, tool: &str, sha256: &str) -> bool {
        !sha256.is_empty()
            && self
                .entries
                .lock()
                .map(|e| e.contains_key(&(tool.to_string(), sha256.to_string())))
                .unwrap_or(false)
    }

    /// Records a standing approval of `tool` as built in the plugin
    /// component whose sha256 is `sha256` (`plugin` is its name, for people
    /// reading the file), and persists the set when file-backed. The gate
    /// calls it when a reviewer answers "always"; an operator can call it to
    /// approve a build ahead of time. Approvals for tools without a sha256
    /// (pipelines, built-ins) are not recorded: they would not be bound to
    /// code.
    ///
    /// Persisting writes the whole set to a temporary file beside the file,
    /// syncs it, and renames it over the file, so a crash at any point
    /// leaves the old set or the new one, never a mix.
    ///
    /// # Errors
    /// The I/O error of writing the file; the approval still holds in memory.
    pub fn grant(&self, tool: &str, plugin: &str, sha256: &str) -> std::io::Result<()> {
        if sha256.is_empty() {
            return Ok(());
        }
        let snapshot = {
            let mut entries = self
                .entries
                .lock()
                .map_err(|_| std::io::Error::other("standing approvals lock poisoned"))?;
            entries.insert(
                (tool.to_string(), sha256.to_string()),
                Entry {
                    tool: tool.to_string(),
                    plugin: plugin.to_string(),
                    sha256: sha256.to_string(),
                    granted_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                        .to_string(),
                },
            );
            entries.values().cloned().collect::<Vec<_>>()
        };
        match &self.path {
            Some(path) => write_atomically(path, &snapshot),
            None => Ok(()),
        }
    }
}

fn write_atomically(path: &Path, approvals: &[Entry]) -> std::io::Result<()> {
    let file = File {
        version: FILE_VERSION,
        approvals: approvals.to_vec(),
    };
    let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    crate::whole_file::write_whole(path, text.as_bytes(), crate::whole_file::Sync::Data)
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
