//! What follows a host's first load: warnings about approval gates nobody
//! can pass, and serving before compiling (plugins whose compiled form the
//! component cache lacks are compiled by one background reload; a call to
//! a tool not loaded yet waits for it, up to the call's deadline).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use super::Host;
use crate::call::ProgressSink;
use crate::catalog::Catalog;

/// Warns about gated names no tool has, and gated tools without a reviewer.
pub(super) fn warn_about_gates(catalog: &Catalog, required: &BTreeSet<String>, reviewer: bool) {
    for name in required {
        if catalog.tool(name).is_none() {
            tracing::warn!(
                tool = name,
                "marked as requiring approval, but no loaded tool has this name"
            );
        }
    }
    if !reviewer {
        let gated: Vec<&str> = catalog
            .tools()
            .filter(|tool| tool.requires_approval())
            .map(|tool| tool.spec().name.as_str())
            .collect();
        if !gated.is_empty() {
            tracing::warn!(
                "tools requiring approval with no reviewer configured (their calls will \
                 fail until one is): {}",
                gated.join(", ")
            );
        }
    }
}

impl Host {
    /// Plugin files the host does not serve yet because they are still
    /// being compiled ([`HostBuilder::serve_while_compiling`](crate::HostBuilder::serve_while_compiling));
    /// empty once they are (whether they loaded or failed: see
    /// [`Host::load_errors`]). "Ready", for a readiness probe, means every
    /// plugin with a valid cache entry is served; these are the ones that
    /// are not yet.
    pub fn pending_plugins(&self) -> Vec<PathBuf> {
        self.catalog().pending().to_vec()
    }

    /// Starts the background reload that compiles the pending plugins, if
    /// there are any.
    pub(super) fn compile_pending_in_background(&self) {
        let pending = self.catalog().pending().len();
        if pending == 0 {
            return;
        }
        tracing::info!(
            served = self.catalog().tools().count(),
            pending,
            "serving the cached plugins; compiling the others in the background"
        );
        let host = self.clone();
        tokio::spawn(async move {
            if let Err(err) = host.reload().await {
                tracing::error!("background compile of pending plugins failed: {err}");
            }
        });
    }

    /// Waits until `name` is served or no plugin is pending
    /// ([`Host::pending_plugins`]), for at most `within`, telling `progress`
    /// once that it waits. Answers whether `name` is served. [`Host::call`]
    /// does this itself; a front end that looks a tool up before calling it
    /// (the MCP server) calls it for a name it does not know.
    pub async fn wait_for_tool(
        &self,
        name: &str,
        within: Duration,
        progress: Option<&ProgressSink>,
    ) -> bool {
        let mut reloads = self.inner.reloads.subscribe();
        let catalog = self.catalog();
        if catalog.tool(name).is_some() {
            return true;
        }
        let pending = catalog.pending().len();
        if pending == 0 {
            return false;
        }
        if let Some(sink) = progress {
            sink(
                name,
                &format!(
                    "waiting for {pending} plugin(s) still being compiled before looking up \
                     this tool"
                ),
            );
        }
        // Any reload loads every plugin: once one has finished (or failed),
        // the answer is what the catalog says.
        let _ = tokio::time::timeout(within, reloads.changed()).await;
        self.catalog().tool(name).is_some()
    }
}
