//! What one plugin's policy lets its guest reach, in the form the sandbox
//! applies on every call: preopened directories ([`DirGrant`]), environment
//! variables ([`EnvGrant`]), and the outbound HTTP allow-list
//! ([`HostPattern`], enforced in the sandbox's `wasi:http` hook) with the
//! headers the host injects. The library builds [`Grants`] from a validated
//! policy file (`corral::Policy`); the grant types are defined here, where
//! they are applied.
//!
//! [`Grants::none`] is the default of every plugin without a policy and of every
//! `describe` at load: nothing.

use std::sync::Arc;

use serde::Serialize;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

mod pattern;

pub use pattern::{HostPattern, env_name, guest_path};

/// A preopened directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirGrant {
    /// The host directory as written in the file.
    pub host_as_written: String,
    /// The host directory, resolved against the policy file's directory and
    /// canonicalized.
    #[serde(skip)]
    pub host: std::path::PathBuf,
    /// Where the guest sees it (absolute).
    pub guest: String,
    /// Whether the guest may create, change and delete files in it.
    pub writable: bool,
}

/// An environment variable grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EnvGrant {
    /// The variable with this value.
    Set {
        /// Name.
        name: String,
        /// Value.
        value: String,
    },
    /// The host's value of the variable, if set when the plugin loads.
    Pass {
        /// Name.
        name: String,
    },
}

impl EnvGrant {
    /// The variable's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Set { name, .. } | Self::Pass { name } => name,
        }
    }

    /// The grant in words, as `corral policy` shows it: `NAME=value`, or
    /// `NAME passed through from the host`.
    pub fn describe(&self) -> String {
        match self {
            Self::Set { name, value } => format!("{name}={value}"),
            Self::Pass { name } => format!("{name} passed through from the host"),
        }
    }

    /// The value the plugin sees, read now: a `Set` grant's value, or the
    /// host's value of a `Pass` grant (`None` when the host does not have
    /// the variable, or its value is not Unicode).
    pub fn value(&self) -> Option<String> {
        match self {
            Self::Set { value, .. } => Some(value.clone()),
            Self::Pass { name } => std::env::var(name).ok(),
        }
    }
}

/// The grants of one plugin, ready for the sandbox.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    /// Preopened directories.
    pub dirs: Vec<DirGrant>,
    /// Environment variables, resolved when the plugin loaded.
    pub env: Vec<(String, String)>,
    /// Allowed outbound HTTP destinations; empty denies every request.
    pub http_allow: Arc<[HostPattern]>,
    /// Whether an allowed name may resolve to an internal address
    /// (`[http] allow_private_networks`).
    pub http_private: bool,
    /// Headers the host sets on requests to a destination
    /// (`[[http.credentials]]`), their secrets filled in at load.
    pub http_credentials: Arc<[Injected]>,
    /// The leak scan of the secrets those headers use; `None` without any.
    pub redactor: Option<Arc<crate::redact::Redactor>>,
    /// What the guest may ask the MCP client (`[client]`); nothing by
    /// default.
    pub client: crate::client::ClientGrants,
    /// An empty directory preopened read-only at `/` for a learning run, so
    /// that opens outside every grant reach the host and are recorded
    /// ([`Attempts::files`](crate::Attempts)); they fail there: not found,
    /// or not permitted for a write. `None` outside a learning run (the
    /// default). The directory must exist and stay empty for the run: the
    /// guest can read what is in it. The grants in [`dirs`](Self::dirs)
    /// still win under their own paths: wasi-libc resolves a path through
    /// the longest preopen path that prefixes it, component-wise.
    pub learning_root: Option<std::path::PathBuf>,
    /// Whether the learning root is writable: only in a permissive
    /// learning run, where it is a scratch directory of its own; `false`
    /// (read-only) otherwise.
    pub learning_root_writable: bool,
}

/// A header the host sets on outbound requests to `host`.
#[derive(Clone)]
pub struct Injected {
    /// Where it goes.
    pub host: HostPattern,
    /// The header.
    pub name: http::HeaderName,
    /// Its value, secrets filled in (marked sensitive).
    pub value: http::HeaderValue,
}

impl std::fmt::Debug for Injected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Injected({} for {}, value hidden)", self.name, self.host)
    }
}

impl Grants {
    /// Nothing: no directories, no environment, no HTTP.
    pub fn none() -> Self {
        Self::default()
    }

    /// Adds the directory and environment grants to a WASI context, then
    /// the [`learning_root`](Self::learning_root) if any (preopened at `/`,
    /// read-only).
    ///
    /// # Errors
    /// When a granted directory or the learning root cannot be opened (it
    /// was removed after load).
    pub fn apply(&self, builder: &mut WasiCtxBuilder) -> std::io::Result<()> {
        for (name, value) in &self.env {
            builder.env(name, value);
        }
        for dir in &self.dirs {
            let perms = if dir.writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            builder
                .preopened_dir(&dir.host, &dir.guest, perms)
                .map_err(|err| {
                    std::io::Error::other(format!(
                        "cannot open granted directory {}: {err:#}",
                        dir.host.display()
                    ))
                })?;
        }
        if let Some(root) = &self.learning_root {
            let perms = if self.learning_root_writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            builder.preopened_dir(root, "/", perms).map_err(|err| {
                std::io::Error::other(format!(
                    "cannot open the learning root {}: {err:#}",
                    root.display()
                ))
            })?;
        }
        Ok(())
    }
}
