//! Hot reload: watch the plugin directory and reload the host when a plugin,
//! a policy, `pipelines.json` or `groups.toml` changes.
//!
//! File events are debounced ([`DEBOUNCE`]) so that a burst of writes becomes
//! one reload; a reload that sees a half-written file keeps the previous
//! version of that plugin ([`crate::catalog`]) and the next event after the
//! write finishes loads the new one.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use crate::error::HostError;

/// How long the directory must be quiet before a reload: 200 ms.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// A running watch; dropping it stops watching.
pub struct Watcher {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether a change to `path` can change what the host serves.
fn relevant(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name.ends_with(".wasm")
        || name.ends_with(".policy.toml")
        // The WIT beside a component of another world: its docs.
        || name.ends_with(".wit")
        || name == crate::lock::LOCK_FILE
        // Signatures beside a plugin.
        || name.ends_with(".wasm.sig")
        || name.ends_with(".wasm.sigstore.json")
        || name.ends_with(".wasm.cosign.json")
        || name == crate::compose::pipeline::PIPELINES_FILE
        || name == crate::discovery::GROUPS_FILE
        || name == crate::discovery::DISCLOSURE_FILE
}

/// Starts watching `dir`, and runs `reload` after each quiet burst of
/// relevant changes (one at a time; changes that arrive during a reload cause
/// one more). Must be called inside a tokio runtime; reloads run as a task on
/// it.
///
/// # Errors
/// [`HostError::Watch`] when the directory cannot be watched.
pub(crate) fn start<F, Fut>(dir: PathBuf, reload: F) -> Result<Watcher, HostError>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut debouncer =
        new_debouncer(
            DEBOUNCE,
            None,
            move |result: DebounceEventResult| match result {
                Ok(events) => {
                    if events.iter().any(|e| e.paths.iter().any(|p| relevant(p))) {
                        let _ = tx.send(());
                    }
                }
                Err(errors) => {
                    for err in errors {
                        tracing::warn!("watching the plugin directory: {err}");
                    }
                }
            },
        )
        .map_err(|err| HostError::Watch(format!("cannot start watching: {err}")))?;
    debouncer
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|err| HostError::Watch(format!("cannot watch {}: {err}", dir.display())))?;
    let task = tokio::spawn(async move {
        while rx.recv().await.is_some() {
            // Events that queued up during a reload need one more reload, not many.
            while rx.try_recv().is_ok() {}
            reload().await;
        }
    });
    tracing::info!(dir = %dir.display(), "watching the plugin directory");
    Ok(Watcher {
        _debouncer: debouncer,
        task,
    })
}
