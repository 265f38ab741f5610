//! The checks a plugin file passes before it is compiled: its `corral.lock`
//! entry, its integrity (the policy's sha256 pin, and its signature against
//! the policy's `[integrity]` signers or the host's trusted keys and
//! identities), and
//! its policy's limits within the host's maximums.

use std::path::Path;

use super::Inputs;
use crate::config::policy::{Policy, PolicyError};
use crate::loader::error::LoadErrorReason;
use crate::loader::signature::Signed;
use corral_sandbox::Limits;

/// The file's digest against the directory's lock, if it is locked.
pub(super) fn lock(inputs: &Inputs, path: &Path, sha256: &str) -> Result<(), LoadErrorReason> {
    match &inputs.lock {
        Ok(None) => Ok(()),
        Ok(Some(lock)) => {
            crate::config::lock::check(lock, path, sha256).map_err(LoadErrorReason::Locked)
        }
        Err(err) => Err(LoadErrorReason::Locked(format!(
            "{err}; no plugin of this directory loads until it can be checked"
        ))),
    }
}

/// The sha256 pin, then the signature: answers who signed it.
pub(super) fn integrity(
    policy: &Policy,
    path: &Path,
    bytes: &[u8],
    sha256: &str,
    trust: &crate::loader::signature::Trust,
) -> Result<Option<Signed>, LoadErrorReason> {
    if let Some(expected) = &policy.sha256
        && *expected != sha256
    {
        return Err(LoadErrorReason::IntegrityMismatch {
            expected: expected.clone(),
            actual: sha256.to_string(),
            policy: policy.path.clone(),
        });
    }
    signature(policy, path, bytes, sha256, trust)
}

/// The signature check without the `signatures` feature: nothing can be
/// verified, so a plugin whose policy names signers does not load (a host
/// cannot require signatures without the feature).
#[cfg(not(feature = "signatures"))]
fn signature(
    policy: &Policy,
    path: &Path,
    _bytes: &[u8],
    _sha256: &str,
    _trust: &crate::loader::signature::Trust,
) -> Result<Option<Signed>, LoadErrorReason> {
    let required = !policy.signed_by.is_empty() || !policy.identities.is_empty();
    crate::loader::signature::check(path, required).map_err(LoadErrorReason::Signature)
}

/// The signature against the policy's signers or the host's trust.
#[cfg(feature = "signatures")]
fn signature(
    policy: &Policy,
    path: &Path,
    bytes: &[u8],
    sha256: &str,
    trust: &crate::loader::signature::Trust,
) -> Result<Option<Signed>, LoadErrorReason> {
    use crate::loader::signature::{Identity, PublicKey};
    // The policy's signers, when it names some, are the ones that count.
    let own: Vec<PublicKey> = policy
        .signed_by
        .iter()
        .map(|key| PublicKey::read(key))
        .collect::<Result<_, _>>()
        .map_err(|e| {
            LoadErrorReason::Policy(PolicyError::Rejected {
                path: policy.path.clone(),
                message: format!("[integrity] {e}"),
            })
        })?;
    let names_signers = !own.is_empty() || !policy.identities.is_empty();
    let (keys, identities) = if names_signers {
        (
            narrowed(own, &trust.keys, trust.required, |k| k.fingerprint.clone()),
            narrowed(
                policy.identities.clone(),
                &trust.identities,
                trust.required,
                Identity::clone,
            ),
        )
    } else {
        (trust.keys.clone(), trust.identities.clone())
    };
    if names_signers && trust.required && keys.is_empty() && identities.is_empty() {
        let mut named: Vec<String> = policy
            .signed_by
            .iter()
            .map(|k| k.display().to_string())
            .collect();
        named.extend(policy.identities.iter().map(ToString::to_string));
        return Err(LoadErrorReason::Signature(
            crate::loader::signature::SignatureError::Untrusted {
                policy: policy.path.clone(),
                named,
            },
        ));
    }
    let signers = crate::loader::signature::Signers {
        keys: &keys,
        identities: &identities,
        roots: &trust.roots,
    };
    let required = trust.required || names_signers;
    crate::loader::signature::check(path, bytes, sha256, &signers, required)
        .map_err(LoadErrorReason::Signature)
}

/// A policy's signers (keys or identities, told apart by `id`): all of
/// them, or, when the host requires signatures, only those the host also
/// trusts (a policy narrows the host's trust, it never widens it: an
/// accepted policy a publisher wrote cannot name its own key).
#[cfg(feature = "signatures")]
pub(super) fn narrowed<T, K: PartialEq>(
    own: Vec<T>,
    host: &[T],
    required: bool,
    id: impl Fn(&T) -> K,
) -> Vec<T> {
    if !required {
        return own;
    }
    own.into_iter()
        .filter(|mine| host.iter().any(|t| id(t) == id(mine)))
        .collect()
}

/// The policy's limits and describe deadline within the host's maximums.
pub(super) fn within_maximums(policy: &Policy, max: &Limits) -> Result<(), LoadErrorReason> {
    let describe_timeout = policy
        .describe
        .timeout_ms
        .map(|ms| ("describe.timeout_ms", ms));
    let over = policy
        .limits
        .above(max)
        .map(|(knob, value, max)| (format!("limits.{knob}"), value, max))
        .or_else(|| {
            describe_timeout
                .filter(|(_, ms)| *ms > max.timeout_ms)
                .map(|(knob, ms)| (knob.to_string(), ms, max.timeout_ms))
        });
    match over {
        Some((knob, value, max)) => Err(LoadErrorReason::Policy(PolicyError::Rejected {
            path: policy.path.clone(),
            message: format!(
                "{knob} = {value} exceeds the host's maximum of {max}; lower it, \
                 or raise the host's maximum limits"
            ),
        })),
        None => Ok(()),
    }
}
