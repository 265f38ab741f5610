//! `corral.lock`: what was pulled into a plugin directory, and from where.
//! Written by the distribution client after each pull; read by the loader,
//! which refuses a locked plugin whose bytes differ from what was pulled.
//!
//! ```toml
//! version = 1
//!
//! [[plugin]]
//! name = "fetch"                                   # fetch.wasm in this directory
//! reference = "oci://registry.example/tools/fetch:1.0"
//! manifest = "sha256:…"                            # what the reference resolved to
//! component = "sha256:…"                           # the component layer: sha256 of fetch.wasm
//! policy = "sha256:…"                              # the requested-policy layer, if any
//! signer = "…"                                     # the verified signature's identity, if any
//! ```
//!
//! The format follows Spin's manifests: a version field, unknown fields
//! refused, entries sorted by name, written atomically (a temporary file
//! renamed over it). Writers ([`Lock::update`]) hold the file's exclusive
//! lock (`corral_files::update_locked`) while they read, change and write
//! it, so that two pulls into one directory at once both land.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The lock file's name, in the plugin directory.
pub const LOCK_FILE: &str = "corral.lock";

/// The lock format version this host reads and writes.
pub const LOCK_VERSION: u32 = 1;

/// Why the lock file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", path.display())]
#[non_exhaustive]
pub struct LockError {
    /// The lock file.
    pub path: PathBuf,
    /// What is wrong and what to do.
    pub message: String,
}

/// One pulled plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LockedPlugin {
    /// The plugin's name: its file is `NAME.wasm` in the directory.
    pub name: String,
    /// Where it came from: `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:…`.
    pub reference: String,
    /// The digest of the manifest the reference resolved to (`sha256:…`).
    pub manifest: String,
    /// The digest of the component layer, which is the sha256 of the file.
    pub component: String,
    /// The digest of the requested-policy layer, when the artifact had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The identity of the verified signature, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
}

impl LockedPlugin {
    /// An entry for `name`, pulled from `reference`.
    pub fn new(
        name: impl Into<String>,
        reference: impl Into<String>,
        manifest: impl Into<String>,
        component: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            reference: reference.into(),
            manifest: manifest.into(),
            component: component.into(),
            policy: None,
            signer: None,
        }
    }
}

/// The lock file of one plugin directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// [`LOCK_VERSION`].
    pub version: u32,
    /// The pulled plugins, by name.
    #[serde(default, rename = "plugin")]
    pub plugins: Vec<LockedPlugin>,
}

impl Lock {
    /// The lock file of the plugin directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(LOCK_FILE)
    }

    /// The lock of `dir`; `None` when it has no lock file.
    ///
    /// # Errors
    /// [`LockError`] when the file cannot be read, is not valid TOML of this
    /// shape, or has another version.
    pub fn read(dir: &Path) -> Result<Option<Self>, LockError> {
        use super::versioned::{self, Format, VersionedError};
        let path = Self::path(dir);
        versioned::read(&path, corral_files::Kind::Lock, Format::Toml, LOCK_VERSION).map_err(
            |err| LockError {
                message: match err {
                    VersionedError::Read(reason) => reason,
                    VersionedError::Shape(why) => format!(
                        "is not a lock file; restore it, or remove it to unlock every plugin: {why}"
                    ),
                    VersionedError::Version { found, supported } => {
                        format!("has version {found}, but this host reads version {supported}")
                    }
                },
                path,
            },
        )
    }

    /// The entry of the plugin `name`.
    pub fn get(&self, name: &str) -> Option<&LockedPlugin> {
        self.plugins.iter().find(|p| p.name == name)
    }

    /// Adds `entry`, replacing the one of the same name.
    pub fn insert(&mut self, entry: LockedPlugin) {
        self.plugins.retain(|p| p.name != entry.name);
        self.plugins.push(entry);
        self.plugins.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Reads the lock of `dir` (empty when there is none), lets `change`
    /// edit it, and writes it back, all under the exclusive lock of
    /// `corral.lock` ([`corral_files::update_locked`]: `.corral.lock.lock`
    /// beside it): another writer waits, then sees this change. Answers
    /// what `change` answered.
    ///
    /// # Errors
    /// [`LockError`] when the file cannot be locked, or as [`Lock::read`]
    /// and [`Lock::write`].
    pub fn update<T>(dir: &Path, change: impl FnOnce(&mut Self) -> T) -> Result<T, LockError> {
        let path = Self::path(dir);
        corral_files::update_locked(
            &path,
            || {
                let mut lock = Self::read(dir)?.unwrap_or_default();
                let answer = change(&mut lock);
                lock.write(dir)?;
                Ok(answer)
            },
            |err| LockError {
                path: path.clone(),
                message: format!("cannot lock it for writing: {err}"),
            },
        )
    }

    /// Writes the lock into `dir`, atomically.
    ///
    /// # Errors
    /// [`LockError`] when the file cannot be written.
    pub fn write(&self, dir: &Path) -> Result<(), LockError> {
        let path = Self::path(dir);
        let mut lock = self.clone();
        lock.version = LOCK_VERSION;
        let text = toml::to_string(&lock).map_err(|e| LockError {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let text = format!(
            "# Written by corral after each pull: what each plugin was pulled from, and\n\
             # the digests the host checks before loading it.\n{text}"
        );
        corral_files::write_whole(&path, text.as_bytes(), corral_files::WriteOptions::SYNCED)
            .map_err(|err| LockError {
                path: path.clone(),
                message: format!("cannot write it: {err}"),
            })
    }
}

/// The load-time check: the file `wasm` with this `sha256` (hex) against
/// its entry in `lock`, if it has one. Answers why it must not load.
pub(crate) fn check(lock: &Lock, wasm: &Path, sha256: &str) -> Result<(), String> {
    let name = wasm
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(entry) = lock.get(&name) else {
        return Ok(());
    };
    let actual = format!("sha256:{sha256}");
    if entry.component == actual {
        return Ok(());
    }
    Err(format!(
        "its digest is {actual}, but {LOCK_FILE} records {} (pulled from {}); the file \
         changed after it was pulled: pull it again, or remove its entry from {LOCK_FILE}",
        entry.component, entry.reference
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_round_trips_and_checks_digests() {
        let dir = tempfile::tempdir().expect("dir");
        assert_eq!(Lock::read(dir.path()).expect("none"), None);
        let mut lock = Lock::default();
        lock.insert(LockedPlugin::new(
            "b",
            "oci://r/b:1",
            "sha256:m",
            "sha256:c",
        ));
        lock.insert(LockedPlugin::new(
            "a",
            "oci://r/a:1",
            "sha256:m",
            "sha256:aa",
        ));
        lock.insert(LockedPlugin::new(
            "b",
            "oci://r/b:2",
            "sha256:m2",
            "sha256:bb",
        ));
        lock.write(dir.path()).expect("write");
        let read = Lock::read(dir.path()).expect("read").expect("some");
        assert_eq!(read.version, LOCK_VERSION);
        let names: Vec<_> = read.plugins.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(read.get("b").expect("b").reference, "oci://r/b:2");
        assert!(check(&read, Path::new("/x/a.wasm"), "aa").is_ok());
        assert!(check(&read, Path::new("/x/unlocked.wasm"), "zz").is_ok());
        let err = check(&read, Path::new("/x/b.wasm"), "zz").unwrap_err();
        assert!(
            err.contains("sha256:zz") && err.contains("oci://r/b:2"),
            "{err}"
        );

        std::fs::write(Lock::path(dir.path()), "version = 1\nextra = 2\n").expect("write");
        let err = Lock::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("corral.lock") && err.contains("extra"),
            "{err}"
        );
        std::fs::write(Lock::path(dir.path()), "version = 9\n").expect("write");
        let err = Lock::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("version 9"), "{err}");
    }

    #[test]
    fn writers_at_once_each_see_the_others_changes() {
        let dir = tempfile::tempdir().expect("dir");
        std::thread::scope(|scope| {
            for n in 0..16 {
                let dir = dir.path();
                scope.spawn(move || {
                    Lock::update(dir, |lock| {
                        lock.insert(LockedPlugin::new(
                            format!("tool{n:02}"),
                            format!("oci://registry.example/tool{n:02}:1"),
                            "sha256:m",
                            "sha256:c",
                        ));
                    })
                    .expect("update");
                });
            }
        });
        let lock = Lock::read(dir.path()).expect("read").expect("a lock");
        for n in 0..16 {
            assert!(
                lock.get(&format!("tool{n:02}")).is_some(),
                "tool{n:02} lost"
            );
        }
    }
}
