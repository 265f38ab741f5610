//! The secret store: named values an operator keeps for plugins, which the
//! host injects into outbound HTTP requests a policy binds them to
//! (`[[http.credentials]]`) and which no guest can read: they never reach a
//! guest's environment, files or memory.
//!
//! The store holds a TOML table of `NAME = "value"` lines, in one of two
//! places:
//! - a file ([`SecretStore::at`]), by default
//!   `$XDG_CONFIG_HOME/corral/secrets.toml` (or `~/.config/corral/`),
//!   written with mode 0600 in a directory of mode 0700, replaced
//!   atomically (a temporary file renamed over it);
//! - or the OS keyring ([`SecretStore::keyring`], cargo feature `keyring`,
//!   on in the CLI): one entry, service `corral`, user the store's name,
//!   through the `keyring-core` crate. On Linux that is the kernel's
//!   keyutils keyring (`linux-keyutils-keyring-store`: the session keyring,
//!   linked to the user's persistent keyring): held in kernel memory, gone
//!   at reboot, and visible to the processes of one session keyring (a
//!   login's, or one joined with `keyctl session NAME`); a user's keys are
//!   capped by the kernel (`kernel.keys.maxbytes`, 20 000 bytes for a
//!   non-root user by default). Other platforms have no backend in this
//!   build.
//!
//! Names follow `[A-Za-z0-9_]{1,64}`. Nothing here prints a value;
//! [`SecretStore::names`] lists names only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[cfg(feature = "keyring")]
mod keyring;

/// A secret store's errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The name breaks the rule.
    #[error("secret name `{name}` is invalid: use {}", corral_names::ident::SECRET.words())]
    InvalidName {
        /// The name given (escaped).
        name: String,
    },
    /// The store could not be read, parsed or written.
    #[error("secret store {store}: {message}")]
    Store {
        /// The store: its file, or `keyring corral/NAME`.
        store: String,
        /// What went wrong and what to do.
        message: String,
    },
}

/// A store of named secrets, in a file or the OS keyring (see the module
/// docs).
#[derive(Debug, Clone)]
pub struct SecretStore {
    place: Place,
}

#[derive(Debug, Clone)]
enum Place {
    File(PathBuf),
    Keyring(String),
}

/// Whether `name` follows the secret name rule
/// ([`corral_names::ident::SECRET`]).
pub(crate) fn valid_name(name: &str) -> bool {
    corral_names::ident::SECRET.is_valid(name)
}

impl SecretStore {
    /// The store in the file `path` (created on the first `set`).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self {
            place: Place::File(path.into()),
        }
    }

    /// The store in the OS keyring entry of service `corral` and user
    /// `name` (created on the first `set`). Using it fails with
    /// [`SecretError::Store`] where the build has no keyring backend (the
    /// `keyring` feature off, or not Linux) or the keyring cannot be
    /// reached.
    pub fn keyring(name: impl Into<String>) -> Self {
        Self {
            place: Place::Keyring(name.into()),
        }
    }

    /// The user's store: `$XDG_CONFIG_HOME/corral/secrets.toml`, or
    /// `~/.config/corral/secrets.toml`, or `./corral-secrets.toml` when
    /// neither variable is set.
    pub fn user_default() -> Self {
        let dir = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
        Self::at(match dir {
            Some(dir) => dir.join("corral").join("secrets.toml"),
            None => PathBuf::from("corral-secrets.toml"),
        })
    }

    /// The store's file, if it is one.
    pub fn path(&self) -> Option<&Path> {
        match &self.place {
            Place::File(path) => Some(path),
            Place::Keyring(_) => None,
        }
    }

    /// Where the store is, for people: its file, or `keyring corral/NAME`.
    pub fn location(&self) -> String {
        match &self.place {
            Place::File(path) => path.display().to_string(),
            Place::Keyring(name) => format!("keyring corral/{name}"),
        }
    }

    fn error(&self, message: impl Into<String>) -> SecretError {
        SecretError::Store {
            store: self.location(),
            message: message.into(),
        }
    }

    /// The store's text; `None` when it does not exist yet.
    fn read(&self) -> Result<Option<String>, SecretError> {
        match &self.place {
            Place::File(path) => corral_files::read_text(path, corral_files::Kind::Secrets)
                .map_err(|err| self.error(err.reason())),
            #[cfg(feature = "keyring")]
            Place::Keyring(name) => keyring::read(name).map_err(|e| self.error(e)),
            #[cfg(not(feature = "keyring"))]
            Place::Keyring(_) => Err(self.error(NO_KEYRING)),
        }
    }

    /// Every secret, by name; empty when the store does not exist yet.
    ///
    /// # Errors
    /// [`SecretError::Store`] when the store cannot be read or is not a
    /// table of strings.
    pub fn load(&self) -> Result<BTreeMap<String, String>, SecretError> {
        let Some(text) = self.read()? else {
            return Ok(BTreeMap::new());
        };
        toml::from_str(&text).map_err(|err| {
            self.error(format!(
                "is not a table of `NAME = \"value\"` lines ({}); fix or remove it",
                err.message()
            ))
        })
    }

    /// The names of the secrets, sorted (never their values).
    ///
    /// # Errors
    /// As [`Self::load`].
    pub fn names(&self) -> Result<Vec<String>, SecretError> {
        Ok(self.load()?.into_keys().collect())
    }

    /// Sets `name` to `value`, creating the store if needed.
    ///
    /// # Errors
    /// [`SecretError::InvalidName`], or [`SecretError::Store`] when the file
    /// cannot be read or written.
    pub fn set(&self, name: &str, value: &str) -> Result<(), SecretError> {
        check(name)?;
        let mut all = self.load()?;
        all.insert(name.to_string(), value.to_string());
        self.save(&all)
    }

    /// Removes `name`; answers whether it was there.
    ///
    /// # Errors
    /// As [`Self::set`].
    pub fn delete(&self, name: &str) -> Result<bool, SecretError> {
        check(name)?;
        let mut all = self.load()?;
        let was = all.remove(name).is_some();
        if was {
            self.save(&all)?;
        }
        Ok(was)
    }

    fn save(&self, all: &BTreeMap<String, String>) -> Result<(), SecretError> {
        let text = toml::to_string(all).map_err(|e| self.error(e.to_string()))?;
        match &self.place {
            Place::File(path) => self.save_file(path, &text),
            #[cfg(feature = "keyring")]
            Place::Keyring(name) => keyring::write(name, &text).map_err(|e| self.error(e)),
            #[cfg(not(feature = "keyring"))]
            Place::Keyring(_) => Err(self.error(NO_KEYRING)),
        }
    }

    fn save_file(&self, path: &Path, text: &str) -> Result<(), SecretError> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir {
            corral_files::create_private_dir(dir)
                .map_err(|e| self.error(format!("cannot create its directory: {e}")))?;
        }
        corral_files::write_whole(path, text.as_bytes(), corral_files::WriteOptions::PRIVATE)
            .map_err(|e| self.error(format!("cannot write it: {e}")))
    }
}

#[cfg(not(feature = "keyring"))]
const NO_KEYRING: &str = "this build has no OS keyring support (built without the `keyring` \
                          feature); keep the secrets in a file store instead";

fn check(name: &str) -> Result<(), SecretError> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(SecretError::InvalidName {
            name: corral_names::text::escape(name).into_owned(),
        })
    }
}

/// A digest of `secrets` when the policy text `source` names a secret
/// (`{secret:`), else `None`: what a reload compares.
pub(crate) fn stamp(source: Option<&str>, secrets: &BTreeMap<String, String>) -> Option<String> {
    source.filter(|s| s.contains("{secret:"))?;
    let mut stamp = corral_files::Stamp::new();
    for (name, value) in secrets {
        stamp.part(name.as_bytes()).part(value.as_bytes());
    }
    // A policy that names a secret while the store holds none still has a
    // stamp (of nothing), so setting the first secret is a change.
    Some(stamp.finish().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_keeps_names_and_values_in_a_private_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("dir");
        let store = SecretStore::at(dir.path().join("sub/secrets.toml"));
        assert!(store.names().expect("empty").is_empty());
        store.set("API_KEY", "s3cr3t \"quoted\"").expect("set");
        store.set("OTHER", "x").expect("set");
        assert_eq!(store.names().expect("names"), ["API_KEY", "OTHER"]);
        assert_eq!(store.load().expect("load")["API_KEY"], "s3cr3t \"quoted\"");
        let mode = std::fs::metadata(store.path().expect("a file"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(dir.path().join("sub"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        assert!(store.delete("OTHER").expect("delete"));
        assert!(!store.delete("OTHER").expect("delete again"));
        assert_eq!(store.names().expect("names"), ["API_KEY"]);
        assert!(matches!(
            store.set("bad name", "x"),
            Err(SecretError::InvalidName { .. })
        ));
        std::fs::write(store.path().expect("a file"), "API_KEY = 5").expect("write");
        let err = store.load().unwrap_err().to_string();
        assert!(
            err.contains("secrets.toml") && err.contains("NAME = \"value\""),
            "{err}"
        );
    }
}
