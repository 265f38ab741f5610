//! The update gate (`[record] gate_updates = true`): before a new build of
//! a plugin replaces the one being served (hot reload, `corral pull` into a
//! watched directory), the old build's recordings are replayed against the
//! new build. When every replay is identical the new build swaps in; when
//! an output changed or a replay diverged, the old build keeps serving and
//! the load error says what changed and how to accept it, unless the host
//! lets changes through ([`RecordingsConfig::accept_changes`](super::RecordingsConfig),
//! `serve --accept-changes`) or a person accepted that very build
//! ([`Recordings::accept`], `corral replay DIR --plugin FILE --accept`).
//! With no recording of the old build there is nothing to compare: the
//! new build swaps in, logged.

use super::dir::Recordings;
use super::run::{ReplayOptions, Verdict, replay_plugin};
use crate::loader::error::LoadErrorReason;
use crate::loader::plugin::Plugin;

/// Most recordings of the old build replayed per update: the newest 50.
pub const MAX_GATE_REPLAYS: usize = 50;

/// Checks `new` against the recordings of `old`; `Some(reason)` holds the
/// update back.
pub(crate) async fn check(
    recordings: &Recordings,
    engine: &corral_sandbox::Engine,
    permits: &tokio::sync::Semaphore,
    old: &Plugin,
    new: &Plugin,
) -> Option<LoadErrorReason> {
    let gated = [new, old]
        .iter()
        .any(|p| p.policy().record.as_ref().is_some_and(|r| r.gate_updates));
    if !gated || old.sha256() == new.sha256() {
        return None;
    }
    let name = new.name();
    if recordings.accepted(new.sha256()) {
        tracing::info!(
            plugin = name,
            sha256 = new.sha256(),
            "update accepted; swapping in"
        );
        return None;
    }
    let recorded = recordings.of_build(name, old.sha256(), MAX_GATE_REPLAYS);
    if recorded.is_empty() {
        tracing::info!(
            plugin = name,
            "no recording of the served build to replay; the new build swaps in"
        );
        return None;
    }
    let mut changed = 0;
    let mut first = None;
    for recording in &recorded {
        let verdict =
            match replay_plugin(engine, permits, new, recording, ReplayOptions::shadow()).await {
                Ok(report) => report.verdict,
                Err(err) => {
                    changed += 1;
                    first.get_or_insert_with(|| format!("{}: {err}", recording.header.shown));
                    continue;
                }
            };
        match verdict {
            Verdict::Identical => {}
            Verdict::OutputChanged(diff) => {
                changed += 1;
                let line = diff
                    .iter()
                    .find(|l| !l.starts_with("  "))
                    .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "));
                first.get_or_insert_with(|| {
                    format!(
                        "{}: output changed ({})",
                        recording.header.shown,
                        line.unwrap_or_default()
                    )
                });
            }
            Verdict::Diverged(divergence) => {
                changed += 1;
                first.get_or_insert_with(|| {
                    format!("{}: diverged {divergence}", recording.header.shown)
                });
            }
        }
    }
    if changed == 0 {
        tracing::info!(
            plugin = name,
            replays = recorded.len(),
            "every recorded call replays identically on the new build; swapping in"
        );
        return None;
    }
    let first = corral_names::text::escape_line(&first.unwrap_or_default()).into_owned();
    if recordings.accepts_changes() {
        tracing::warn!(
            plugin = name,
            changed,
            replays = recorded.len(),
            "the new build changes recorded outputs ({first}); swapping in (accept changes)"
        );
        return None;
    }
    Some(LoadErrorReason::UpdateHeld {
        changed,
        replayed: recorded.len(),
        first,
        sha256: new.sha256().to_owned(),
        dir: recordings.dir().display().to_string(),
    })
}
