//! What one plugin's policy lets its guest reach, in the form the sandbox
//! applies on every call: preopened directories, environment variables, and
//! the outbound HTTP allow-list (enforced by [`super::http`]).
//!
//! [`Grants::none`] is the default of every plugin without a policy and of every
//! `describe` at load: nothing.

use std::collections::BTreeMap;
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
    /// Headers the host sets on requests to a destination
    /// (`[[http.credentials]]`), their secrets filled in at load.
    pub http_credentials: Arc<[Injected]>,
    /// The leak scan of the secrets those headers use; `None` without any.
    pub redactor: Option<Arc<crate::secrets::Redactor>>,
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

    /// The grants of `policy`, with the secrets of `secrets` filled into its
    /// `[[http.credentials]]`. Pass-through variables are read from the
    /// host's environment now; unset ones are skipped with a WARN.
    ///
    /// # Errors
    /// A message naming a credential's secret the store lacks, or one that
    /// cannot be in a header.
    pub fn from_policy(
        policy: &Policy,
        plugin: &str,
        secrets: &BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let mut injected = Vec::new();
        let mut used = BTreeMap::new();
        for credential in &policy.http_credentials {
            let value = credential.render(secrets)?;
            let mut value = http::HeaderValue::from_str(&value).map_err(|_| {
                format!(
                    "the header `{}` for {} is not a valid header value once its secrets are \
                     filled in; check them",
                    credential.header, credential.host
                )
            })?;
            value.set_sensitive(true);
            injected.push(Injected {
                host: credential.host.clone(),
                name: http::HeaderName::from_bytes(credential.header.as_bytes())
                    .map_err(|e| e.to_string())?,
                value,
            });
            for name in credential.secrets() {
                if let Some(secret) = secrets.get(name) {
                    if secret.len() < 8 {
                        tracing::warn!(
                            plugin,
                            secret = name,
                            "the secret is shorter than 8 bytes: the leak scan cannot look for \
                             it as it is (only its longer forms)"
                        );
                    }
                    used.insert(name.to_string(), secret.clone());
                }
            }
        }
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
        Ok(Self {
            dirs: policy.filesystem.clone(),
            env,
            http_allow: policy.http_allow.clone().into(),
            http_private: policy.http_private,
            http_credentials: injected.into(),
            redactor: crate::secrets::Redactor::new(&used.into_iter().collect::<Vec<_>>()),
        })
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
