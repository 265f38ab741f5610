//! What one plugin's policy lets its guest reach, in the form the sandbox
//! applies on every call: preopened directories, environment variables, and
//! the outbound HTTP allow-list enforced in `wasi:http`'s `send_request` hook.
//!
//! [`Grants::none`] is the default of every plugin without a policy and of every
//! `describe` at load: nothing.

use std::future::Future;
use std::sync::Arc;

use wasmtime_wasi::{FsPerms, WasiCtxBuilder};
use wasmtime_wasi_http::{RequestOptions, WasiBody, WasiHttpHooks};

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

/// The `wasi:http` hooks of one call: requests to destinations outside the
/// allow-list fail inside the guest with `HTTP-request-denied` and are logged
/// at WARN with the URL and the allow-list.
pub(crate) struct HttpGate {
    pub allow: Arc<[HostPattern]>,
    pub plugin: Arc<str>,
    pub tool: Arc<str>,
}

type Pending = Box<
    dyn Future<
            Output = wasmtime_wasi_http::Result<(
                http::Response<WasiBody>,
                Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
            )>,
        > + Send,
>;

impl HttpGate {
    fn allows(&self, uri: &http::Uri) -> bool {
        let scheme = uri.scheme_str().unwrap_or("");
        let Some(host) = uri.host() else {
            return false;
        };
        let port = uri.port_u16().unwrap_or(match scheme {
            "http" => 80,
            "https" => 443,
            _ => 0,
        });
        // IPv6 hosts keep their brackets on both sides (`[::1]`).
        self.allow.iter().any(|p| p.matches(scheme, host, port))
    }
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Pending {
        if !self.allows(request.uri()) {
            let allowed: Vec<String> = self.allow.iter().map(ToString::to_string).collect();
            tracing::warn!(
                plugin = &*self.plugin,
                tool = &*self.tool,
                url = %request.uri(),
                allow_list = %if allowed.is_empty() { "(empty)".to_string() } else { allowed.join(", ") },
                "outbound HTTP denied: the destination is not in the plugin's policy"
            );
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        tracing::debug!(
            plugin = &*self.plugin,
            tool = &*self.tool,
            url = %request.uri(),
            "outbound HTTP allowed"
        );
        // The default hooks send it (hyper, rustls with webpki roots).
        wasmtime_wasi_http::default_hooks().send_request(request, options, fut)
    }
}
