//! Plugin signatures, cosign- and Sigstore-compatible, checked natively (the
//! `sigstore` crate's key crypto, `rustls-webpki` for certificate chains)
//! at every load and reload, and by the distribution client on pull.
//!
//! A plugin file `NAME.wasm` may carry evidence beside it:
//! - **`NAME.wasm.sig`**: a signature over the file's bytes, base64, as
//!   `cosign sign-blob --key` writes it (`corral sign` writes the same), so
//!   `cosign verify-blob --key KEY.pub --signature NAME.wasm.sig NAME.wasm`
//!   checks it too;
//! - **`NAME.wasm.sigstore.json`**: a Sigstore bundle, as `cosign sign-blob
//!   --bundle` writes it (`corral sign --bundle` writes a key-based one):
//!   key-based, or keyless (a short-lived certificate naming the signer's
//!   identity, and a transparency log entry), checked offline against
//!   trusted roots ([`TrustedRoot`]); see `bundle.rs`;
//! - **`NAME.wasm.cosign.json`**: what a pull found in the registry, kept to
//!   be checked again at every load: cosign's signature (the `sha256-….sig`
//!   tag beside the artifact: a simple-signing payload naming the manifest
//!   digest, and its signature) plus the manifest itself. The signature
//!   covers the manifest, whose digests cover the component and the policy
//!   layer.
//!
//! What is required ([`Trust`]): the host's trusted keys, trusted roots and
//! identities, and whether every plugin must be signed; a policy's
//! `[integrity] signed_by` and `identities` name who must have signed its
//! plugin (narrowing the host's trust when it requires signatures). A
//! plugin that must be signed and is not, or whose evidence no acceptable
//! signer verifies, does not load; the message names the file, the signers
//! expected and what was found.
//!
//! This is an internal crate of corral, behind the `corral` library's
//! `signatures` feature (on by default), which re-exports its API: an
//! embedder who does not verify signatures builds corral without it, and
//! without this crate's OpenSSL (sigstore's `native-tls`) and X.509
//! dependencies. It depends only on `corral-names` for the untrusted-text
//! rules.

mod bundle;
mod check;
mod identity;
mod keys;
mod rekor;
mod root;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use bundle::Signers;
pub use bundle::{BUNDLE_MEDIA_TYPE, key_bundle};
pub use check::check;
pub use check::{check_evidence, verify_file};
pub use identity::Identity;
pub use keys::{PublicKey, SigningKey};
pub use root::TrustedRoot;

/// The media type of a cosign signature layer (the simple-signing payload).
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The annotation of a cosign signature layer that holds the signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// Why a key or a signature cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// A key, trusted root or identity cannot be read, opened or used.
    #[error("{key}: {message}")]
    Key {
        /// The key, root or identity (file or label).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A file's signature evidence does not satisfy the trust asked for
    /// ([`verify_file`]'s answer: the message names the file).
    #[error("{file}: {message}")]
    Unverified {
        /// The plugin file.
        file: PathBuf,
        /// What was expected and what was found.
        message: String,
    },
    /// A plugin that must be signed carries no signature evidence at all
    /// (the load-time [`check`]; the message leaves the file to its
    /// caller, which names it).
    #[error(
        "it is not signed, and it must be signed by {signers}: put a signature of its bytes \
         beside it ({}, as cosign sign-blob writes one, or a Sigstore bundle, {}), or pull it \
         from a registry where it is signed",
        check::file_name(&blob_signature_path(.file)),
        check::file_name(&bundle_path(.file))
    )]
    Unsigned {
        /// The plugin file.
        file: PathBuf,
        /// Who may sign it, in words (keys' labels, identities).
        signers: String,
    },
    /// A plugin that must be signed carries evidence, and none of it
    /// counts (the load-time [`check`]).
    #[error(
        "it must be signed by {signers}, but what it carries does not count: {}",
        .found.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    Rejected {
        /// The plugin file.
        file: PathBuf,
        /// Who may sign it, in words.
        signers: String,
        /// Each evidence file found beside it, and why it does not count.
        found: Vec<Rejection>,
    },
    /// Where the host requires signatures, a policy names only signers the
    /// host does not trust (a policy narrows the host's trust; it cannot
    /// widen it).
    #[error(
        "its policy {} names signers the host does not trust ({}): where the host requires \
         signatures a policy can only narrow the host's trusted keys and identities; add \
         one of them to the host's trust, or name one the host trusts",
        .policy.display(),
        .named.join(", ")
    )]
    Untrusted {
        /// The policy file.
        policy: PathBuf,
        /// The keys (files) and identities it names.
        named: Vec<String>,
    },
}

/// One evidence file beside a plugin that does not count, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{evidence}: {reason}")]
#[non_exhaustive]
pub struct Rejection {
    /// The evidence file's name (`NAME.wasm.sig`, `NAME.wasm.sigstore.json`,
    /// `NAME.wasm.cosign.json`).
    pub evidence: String,
    /// Why it does not count (evidence text is shown escaped).
    pub reason: String,
}

/// Who signed a plugin, as verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Signed {
    /// The key's label (its file name), or the keyless signer's identity
    /// (the certificate's subject: an email address or a URI).
    pub signer: String,
    /// The key's fingerprint, or the keyless certificate's (`sha256:` and
    /// hex of its DER).
    pub fingerprint: String,
    /// `blob` (`NAME.wasm.sig`), `bundle` (a key-based Sigstore bundle),
    /// `keyless` (a keyless Sigstore bundle) or `oci` (a registry signature
    /// kept at pull).
    pub kind: &'static str,
    /// The OIDC issuer that vouched for a keyless signer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The transparency log index of a keyless signature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_index: Option<i64>,
}

impl Signed {
    /// Signed by `key`, with evidence of `kind`.
    pub(crate) fn by_key(key: &PublicKey, kind: &'static str) -> Self {
        Self {
            signer: key.label.clone(),
            fingerprint: key.fingerprint.clone(),
            kind,
            issuer: None,
            log_index: None,
        }
    }
}

impl std::fmt::Display for Signed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.issuer, self.log_index) {
            (Some(issuer), Some(index)) => write!(
                f,
                "signed by {} (issuer {issuer}, keyless signature, log index {index})",
                self.signer
            ),
            _ => write!(
                f,
                "signed by {} ({}, {} signature)",
                self.signer,
                keys::short(&self.fingerprint),
                self.kind
            ),
        }
    }
}

/// The host's signature requirement.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Trust {
    /// Keys whose signatures the host accepts.
    pub keys: Vec<PublicKey>,
    /// Trusted roots (certificate authorities and transparency logs) that
    /// keyless signatures are checked against.
    pub roots: Vec<TrustedRoot>,
    /// Identities whose keyless signatures the host accepts, under `roots`.
    pub identities: Vec<Identity>,
    /// Whether every plugin must be signed by one of the keys or
    /// identities.
    pub required: bool,
}

impl Trust {
    /// Trust in `keys`, and in `identities` under `roots` (keyless);
    /// `required`: every plugin must be signed by one of them. The one
    /// constructor outside this crate (the struct is `#[non_exhaustive]`);
    /// [`Trust::default`] trusts no one and requires nothing.
    pub fn new(
        keys: Vec<PublicKey>,
        roots: Vec<TrustedRoot>,
        identities: Vec<Identity>,
        required: bool,
    ) -> Self {
        Self {
            keys,
            roots,
            identities,
            required,
        }
    }
}

/// What a pull keeps beside the component: see the module docs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct OciEvidence {
    /// The artifact's manifest, as the registry served it.
    pub manifest: String,
    /// The simple-signing payload that was signed.
    pub payload: String,
    /// Its signature, base64.
    pub signature: String,
}

impl OciEvidence {
    /// The evidence of a pull: the artifact's `manifest` as served, the
    /// signed simple-signing `payload`, and its base64 `signature`.
    pub fn new(manifest: String, payload: String, signature: String) -> Self {
        Self {
            manifest,
            payload,
            signature,
        }
    }
}

/// `NAME.wasm.sig`, beside `wasm`.
pub fn blob_signature_path(wasm: &Path) -> PathBuf {
    sidecar(wasm, "sig")
}

/// `NAME.wasm.sigstore.json`, beside `wasm`.
pub fn bundle_path(wasm: &Path) -> PathBuf {
    sidecar(wasm, "sigstore.json")
}

/// `NAME.wasm.cosign.json`, beside `wasm`.
pub fn oci_evidence_path(wasm: &Path) -> PathBuf {
    sidecar(wasm, "cosign.json")
}

fn sidecar(wasm: &Path, extension: &str) -> PathBuf {
    let name = wasm
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    wasm.with_file_name(format!("{name}.{extension}"))
}

/// A digest of the signature evidence beside `wasm` and of the key files
/// `keys` (a policy's `signed_by`), if any exists: what a reload compares
/// (the host's own keys do not change while it runs).
pub fn stamp(wasm: &Path, keys: &[PathBuf]) -> Option<String> {
    // The evidence files (present or not) and the policy's key files, under
    // the same cap as a check reads them: a file over it is refused there
    // whatever its bytes, and only its state counts here.
    let mut stamp = corral_files::Stamp::new();
    let evidence = [
        blob_signature_path(wasm),
        bundle_path(wasm),
        oci_evidence_path(wasm),
    ];
    for path in evidence.iter().chain(keys) {
        stamp.file(path, corral_files::Kind::SignatureEvidence);
    }
    stamp.finish()
}

/// cosign's simple-signing payload for the manifest `digest` of
/// `repository` (`registry/path`, no tag).
pub fn simple_signing_payload(repository: &str, digest: &str) -> String {
    serde_json::json!({
        "critical": {
            "identity": { "docker-reference": repository },
            "image": { "docker-manifest-digest": digest },
            "type": "cosign container image signature",
        },
        "optional": null,
    })
    .to_string()
}

/// The manifest digest a simple-signing payload names.
pub fn payload_digest(payload: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(payload).ok()?;
    Some(
        value["critical"]["image"]["docker-manifest-digest"]
            .as_str()?
            .to_string(),
    )
}

/// The first of `keys` that verifies `signature` over `payload`.
pub fn verifying_key<'k>(
    keys: &'k [PublicKey],
    signature: &str,
    payload: &[u8],
) -> Option<&'k PublicKey> {
    keys.iter().find(|k| k.verifies(signature, payload))
}

/// Whether `manifest` (an OCI manifest's JSON) lists a component layer with
/// the digest `sha256:<hex>`.
fn manifest_lists(manifest: &str, sha256: &str) -> bool {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(manifest) else {
        return false;
    };
    let digest = format!("sha256:{sha256}");
    value["layers"]
        .as_array()
        .is_some_and(|layers| layers.iter().any(|l| l["digest"] == digest.as_str()))
}

/// The keys `keys`, for a message.
pub(crate) fn list(keys: &[PublicKey]) -> String {
    if keys.is_empty() {
        return "a trusted key (none is configured)".into();
    }
    let names: Vec<String> = keys.iter().map(ToString::to_string).collect();
    names.join(" or ")
}
