//! Learning runs (`HostBuilder::learning`): the grants a learning plugin's
//! calls run with.
//!
//! - **Deny and record** (the default): its own grants, plus an empty,
//!   read-only directory preopened at `/`, so that an open outside every
//!   grant reaches the host (wasi-libc resolves paths against the
//!   preopens in the guest; without a preopen at `/` it fails there,
//!   unseen), fails as it would have (not found, or not permitted), and is
//!   recorded. Nothing is granted that was not.
//! - **Permissive** (allow and record, for a tool author's test run,
//!   `HostBuilder::learning_permissive`): each granted directory is
//!   replaced by a scratch copy corral makes (read-write; the real one is
//!   never opened), `/` is a scratch directory of its own (read-write),
//!   outbound HTTP reaches only the origins given (the policy's allow-list
//!   and credentials are dropped: no secret leaves in a test run), and
//!   every attempt is recorded.
//!
//! The directories live in the system's temporary directory and are
//! removed with the host.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest as _, Sha256};

use corral_sandbox::{DirGrant, Grants, HostPattern};

/// The most a permissive run copies of one granted directory: 256 MiB.
pub const MAX_COPY_BYTES: u64 = 256 << 20;

/// The learning plugins and their directories.
#[derive(Debug)]
pub(super) struct Learning {
    plugins: BTreeSet<String>,
    /// Preopened at `/`: empty (deny and record) or scratch (permissive).
    root: PathBuf,
    permissive: Option<Permissive>,
}

#[derive(Debug)]
struct Permissive {
    origins: Arc<[HostPattern]>,
    /// Where the scratch copies go.
    copies: PathBuf,
    /// A granted host directory and its copy.
    copied: Mutex<HashMap<PathBuf, PathBuf>>,
}

/// A name no other process takes: pid, time and address digested.
fn unique(prefix: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let digest = Sha256::digest(format!("{nanos}:{:p}", &nanos).as_bytes());
    std::env::temp_dir().join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        hex::encode(&digest[..8])
    ))
}

/// Copies `from` into `to` (which does not exist yet): directories and
/// regular files, symbolic links skipped (never followed), at most
/// `budget` bytes in all.
fn copy_tree(from: &Path, to: &Path, budget: &mut u64) -> Result<(), String> {
    std::fs::create_dir(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot list {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target, budget)?;
        } else if kind.is_file() {
            let len = entry.metadata().map_err(|e| e.to_string())?.len();
            *budget = budget.checked_sub(len).ok_or_else(|| {
                format!(
                    "{} is more than {} MiB: a permissive learning run copies granted \
                     directories; point the policy at a smaller test directory",
                    from.display(),
                    MAX_COPY_BYTES >> 20
                )
            })?;
            std::fs::copy(entry.path(), &target)
                .map_err(|e| format!("cannot copy {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

impl Learning {
    pub(super) fn new(
        plugins: BTreeSet<String>,
        permissive: Option<Vec<HostPattern>>,
    ) -> std::io::Result<Self> {
        let root = unique("corral-learning");
        std::fs::create_dir(&root)?;
        let permissive = match permissive {
            None => None,
            Some(origins) => {
                let copies = unique("corral-learning-copies");
                std::fs::create_dir(&copies)?;
                Some(Permissive {
                    origins: origins.into(),
                    copies,
                    copied: Mutex::default(),
                })
            }
        };
        Ok(Self {
            plugins,
            root,
            permissive,
        })
    }

    /// Whether `plugin` runs in learning runs.
    pub(super) fn covers(&self, plugin: &str) -> bool {
        self.plugins.contains(plugin)
    }

    /// `plugin`'s grants in a learning run; `None` when it is not learning.
    pub(super) fn grants(&self, plugin: &str, grants: &Grants) -> Option<Result<Grants, String>> {
        if !self.covers(plugin) {
            return None;
        }
        let Some(permissive) = &self.permissive else {
            return Some(Ok(Grants {
                learning_root: Some(self.root.clone()),
                learning_root_writable: false,
                ..grants.clone()
            }));
        };
        Some(self.permissive(permissive, grants))
    }

    fn permissive(&self, permissive: &Permissive, grants: &Grants) -> Result<Grants, String> {
        let mut dirs = Vec::with_capacity(grants.dirs.len());
        for dir in &grants.dirs {
            let copy = {
                let mut copied = permissive
                    .copied
                    .lock()
                    .map_err(|_| "the copies' lock is poisoned".to_string())?;
                match copied.get(&dir.host) {
                    Some(copy) => copy.clone(),
                    None => {
                        let copy = permissive.copies.join(format!("{}", copied.len()));
                        copy_tree(&dir.host, &copy, &mut MAX_COPY_BYTES.clone())?;
                        copied.insert(dir.host.clone(), copy.clone());
                        copy
                    }
                }
            };
            dirs.push(DirGrant {
                host: copy,
                writable: true,
                ..dir.clone()
            });
        }
        Ok(Grants {
            dirs,
            http_allow: permissive.origins.clone(),
            http_credentials: Arc::from([]),
            learning_root: Some(self.root.clone()),
            learning_root_writable: true,
            ..grants.clone()
        })
    }
}

impl Drop for Learning {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
        if let Some(permissive) = &self.permissive {
            let _ = std::fs::remove_dir_all(&permissive.copies);
        }
    }
}
