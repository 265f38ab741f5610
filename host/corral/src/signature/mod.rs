//! Plugin signatures, cosign-compatible, checked natively (the `sigstore`
//! crate's key crypto) at every load and reload, and by the distribution
//! client on pull.
//!
//! A plugin file `NAME.wasm` may carry one of two kinds of evidence beside
//! it:
//! - **`NAME.wasm.sig`**: a signature over the file's bytes, base64, as
//!   `cosign sign-blob --key` writes it (`corral sign` writes the same), so
//!   `cosign verify-blob --key KEY.pub --signature NAME.wasm.sig NAME.wasm`
//!   checks it too;
//! - **`NAME.wasm.cosign.json`**: what a pull found in the registry, kept to
//!   be checked again at every load: cosign's signature (the `sha256-….sig`
//!   tag beside the artifact: a simple-signing payload naming the manifest
//!   digest, and its signature) plus the manifest itself. The signature
//!   covers the manifest, whose digests cover the component and the policy
//!   layer.
//!
//! What is required ([`Trust`]): the host's trusted keys, and whether every
//! plugin must be signed; a policy's `[integrity] signed_by` names the keys
//! that must have signed its plugin, whatever the host says. A plugin that
//! must be signed and is not, or whose signature no acceptable key verifies,
//! does not load; the message names the file, the keys expected and what was
//! found.

mod keys;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

pub use keys::{PublicKey, SigningKey};

/// The media type of a cosign signature layer (the simple-signing payload).
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The annotation of a cosign signature layer that holds the signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// Why a key or a signature cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// A key cannot be read, opened or used.
    #[error("{key}: {message}")]
    Key {
        /// The key (file or label).
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// Who signed a plugin, as verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Signed {
    /// The key's label (its file name).
    pub signer: String,
    /// The key's fingerprint (`sha256:` and hex).
    pub fingerprint: String,
    /// `blob` (`NAME.wasm.sig`) or `oci` (a registry signature kept at pull).
    pub kind: &'static str,
}

impl std::fmt::Display for Signed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "signed by {} ({}, {} signature)",
            self.signer,
            keys::short(&self.fingerprint),
            self.kind
        )
    }
}

/// The host's signature requirement.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Keys whose signatures the host accepts.
    pub keys: Vec<PublicKey>,
    /// Whether every plugin must be signed by one of them.
    pub required: bool,
}

/// What a pull keeps beside the component: see the module docs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciEvidence {
    /// The artifact's manifest, as the registry served it.
    pub manifest: String,
    /// The simple-signing payload that was signed.
    pub payload: String,
    /// Its signature, base64.
    pub signature: String,
}

/// `NAME.wasm.sig`, beside `wasm`.
pub fn blob_signature_path(wasm: &Path) -> PathBuf {
    sidecar(wasm, "sig")
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
pub(crate) fn stamp(wasm: &Path, keys: &[PathBuf]) -> Option<String> {
    let mut digest = Sha256::new();
    let mut any = false;
    // Both evidence files (present or not) and the policy's key files.
    let files = [blob_signature_path(wasm), oci_evidence_path(wasm)];
    for path in files.iter().chain(keys) {
        digest.update(path.as_os_str().as_encoded_bytes());
        match std::fs::read(path) {
            Ok(bytes) => {
                any = true;
                digest.update([1]);
                digest.update(Sha256::digest(&bytes));
            }
            Err(_) => digest.update([0]),
        }
    }
    any.then(|| hex::encode(digest.finalize()))
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

fn list(keys: &[PublicKey]) -> String {
    if keys.is_empty() {
        return "a trusted key (none is configured)".into();
    }
    let names: Vec<String> = keys.iter().map(ToString::to_string).collect();
    names.join(" or ")
}

/// The load-time check of the file `wasm` (bytes `bytes`, sha256 hex
/// `sha256`) against `keys`, `required` or not. Answers who signed it, if a
/// key verifies its evidence; or why it must not load.
pub(crate) fn check(
    wasm: &Path,
    bytes: &[u8],
    sha256: &str,
    keys: &[PublicKey],
    required: bool,
) -> Result<Option<Signed>, String> {
    let blob = blob_signature_path(wasm);
    let oci = oci_evidence_path(wasm);
    let file_name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let (found, signer) = if let Ok(signature) = std::fs::read_to_string(&blob) {
        let signer = verifying_key(keys, &signature, bytes);
        (
            format!("a signature of its bytes ({}) that", file_name(&blob)),
            signer.map(|k| (k, "blob")),
        )
    } else if let Ok(text) = std::fs::read_to_string(&oci) {
        let evidence: Option<OciEvidence> = serde_json::from_str(&text).ok();
        let signer = evidence.as_ref().and_then(|e| {
            let manifest_digest = format!(
                "sha256:{}",
                hex::encode(Sha256::digest(e.manifest.as_bytes()))
            );
            let chained = payload_digest(&e.payload).as_deref() == Some(manifest_digest.as_str())
                && manifest_lists(&e.manifest, sha256);
            chained
                .then(|| verifying_key(keys, &e.signature, e.payload.as_bytes()))
                .flatten()
        });
        (
            format!(
                "the registry signature kept at pull ({}) that",
                file_name(&oci)
            ),
            signer.map(|k| (k, "oci")),
        )
    } else {
        if required {
            return Err(format!(
                "it is not signed, and it must be signed by {}: put a signature of its bytes \
                 beside it ({}, as cosign sign-blob writes one), or pull it from a registry \
                 where it is signed",
                list(keys),
                file_name(&blob)
            ));
        }
        return Ok(None);
    };
    match signer {
        Some((key, kind)) => Ok(Some(Signed {
            signer: key.label.clone(),
            fingerprint: key.fingerprint.clone(),
            kind,
        })),
        None if required => Err(format!(
            "it must be signed by {}, but it carries {} none of them verifies (signed by \
             another key, or the file changed after signing)",
            list(keys),
            found
        )),
        None => {
            tracing::warn!(
                plugin = %wasm.display(),
                "it carries a signature no trusted key verifies; loading it as unsigned"
            );
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_and_registry_signatures_verify_only_with_their_key() {
        let dir = tempfile::tempdir().expect("dir");
        let key = SigningKey::generate().expect("key");
        let (_, public) = key.write(&dir.path().join("alice"), b"").expect("write");
        let alice = PublicKey::read(&public).expect("pub");
        let bob = SigningKey::generate()
            .expect("key")
            .public("bob.pub")
            .expect("pub");
        assert_eq!(alice.label, "alice.pub");
        let reopened = SigningKey::read(&dir.path().join("alice.key"), b"").expect("open");

        let wasm = dir.path().join("tool.wasm");
        let bytes = b"\0asm component bytes";
        std::fs::write(&wasm, bytes).expect("write");
        let sha = hex::encode(Sha256::digest(bytes));
        assert_eq!(
            check(&wasm, bytes, &sha, std::slice::from_ref(&alice), false),
            Ok(None)
        );
        let err = check(&wasm, bytes, &sha, std::slice::from_ref(&alice), true).unwrap_err();
        assert!(
            err.contains("not signed") && err.contains("alice.pub"),
            "{err}"
        );

        std::fs::write(
            blob_signature_path(&wasm),
            reopened.sign(bytes).expect("sign"),
        )
        .expect("sig");
        let signed = check(&wasm, bytes, &sha, &[bob.clone(), alice.clone()], true)
            .expect("verifies")
            .expect("signed");
        assert_eq!((signed.signer.as_str(), signed.kind), ("alice.pub", "blob"));
        let err = check(&wasm, bytes, &sha, std::slice::from_ref(&bob), true).unwrap_err();
        assert!(
            err.contains("bob.pub") && err.contains("none of them verifies"),
            "{err}"
        );
        let other = b"\0asm other bytes";
        let err = check(&wasm, other, "x", std::slice::from_ref(&alice), true).unwrap_err();
        assert!(err.contains("file changed"), "{err}");

        // A registry signature: payload -> manifest -> component layer.
        std::fs::remove_file(blob_signature_path(&wasm)).expect("rm");
        let manifest =
            format!(r#"{{"layers":[{{"mediaType":"application/wasm","digest":"sha256:{sha}"}}]}}"#);
        let digest = format!(
            "sha256:{}",
            hex::encode(Sha256::digest(manifest.as_bytes()))
        );
        let payload = simple_signing_payload("registry.example/tools/tool", &digest);
        assert_eq!(payload_digest(&payload).as_deref(), Some(digest.as_str()));
        let evidence = OciEvidence {
            manifest: manifest.clone(),
            signature: reopened.sign(payload.as_bytes()).expect("sign"),
            payload,
        };
        std::fs::write(
            oci_evidence_path(&wasm),
            serde_json::to_string(&evidence).expect("json"),
        )
        .expect("write");
        let signed = check(&wasm, bytes, &sha, std::slice::from_ref(&alice), true)
            .expect("ok")
            .expect("signed");
        assert_eq!(signed.kind, "oci");
        // The same evidence does not cover other bytes.
        assert!(
            check(
                &wasm,
                other,
                &hex::encode(Sha256::digest(other)),
                &[alice],
                true
            )
            .is_err()
        );
    }
}
