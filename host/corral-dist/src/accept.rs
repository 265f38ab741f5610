//! Accepting a pulled policy: the operator has seen what a publisher's
//! policy would grant and makes it the plugin's policy. Until then it is a
//! request (`NAME.policy.requested.toml`) that the host does not read.

use std::path::{Path, PathBuf};

use crate::DistError;

/// Where a pulled policy request for the plugin `name` is kept in `dir`
/// ([`corral::requested_policy_path`]).
pub fn requested_policy_path(dir: &Path, name: &str) -> PathBuf {
    corral::requested_policy_path(&dir.join(format!("{name}.wasm")))
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
    let grants = policy.grants(&corral::effective_limits(
        &corral::Limits::default(),
        &policy.limits,
        None,
    ));
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
