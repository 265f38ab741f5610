//! One valid piece of signature evidence of each kind for a file: the seeds
//! of the `signature_evidence` fuzz target (written by the `fuzz_seeds`
//! example) and the starting points of its property test, which mutates
//! them.

use corral::{SigningKey, key_bundle, simple_signing_payload};
use sha2::{Digest as _, Sha256};

use crate::{Keyless, TestSigstore};

/// Valid evidence for `bytes`, and the PEM text of the public key of a new
/// key that signed it.
pub struct Seeds {
    /// The signing key's public half, PEM (the private half is dropped).
    pub public_pem: String,
    /// Each as (name, kind, text) with the kinds of
    /// `corral::__fuzz::check_evidence` (0 a `.sig`, 1 a Sigstore bundle, 2
    /// the OCI evidence a pull keeps): a `.sig` and a key-based bundle by
    /// the key, a keyless bundle for `Keyless::default()` vouched for by
    /// the Sigstore, and OCI evidence of a manifest listing `bytes` signed
    /// by the key.
    pub evidence: Vec<(&'static str, u8, String)>,
}

/// [`Seeds`] for `bytes`, the keyless one vouched for by `sigstore`.
///
/// # Panics
/// When a key cannot be made or used (a broken test setup).
pub fn evidence_seeds(sigstore: &TestSigstore, bytes: &[u8]) -> Seeds {
    let key = SigningKey::generate().expect("a key");
    let scratch = tempfile::tempdir().expect("scratch");
    let (_, public) = key
        .write(&scratch.path().join("seed"), b"x")
        .expect("key files");
    let public_pem = std::fs::read_to_string(public).expect("public key");
    let key = &key;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.wasm.config.v0+json",
            "digest": "sha256:00",
            "size": 2,
        },
        "layers": [{
            "mediaType": "application/wasm",
            "digest": format!("sha256:{}", hex::encode(Sha256::digest(bytes))),
            "size": bytes.len(),
        }],
    })
    .to_string();
    let digest = format!(
        "sha256:{}",
        hex::encode(Sha256::digest(manifest.as_bytes()))
    );
    let payload = simple_signing_payload("localhost:5000/fuzz", &digest);
    let oci = serde_json::json!({
        "manifest": manifest,
        "signature": key.sign(payload.as_bytes()).expect("sign"),
        "payload": payload,
    });
    let evidence = vec![
        ("blob", 0, key.sign(bytes).expect("sign")),
        ("key_bundle", 1, key_bundle(key, bytes).expect("bundle")),
        (
            "keyless_bundle",
            1,
            sigstore.bundle(bytes, &Keyless::default()).to_string(),
        ),
        ("oci", 2, oci.to_string()),
    ];
    Seeds {
        public_pem,
        evidence,
    }
}
