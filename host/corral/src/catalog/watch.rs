//! Hot reload: watch the plugin directory and reload the host when a plugin,
//! a policy, `pipelines.json` or `groups.toml` changes.
//!
//! File events are coalesced into bursts ([`Burst`]): a reload runs once the
//! directory has been quiet for [`DEBOUNCE`], or [`MAX_RELOAD_DELAY`] after
//! the first change of the burst, whichever comes first, so a file rewritten
//! without pause still reloads. A reload that sees a half-written file keeps
//! the previous version of that plugin ([`crate::catalog`]) and the next event
//! after the write finishes loads the new one.
//!
//! A separate policy directory ([`HostBuilder::policy_dir`](crate::HostBuilder::policy_dir))
//! is watched too, and any change in it counts: a Kubernetes ConfigMap
//! volume is updated by swapping its `..data` link, not by writing the
//! `*.policy.toml` files.
//!
//! The directory itself may go away (a volume unmounted, a deploy that swaps
//! the directory by rename). The host then keeps serving its last catalog,
//! and the watcher looks for the directory every [`REWATCH_POLL`], watches it
//! again when it is back, and reloads.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecursiveMode, Watcher as _};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use crate::host::error::HostError;

/// How long the directory must be quiet before a reload: 200 ms.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// The longest a change waits for its reload while writes keep coming: 1 s
/// after the first change of a burst. Without it, a file rewritten every
/// 100 ms would never be quiet for [`DEBOUNCE`] and would never reload.
pub const MAX_RELOAD_DELAY: Duration = Duration::from_secs(1);

/// How often the watcher looks for a plugin directory that went away: 250 ms.
pub const REWATCH_POLL: Duration = Duration::from_millis(250);

/// A running watch; dropping it stops watching.
pub struct Watcher {
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // The task owns the notify watcher: aborting it stops the watch.
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
        || name == crate::config::lock::LOCK_FILE
        // Signatures beside a plugin.
        || name.ends_with(".wasm.sig")
        || name.ends_with(".wasm.sigstore.json")
        || name.ends_with(".wasm.cosign.json")
        || name == crate::call::compose::pipeline::PIPELINES_FILE
        || name == crate::catalog::discovery::GROUPS_FILE
        || name == crate::catalog::discovery::DISCLOSURE_FILE
}

/// When a burst of changes is due for its reload: [`DEBOUNCE`] after its
/// last change, but never later than [`MAX_RELOAD_DELAY`] after its first.
#[derive(Debug, Clone, Copy)]
struct Burst {
    first: Instant,
    last: Instant,
}

impl Burst {
    fn new(now: Instant) -> Self {
        Self {
            first: now,
            last: now,
        }
    }

    fn changed(&mut self, now: Instant) {
        self.last = now;
    }

    fn due(&self) -> Instant {
        (self.last + DEBOUNCE).min(self.first + MAX_RELOAD_DELAY)
    }
}

/// Starts watching `dir` (and `policy_dir`), and runs `reload` after each
/// burst of relevant changes (one at a time; changes that arrive during a
/// reload start the next burst). Must be called inside a tokio runtime; the
/// watch runs as a task on it.
///
/// # Errors
/// [`HostError::Watch`] when a directory cannot be watched.
pub(crate) fn start<F, Fut>(
    dir: PathBuf,
    policy_dir: Option<PathBuf>,
    reload: F,
) -> Result<Watcher, HostError>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    // `true` when the event is about the directory itself.
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<bool>();
    // notify reports absolute paths (it joins a relative one to the current
    // directory), so the directory's own events are matched the same way.
    let watched_dir = std::path::absolute(&dir).unwrap_or_else(|_| dir.clone());
    let watched_policies = policy_dir
        .as_ref()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()));
    let mut watcher =
        notify::recommended_watcher(move |result: notify::Result<notify::Event>| match result {
            Ok(event) => {
                // The directory itself removed or renamed: the task watches
                // whatever is at the path again.
                if event.paths.iter().any(|p| p == &watched_dir) {
                    let _ = tx.send(true);
                } else if event.need_rescan()
                    || event.paths.iter().any(|p| {
                        relevant(p) || watched_policies.as_ref().is_some_and(|d| p.starts_with(d))
                    })
                {
                    let _ = tx.send(false);
                }
            }
            Err(err) => {
                tracing::warn!("watching the plugin directory: {err}");
                let _ = tx.send(true);
            }
        })
        .map_err(|err| HostError::Watch(format!("cannot start watching: {err}")))?;
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|err| HostError::Watch(format!("cannot watch {}: {err}", dir.display())))?;
    if let Some(policies) = &policy_dir {
        watcher
            .watch(policies, RecursiveMode::NonRecursive)
            .map_err(|err| {
                HostError::Watch(format!("cannot watch {}: {err}", policies.display()))
            })?;
    }
    tracing::info!(dir = %dir.display(), "watching the plugin directory");
    let task = tokio::spawn(run(dir, watcher, rx, reload));
    Ok(Watcher { task })
}

/// The watch loop: wait for a change, let its burst settle, watch the
/// directory again when the burst touched the directory itself (waiting for
/// it to come back when it is gone), then reload.
async fn run<F, Fut>(
    dir: PathBuf,
    mut watcher: notify::RecommendedWatcher,
    mut rx: UnboundedReceiver<bool>,
    reload: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    while let Some(first) = rx.recv().await {
        let mut burst = Burst::new(Instant::now());
        let mut dir_changed = first;
        loop {
            tokio::select! {
                more = rx.recv() => match more {
                    Some(itself) => {
                        burst.changed(Instant::now());
                        dir_changed |= itself;
                    }
                    None => return,
                },
                () = tokio::time::sleep_until(burst.due()) => break,
            }
        }
        if dir_changed {
            rewatch(&dir, &mut watcher).await;
            // Events from the old directory are stale now.
            while rx.try_recv().is_ok() {}
        }
        reload().await;
    }
}

/// Watches `dir` again, first waiting for it to be a directory. While it is
/// gone the host keeps serving its last catalog.
async fn rewatch(dir: &Path, watcher: &mut notify::RecommendedWatcher) {
    // The old watch may still hold a renamed directory; it is gone or
    // stale either way.
    let _ = watcher.unwatch(dir);
    let mut warned = false;
    loop {
        if std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
            match watcher.watch(dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    tracing::info!(dir = %dir.display(), "watching the plugin directory again");
                    return;
                }
                Err(err) if !warned => {
                    tracing::warn!("cannot watch {} yet: {err}", dir.display());
                    warned = true;
                }
                Err(_) => {}
            }
        } else if !warned {
            tracing::warn!(
                dir = %dir.display(),
                "the plugin directory is gone; still serving the last catalog until it is back"
            );
            warned = true;
        }
        tokio::time::sleep(REWATCH_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_due_when_quiet_or_at_its_cap_whichever_is_first() {
        let t0 = Instant::now();
        let mut burst = Burst::new(t0);
        assert_eq!(burst.due(), t0 + DEBOUNCE, "one change: after the quiet");
        burst.changed(t0 + Duration::from_millis(100));
        assert_eq!(burst.due(), t0 + Duration::from_millis(300));
        // Writes every 100 ms never leave 200 ms of quiet: the cap decides.
        for ms in (200..3000).step_by(100) {
            burst.changed(t0 + Duration::from_millis(ms));
        }
        assert_eq!(burst.due(), t0 + MAX_RELOAD_DELAY);
    }

    #[test]
    fn the_files_that_matter_and_those_that_do_not() {
        for name in ["a.wasm", "a.policy.toml", "a.wasm.sig", "groups.toml"] {
            assert!(relevant(Path::new(name)), "{name}");
        }
        for name in ["a.wasm.tmp", "notes.txt", "a.toml"] {
            assert!(!relevant(Path::new(name)), "{name}");
        }
    }
}
