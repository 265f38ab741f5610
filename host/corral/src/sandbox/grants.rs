//! What one plugin's policy lets its guest reach, in the form the sandbox
//! applies on every call: preopened directories, environment variables, and
//! the outbound HTTP allow-list (enforced by [`super::http`]).
//!
//! [`Grants::none`] is the default of every plugin without a policy and of every
//! `describe` at load: nothing.

use std::sync::Arc;

use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::policy::{DirGrant, EnvGrant, HostPattern, Policy};

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
}

impl Grants {
    /// Nothing: no directories, no environment, no HTTP.
    pub fn none() -> Self {
        Self::default()
    }

    /// The grants of `policy`. Pass-through variables are read from the host's
    /// environment now; unset ones are skipped with a WARN.
    pub fn from_policy(policy: &Policy, plugin: &str) -> Self {
        let env = policy
            .environment
            .iter()
            .filter_map(|grant| match grant {
                EnvGrant::Set { name, value } => Some((name.clone(), value.clone())),
                EnvGrant::Pass { name } => match std::env::var(name) {
                    Ok(value) => Some((name.clone(), value)),
                    Err(_) => {
                        tracing::warn!(
                            plugin,
                            variable = name,
                            "policy passes through an environment variable the host does not have"
                        );
                        None
                    }
                },
            })
            .collect();
        Self {
            dirs: policy.filesystem.clone(),
            env,
            http_allow: policy.http_allow.clone().into(),
            http_private: policy.http_private,
        }
    }

    /// Adds the directory and environment grants to a WASI context.
    ///
    /// # Errors
    /// When a granted directory cannot be opened (it was removed after load).
    pub(crate) fn apply(&self, builder: &mut WasiCtxBuilder) -> std::io::Result<()> {
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
        Ok(())
    }
}
