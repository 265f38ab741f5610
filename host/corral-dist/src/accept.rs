//! Accepting a pulled policy: the operator has seen what a publisher's
//! policy would grant and makes it the plugin's policy. Until then it is a
//! request (`NAME.policy.requested.toml`) that the host does not read.

use std::path::{Path, PathBuf};

use sha2::Digest as _;

use crate::DistError;

/// Where a pulled policy request for the plugin `name` is kept in `dir`
/// ([`corral::requested_policy_path`]).
pub fn requested_policy_path(dir: &Path, name: &str) -> PathBuf {
    corral::requested_policy_path(&dir.join(format!("{name}.wasm")))
}

/// What `policy` grants, in words (as `corral policy check` says it).
pub(crate) fn grants(policy: &corral::Policy) -> Vec<String> {
    policy.grants(&corral::effective_limits(
        &corral::Limits::default(),
        &policy.limits,
        None,
    ))
}

/// What accepting wrote.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Accepted {
    /// The plugin's policy file now in force (`NAME.policy.toml`).
    pub path: PathBuf,
    /// What it grants, in words.
    pub grants: Vec<String>,
    /// Whether it replaced a policy the plugin already had.
    pub replaced: bool,
}

/// Makes the pulled policy request of the plugin `name` in `dir` its policy
/// (the host's watcher reloads the plugin with it).
///
/// # Errors
/// [`DistError::File`] when there is no request or it cannot be moved;
/// [`DistError::Policy`] when the request is not a valid policy.
pub fn accept_policy(dir: &Path, name: &str) -> Result<Accepted, DistError> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(DistError::File {
            path: dir.to_path_buf(),
            message: format!(
                "`{}` is not a plugin name",
                corral::untrusted_text::escape_line(name)
            ),
        });
    }
    let request = requested_policy_path(dir, name);
    let text = std::fs::read_to_string(&request).map_err(|e| DistError::File {
        path: request.clone(),
        message: if e.kind() == std::io::ErrorKind::NotFound {
            format!("no policy request for `{name}`: a pull writes one when its artifact carries a policy")
        } else {
            e.to_string()
        },
    })?;
    let path = corral::policy_path(&dir.join(format!("{name}.wasm")));
    let policy = corral::Policy::parse(&text, &path).map_err(|e| DistError::Policy {
        reference: request.display().to_string(),
        message: e.to_string(),
    })?;
    // The request must be the one the lock records for this version.
    let recorded = corral::Lock::read(dir)
        .ok()
        .flatten()
        .and_then(|lock| lock.get(name).and_then(|e| e.policy.clone()));
    let digest = format!(
        "sha256:{}",
        hex::encode(sha2::Sha256::digest(text.as_bytes()))
    );
    if let Some(recorded) = recorded
        && recorded != digest
    {
        return Err(DistError::Policy {
            reference: request.display().to_string(),
            message: format!(
                "its digest is {digest}, but corral.lock records {recorded} for `{name}`: it \
                 is not the request of the version pulled; pull it again"
            ),
        });
    }
    let grants = grants(&policy);
    let replaced = path.exists();
    std::fs::rename(&request, &path).map_err(|e| DistError::File {
        path: path.clone(),
        message: e.to_string(),
    })?;
    Ok(Accepted {
        path,
        grants,
        replaced,
    })
}
