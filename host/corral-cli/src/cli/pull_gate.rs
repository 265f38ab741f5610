//! The update gate of `corral pull` (`[record] gate_updates`): before a
//! pull, the builds of the plugins whose policy gates updates are kept
//! aside; after it, each one the pull replaced replays the old build's
//! recordings (`corral::replay`). When an output changed or a replay
//! diverged, the old build and `corral.lock` are put back and the new one
//! is named as held, unless `--accept-changes` or the build was accepted
//! (`corral replay DIR --plugin FILE --accept`). A served directory's
//! watcher applies the same gate at its reload (`replay/gate.rs`).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use corral::replay::{Recordings, RecordingsConfig, ReplayOptions, Verdict};

use super::GlobalArgs;

/// A gated plugin's build before the pull.
struct Served {
    path: PathBuf,
    bytes: Vec<u8>,
    sha256: String,
}

/// What a pull may replace, kept aside.
pub(super) struct Snapshot {
    served: Vec<Served>,
    lock: Option<Vec<u8>>,
    dir: PathBuf,
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The builds in `dir` whose policy (beside them, or in `policy_dir`) sets
/// `gate_updates`, and the lock file, as they are now.
pub(super) fn snapshot(dir: &Path, policy_dir: Option<&Path>) -> Snapshot {
    let mut served = Vec::new();
    for path in corral::plugin_files(dir).unwrap_or_default() {
        let policy = std::fs::read_to_string(corral::policy_path_in(&path, policy_dir))
            .ok()
            .and_then(|text| corral::Policy::parse(&text, &path).ok());
        let gated = policy
            .as_ref()
            .and_then(|p| p.record.as_ref())
            .is_some_and(|r| r.gate_updates);
        if let (true, Ok(bytes)) = (gated, std::fs::read(&path)) {
            served.push(Served {
                sha256: sha256(&bytes),
                path,
                bytes,
            });
        }
    }
    Snapshot {
        served,
        lock: std::fs::read(dir.join(corral::LOCK_FILE)).ok(),
        dir: dir.to_path_buf(),
    }
}

/// Checks each gated plugin the pull replaced; puts back the old build of
/// each whose replays changed, and answers one line per such plugin.
///
/// # Errors
/// When a build cannot be read, replayed or put back.
pub(super) async fn check(
    global: &GlobalArgs,
    snapshot: Snapshot,
    accept_changes: bool,
) -> anyhow::Result<Vec<String>> {
    let Some(recorded_in) = super::replay::dir_of(global) else {
        return Ok(Vec::new());
    };
    let recordings = Recordings::open(RecordingsConfig::new(&recorded_in))?;
    let mut held = Vec::new();
    for old in &snapshot.served {
        let Ok(bytes) = std::fs::read(&old.path) else {
            continue;
        };
        let new_sha = sha256(&bytes);
        if new_sha == old.sha256 || recordings.accepted(&new_sha) {
            continue;
        }
        let name = old
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let recorded = recordings.of_build(&name, &old.sha256, corral::replay::MAX_GATE_REPLAYS);
        if recorded.is_empty() {
            continue;
        }
        // The new build in a directory of its own, under the same policy.
        let scratch = tempfile::Builder::new().prefix("corral-gate-").tempdir()?;
        std::fs::write(scratch.path().join(format!("{name}.wasm")), &bytes)?;
        let policy = corral::policy_path_in(&old.path, global.policy_dir.as_deref());
        if policy.is_file() {
            std::fs::copy(&policy, scratch.path().join(format!("{name}.policy.toml")))?;
        }
        let dir = scratch.path().to_path_buf();
        let host = global.host_with(|b| Ok(b.plugin_dir(dir))).await?;
        let mut changed = 0;
        for recording in &recorded {
            let same = corral::replay::replay(&host, recording, ReplayOptions::shadow())
                .await
                .is_ok_and(|r| r.verdict == Verdict::Identical);
            changed += usize::from(!same);
        }
        if changed == 0 || accept_changes {
            continue;
        }
        corral_files::write_whole(&old.path, &old.bytes, corral_files::WriteOptions::SYNCED)
            .with_context(|| format!("cannot put back {}", old.path.display()))?;
        if let Some(lock) = &snapshot.lock {
            corral_files::write_whole(
                &snapshot.dir.join(corral::LOCK_FILE),
                lock,
                corral_files::WriteOptions::SYNCED,
            )
            .context("cannot put back the lock file")?;
        }
        held.push(format!(
            "{name}: the pulled build (sha256 {new_sha}) changes {changed} of {} recorded calls; \
             the served build is back in place. See the changes with `corral replay {} \
             --plugin FILE`, then accept the build with `--accept` and pull again, or pull with \
             --accept-changes",
            recorded.len(),
            recorded_in.display()
        ));
    }
    Ok(held)
}
