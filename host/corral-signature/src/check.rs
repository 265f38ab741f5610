//! The load-time check of a plugin file's signature evidence (see the
//! parent module for the files), and [`verify_file`], the same check for
//! one file on its own.

use std::path::Path;

use sha2::{Digest as _, Sha256};

use super::{
    OciEvidence, Rejection, SignatureError, Signed, Signers, Trust, blob_signature_path,
    bundle_path, list, manifest_lists, oci_evidence_path, payload_digest, verifying_key,
};

/// Who counts, for a message: the keys, then the identities.
fn who(signers: &Signers<'_>) -> String {
    if signers.keys.is_empty() && signers.identities.is_empty() {
        return "a trusted key or identity (none is configured)".into();
    }
    let mut names: Vec<String> = Vec::new();
    if !signers.keys.is_empty() {
        names.push(list(signers.keys));
    }
    names.extend(signers.identities.iter().map(ToString::to_string));
    names.join(" or ")
}

pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The kinds of evidence file, in the order they are tried.
#[derive(Clone, Copy)]
enum Evidence {
    Blob,
    Bundle,
    Oci,
}

/// What one evidence file says: who signed, or why it does not count.
fn evidence(
    kind: Evidence,
    text: &str,
    bytes: &[u8],
    sha256: &str,
    signers: &Signers<'_>,
) -> Result<Signed, String> {
    let none_of = || {
        format!(
            "verifies with none of {} (signed by another key, or the file changed after \
             signing)",
            list(signers.keys)
        )
    };
    match kind {
        Evidence::Blob => {
            return verifying_key(signers.keys, text, bytes)
                .map(|k| Signed::by_key(k, "blob"))
                .ok_or_else(none_of);
        }
        Evidence::Bundle => return super::bundle::check(text, bytes, sha256, signers),
        Evidence::Oci => {}
    }
    let evidence: OciEvidence = serde_json::from_str(text).map_err(|e| {
        format!(
            "it does not parse ({}); pull the plugin again",
            super::root::shown(&e.to_string())
        )
    })?;
    let manifest_digest = format!(
        "sha256:{}",
        hex::encode(Sha256::digest(evidence.manifest.as_bytes()))
    );
    if payload_digest(&evidence.payload).as_deref() != Some(manifest_digest.as_str())
        || !manifest_lists(&evidence.manifest, sha256)
    {
        return Err("it does not cover this file (the file changed after the pull)".into());
    }
    verifying_key(
        signers.keys,
        &evidence.signature,
        evidence.payload.as_bytes(),
    )
    .map(|k| Signed::by_key(k, "oci"))
    .ok_or_else(none_of)
}

/// The load-time check of the file `wasm` (bytes `bytes`, sha256 hex
/// `sha256`) against `signers`, `required` or not. Every evidence file
/// present is tried, `.sig`, then `.sigstore.json`, then `.cosign.json`:
/// answers who signed it, if one verifies; or why it must not load.
///
/// # Errors
/// When `required`: [`SignatureError::Unsigned`] when no evidence is
/// beside it, [`SignatureError::Rejected`] when none that is verifies
/// against `signers`. When not required, evidence that does not verify is
/// logged and the plugin counts as unsigned.
pub fn check(
    wasm: &Path,
    bytes: &[u8],
    sha256: &str,
    signers: &Signers<'_>,
    required: bool,
) -> Result<Option<Signed>, SignatureError> {
    let mut found = Vec::new();
    for (kind, path) in [
        (Evidence::Blob, blob_signature_path(wasm)),
        (Evidence::Bundle, bundle_path(wasm)),
        (Evidence::Oci, oci_evidence_path(wasm)),
    ] {
        // Absent: not evidence. Over its cap (1 MiB) or unreadable: evidence
        // that does not count, and says why.
        let text = match corral_files::read_text(&path, corral_files::Kind::SignatureEvidence) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(err) => {
                found.push(Rejection {
                    evidence: file_name(&path),
                    reason: err.reason(),
                });
                continue;
            }
        };
        match evidence(kind, &text, bytes, sha256, signers) {
            Ok(signed) => return Ok(Some(signed)),
            Err(reason) => found.push(Rejection {
                evidence: file_name(&path),
                reason,
            }),
        }
    }
    if found.is_empty() {
        if required {
            return Err(SignatureError::Unsigned {
                file: wasm.to_path_buf(),
                signers: who(signers),
            });
        }
        return Ok(None);
    }
    if required {
        return Err(SignatureError::Rejected {
            file: wasm.to_path_buf(),
            signers: who(signers),
            found,
        });
    }
    let found: Vec<String> = found.iter().map(ToString::to_string).collect();
    tracing::warn!(
        plugin = ?wasm,
        found = %found.join("; "),
        "it carries a signature no trusted signer verifies; loading it as unsigned"
    );
    Ok(None)
}

/// Checks the signature evidence beside the plugin file `wasm` against
/// `trust` alone (no policy), as a load with signatures required would:
/// answers who signed it.
///
/// # Errors
/// [`SignatureError::Unverified`] when it cannot be read, carries no
/// evidence, or none that a trusted key or identity verifies; the message
/// says what was found.
pub fn verify_file(wasm: &Path, trust: &Trust) -> Result<Signed, SignatureError> {
    let unverified = |message: String| SignatureError::Unverified {
        file: wasm.to_path_buf(),
        message,
    };
    let bytes = corral_files::read_bytes(
        wasm,
        corral_files::Kind::Plugin {
            max_bytes: corral_files::DEFAULT_MAX_PLUGIN_BYTES,
        },
    )
    .map_err(|e| unverified(e.reason()))?
    .ok_or_else(|| unverified("cannot read it: it does not exist".into()))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let signers = Signers {
        keys: &trust.keys,
        identities: &trust.identities,
        roots: &trust.roots,
    };
    check(wasm, &bytes, &sha256, &signers, true)
        .map_err(|e| unverified(e.to_string()))?
        .ok_or_else(|| unverified("it is not signed".into()))
}

/// One evidence file's check (not API; the `signature_evidence` fuzz
/// target and its property test): `text` read as the evidence of kind
/// `kind % 3` (0 a `.sig`, 1 a Sigstore bundle, 2 the OCI evidence a pull
/// keeps) for the file `bytes`, against `trust`. Answers who signed, as
/// the host shows it.
///
/// # Errors
/// Why it does not count, as the host would say it.
#[doc(hidden)]
pub fn check_evidence(kind: u8, text: &str, bytes: &[u8], trust: &Trust) -> Result<String, String> {
    let kind = [Evidence::Blob, Evidence::Bundle, Evidence::Oci][usize::from(kind % 3)];
    let signers = Signers {
        keys: &trust.keys,
        identities: &trust.identities,
        roots: &trust.roots,
    };
    let sha256 = hex::encode(Sha256::digest(bytes));
    evidence(kind, text, bytes, &sha256, &signers).map(|signed| signed.to_string())
}

#[cfg(test)]
mod tests {
    use super::super::{PublicKey, SigningKey, key_bundle, simple_signing_payload};
    use super::*;

    fn by(keys: &[PublicKey]) -> Signers<'_> {
        Signers {
            keys,
            identities: &[],
            roots: &[],
        }
    }

    /// Found by fuzzing (`signature_evidence`): OCI evidence with an unknown
    /// field whose name holds a newline made a refusal of two lines, the
    /// second one the evidence's own text.
    #[test]
    fn a_refusal_of_evidence_stays_on_one_line() {
        let text = "{\"manifest\\nplugin verified: ok\": \"\"}";
        let why = evidence(Evidence::Oci, text, b"x", "00", &by(&[])).unwrap_err();
        assert!(
            why.contains("unknown field `manifest\\nplugin verified: ok`"),
            "{why}"
        );
        assert!(!why.chars().any(char::is_control), "{why:?}");
    }

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
            check(&wasm, bytes, &sha, &by(std::slice::from_ref(&alice)), false),
            Ok(None)
        );
        let err = check(&wasm, bytes, &sha, &by(std::slice::from_ref(&alice)), true).unwrap_err();
        assert!(
            matches!(&err, SignatureError::Unsigned { file, .. } if *file == wasm),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(
            err.contains("not signed")
                && err.contains("alice.pub")
                && err.contains("tool.wasm.sig"),
            "{err}"
        );

        std::fs::write(
            blob_signature_path(&wasm),
            reopened.sign(bytes).expect("sign"),
        )
        .expect("sig");
        let signed = check(&wasm, bytes, &sha, &by(&[bob.clone(), alice.clone()]), true)
            .expect("verifies")
            .expect("signed");
        assert_eq!((signed.signer.as_str(), signed.kind), ("alice.pub", "blob"));
        let err = check(&wasm, bytes, &sha, &by(std::slice::from_ref(&bob)), true).unwrap_err();
        assert!(
            matches!(&err, SignatureError::Rejected { found, .. }
                if found.len() == 1 && found[0].evidence == "tool.wasm.sig"),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(
            err.contains("bob.pub") && err.contains("verifies with none of"),
            "{err}"
        );
        let other = b"\0asm other bytes";
        let err = check(&wasm, other, "x", &by(std::slice::from_ref(&alice)), true)
            .unwrap_err()
            .to_string();
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
        let signed = check(&wasm, bytes, &sha, &by(std::slice::from_ref(&alice)), true)
            .expect("ok")
            .expect("signed");
        assert_eq!(signed.kind, "oci");
        // The same evidence does not cover other bytes.
        assert!(
            check(
                &wasm,
                other,
                &hex::encode(Sha256::digest(other)),
                &by(std::slice::from_ref(&alice)),
                true
            )
            .is_err()
        );

        // A key-based Sigstore bundle, beside the registry evidence that
        // bob's key does not verify: the bundle counts on its own.
        let bob_key = SigningKey::generate().expect("key");
        let bob = bob_key.public("bob.pub").expect("pub");
        std::fs::write(
            bundle_path(&wasm),
            key_bundle(&bob_key, bytes).expect("bundle"),
        )
        .expect("write");
        let signed = check(&wasm, bytes, &sha, &by(std::slice::from_ref(&bob)), true)
            .expect("ok")
            .expect("signed");
        assert_eq!((signed.signer.as_str(), signed.kind), ("bob.pub", "bundle"));
        let err = check(&wasm, other, "00", &by(std::slice::from_ref(&bob)), true)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tool.wasm.sigstore.json: its message digest is not the file's sha256")
                && err.contains("tool.wasm.cosign.json: it does not cover this file"),
            "{err}"
        );
    }
}
