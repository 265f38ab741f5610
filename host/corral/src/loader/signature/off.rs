//! Plugin signatures in a library built without the `signatures` feature:
//! the data a policy and a loaded plugin carry ([`Identity`], [`Signed`]),
//! the error ([`SignatureError`]), and the one rule, in [`check`]: nothing can be verified, so a plugin
//! that must be signed does not load, and the message says which feature
//! to turn on.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A signer identity of keyless signatures, as a policy's `[integrity]
/// identities` names it: the certificate's subject and the OIDC issuer.
/// Parsed and kept, so a policy reads the same with or without the feature;
/// never verified here.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// The subject: `alice@example.com`, or a URI.
    pub subject: String,
    /// The OIDC issuer: `https://accounts.example.com`.
    pub issuer: String,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (issuer {})", self.subject, self.issuer)
    }
}

/// Who signed a plugin, as verified: without the `signatures` feature
/// nothing is verified, so no value of this type exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Signed {}

impl std::fmt::Display for Signed {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {}
    }
}

/// The host's signature requirement: without the feature a host cannot
/// require signatures (`HostBuilder::trust` needs it), so it is empty.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Trust {}

/// Why a plugin's signature cannot be checked: without the feature, any
/// plugin that must be signed is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The plugin's policy names signers, and this build cannot check any.
    #[error(
        "must be signed (its policy's `[integrity]` names signers), but this corral was \
         built without the `signatures` feature, so no signature can be checked; build \
         corral with the `signatures` feature (on by default), or remove `signed_by` and \
         `identities` from the policy of {}",
        .file.display()
    )]
    FeatureOff {
        /// The plugin file.
        file: PathBuf,
    },
}

/// Nothing to compare on reload: no evidence is read.
pub fn stamp(_wasm: &Path, _keys: &[PathBuf]) -> Option<String> {
    None
}

/// The load-time check of `wasm`: `Ok(None)` when nothing asks for a
/// signature.
///
/// # Errors
/// [`SignatureError::FeatureOff`] when `required` (the policy names
/// signers): its message names the feature that checks them.
pub fn check(wasm: &Path, required: bool) -> Result<Option<Signed>, SignatureError> {
    if required {
        return Err(SignatureError::FeatureOff {
            file: wasm.to_path_buf(),
        });
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_that_must_be_signed_is_refused_naming_the_feature() {
        let wasm = Path::new("plugins/signed.wasm");
        let err = check(wasm, true).expect_err("nothing can verify it");
        assert_eq!(
            err,
            SignatureError::FeatureOff {
                file: wasm.to_path_buf()
            }
        );
        let err = err.to_string();
        assert!(err.contains("`signatures` feature"), "{err}");
        assert!(err.contains("plugins/signed.wasm"), "{err}");
        assert_eq!(check(wasm, false), Ok(None));
        assert_eq!(stamp(wasm, &[]), None);
        let who = Identity {
            subject: "alice@example.com".into(),
            issuer: "https://accounts.example.com".into(),
        };
        assert_eq!(
            who.to_string(),
            "alice@example.com (issuer https://accounts.example.com)"
        );
    }
}
