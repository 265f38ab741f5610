//! [`DistError`]: every failure of a pull, a push or an acceptance, naming
//! the reference or file and what to do.

use std::path::PathBuf;

/// What can go wrong pulling, pushing or accepting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DistError {
    /// The reference is not `oci://REGISTRY/REPOSITORY[:TAG|@sha256:…]`.
    #[error("`{reference}` is not an OCI reference: {message}")]
    Reference {
        /// The reference given (escaped).
        reference: String,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// The registry refused, failed or could not be reached.
    #[error("{reference}: {message}")]
    Registry {
        /// The reference.
        reference: String,
        /// What the registry or the connection said.
        message: String,
    },
    /// The artifact is not a Wasm component artifact.
    #[error("{reference}: {message}")]
    NotAComponent {
        /// The reference.
        reference: String,
        /// What the manifest holds instead.
        message: String,
    },
    /// A layer is larger than the cap, refused before anything is written.
    #[error(
        "{reference}: the {what} layer is {bytes} bytes, over the cap of {limit_bytes} bytes; \
         nothing was written (raise the plugin size cap if it is meant to be this large)"
    )]
    TooLarge {
        /// The reference.
        reference: String,
        /// `component` or `policy`.
        what: &'static str,
        /// The layer's size (as declared, or as far as it was read).
        bytes: u64,
        /// The cap.
        limit_bytes: u64,
    },
    /// A signature is required and none verifies.
    #[error("{reference}: {message}")]
    Signature {
        /// The reference.
        reference: String,
        /// The keys expected and what was found.
        message: String,
    },
    /// A pull would replace a plugin that came from elsewhere.
    #[error("{name}: {message}")]
    Exists {
        /// The plugin.
        name: String,
        /// What is there, and what to do.
        message: String,
    },
    /// A pull that must match the lock file does not.
    #[error("{name}: {message}")]
    Locked {
        /// The plugin.
        name: String,
        /// What differs, and what to do.
        message: String,
    },
    /// The pulled policy request is not a valid policy.
    #[error("{reference}: the policy it requests is not valid: {message}")]
    Policy {
        /// The reference, or the request file.
        reference: String,
        /// The policy error.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl DistError {
    /// A layer of `reference` over its cap.
    pub(crate) fn too_large(
        reference: &impl std::fmt::Display,
        what: &'static str,
        bytes: u64,
        limit_bytes: u64,
    ) -> Self {
        Self::TooLarge {
            reference: reference.to_string(),
            what,
            bytes,
            limit_bytes,
        }
    }
}
