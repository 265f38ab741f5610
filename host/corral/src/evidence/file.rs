//! The evidence file of a plugin, `NAME.evidence.json` in the evidence
//! directory: [`PluginEvidence`] as JSON, version [`EVIDENCE_VERSION`],
//! read under corral-files' cap and written whole (mode 0600: example
//! digests say which calls were made) under the file's lock, merged with
//! what is there, so replicas and one-shot commands that share the
//! directory add up.

use std::path::{Path, PathBuf};

use super::{EVIDENCE_VERSION, PluginEvidence};

/// Why evidence cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the evidence file {path}: {message}")]
pub struct EvidenceError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong and what to do.
    pub message: String,
}

/// Where `plugin`'s evidence lives in `dir`.
pub fn evidence_path(dir: &Path, plugin: &str) -> PathBuf {
    dir.join(format!("{plugin}.evidence.json"))
}

/// `plugin`'s evidence in `dir`; `None` when there is no file.
///
/// # Errors
/// [`EvidenceError`] when the file cannot be read, is over its cap, or is
/// not evidence of version [`EVIDENCE_VERSION`] (delete it: it is only a
/// summary, rebuilt by the next calls).
pub fn read_evidence(dir: &Path, plugin: &str) -> Result<Option<PluginEvidence>, EvidenceError> {
    let path = evidence_path(dir, plugin);
    let fail = |message: String| EvidenceError {
        path: path.clone(),
        message,
    };
    let Some(text) = corral_files::read_text(&path, corral_files::Kind::Evidence)
        .map_err(|err| fail(err.reason()))?
    else {
        return Ok(None);
    };
    let evidence: PluginEvidence = serde_json::from_str(&text).map_err(|err| {
        fail(format!(
            "{err}; it is a summary the next calls rebuild: delete it to start afresh"
        ))
    })?;
    if evidence.version != EVIDENCE_VERSION {
        return Err(fail(format!(
            "version {} is not supported; this corral reads version {EVIDENCE_VERSION}",
            evidence.version
        )));
    }
    Ok(Some(evidence))
}

/// Adds `evidence` to its plugin's file in `dir` (created with the
/// directory when missing), under the file's lock.
pub(super) fn merge_into(dir: &Path, evidence: &PluginEvidence) -> Result<(), EvidenceError> {
    let path = evidence_path(dir, &evidence.plugin);
    let fail = |message: String| EvidenceError {
        path: path.clone(),
        message,
    };
    std::fs::create_dir_all(dir).map_err(|err| {
        fail(format!(
            "cannot create its directory: {err}; choose a writable --evidence-dir"
        ))
    })?;
    corral_files::update_locked(
        &path,
        || {
            let mut merged = match read_evidence(dir, &evidence.plugin) {
                Ok(Some(found)) => found,
                // A file of another version or shape is replaced: it is a
                // summary, and this one is current.
                Ok(None) | Err(_) => PluginEvidence::new(&evidence.plugin, &evidence.sha256),
            };
            merged.merge(evidence);
            let text = serde_json::to_vec_pretty(&merged)
                .map_err(|err| fail(format!("cannot encode it: {err}")))?;
            corral_files::write_whole(&path, &text, corral_files::WriteOptions::PRIVATE)
                .map_err(|err| fail(format!("cannot write it: {err}")))
        },
        |err| fail(format!("cannot lock it: {err}")),
    )
}
