//! Sigstore bundles (`NAME.wasm.sigstore.json`, as `cosign sign-blob
//! --bundle` writes them with cosign 3, or cosign 2.4 and later with
//! `--new-bundle-format`; cosign's older bundle format is refused with that
//! advice): the protobuf-specs `Bundle` in its JSON form,
//! media types `application/vnd.dev.sigstore.bundle+json;version=0.1|0.2`
//! and `application/vnd.dev.sigstore.bundle.v0.3+json`, holding a message
//! signature of the file's bytes and what verifies it:
//! - a public key (`verificationMaterial.publicKey`): checked against the
//!   trusted keys, as a `.sig` is;
//! - or a certificate (`certificate`, or `x509CertificateChain` in older
//!   bundles): a keyless signature. Its transparency log entry is checked
//!   against a trusted root's logs ([`super::rekor`]), which gives the
//!   signing time; the certificate must chain to one of the root's
//!   authorities at that time and name an accepted identity; its key must
//!   verify the signature.
//!
//! DSSE envelopes (attestations) are refused: they sign a statement, not
//! the file.

use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::identity::{Identity, holder};
use super::rekor::{self, RawEntry};
use super::root::{RawBytes, RawChain, TrustedRoot, b64, shown};
use super::{PublicKey, SignatureError, Signed, SigningKey};

/// The media type `corral sign --bundle` writes.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBundle {
    media_type: String,
    verification_material: RawMaterial,
    message_signature: Option<RawMessageSignature>,
    dsse_envelope: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMaterial {
    certificate: Option<RawBytes>,
    x509_certificate_chain: Option<RawChain>,
    public_key: Option<serde_json::Value>,
    #[serde(default)]
    tlog_entries: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMessageSignature {
    message_digest: Option<RawDigest>,
    signature: String,
}

#[derive(Deserialize)]
struct RawDigest {
    algorithm: String,
    digest: String,
}

/// Who may sign, for one plugin: keys, and identities under trusted roots.
pub struct Signers<'a> {
    /// Keys whose signatures count.
    pub keys: &'a [PublicKey],
    /// Identities whose keyless signatures count.
    pub identities: &'a [Identity],
    /// The roots keyless signatures are checked against.
    pub roots: &'a [TrustedRoot],
}

/// Checks the bundle `text` over `bytes` (sha256 hex `sha256`): who signed,
/// or why it does not count.
pub(super) fn check(
    text: &str,
    bytes: &[u8],
    sha256: &str,
    signers: &Signers<'_>,
) -> Result<Signed, String> {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text)
        && (value.get("base64Signature").is_some() || value.get("rekorBundle").is_some())
    {
        return Err(
            "it is cosign's older bundle format; sign again with `cosign sign-blob \
             --new-bundle-format --bundle` (cosign 2.4 and later; cosign 3 writes the new \
             format by default)"
                .into(),
        );
    }
    let bundle: RawBundle = serde_json::from_str(text)
        .map_err(|e| format!("it is not a Sigstore bundle ({})", shown(&e.to_string())))?;
    // v0.1 and v0.2 name their version as a parameter, v0.3 in the type.
    let version = match bundle.media_type.as_str() {
        "application/vnd.dev.sigstore.bundle+json;version=0.1" => 1,
        "application/vnd.dev.sigstore.bundle+json;version=0.2" => 2,
        "application/vnd.dev.sigstore.bundle.v0.3+json" => 3,
        other => {
            return Err(format!(
                "its media type `{}` is not that of a Sigstore bundle v0.1 to v0.3",
                shown(other)
            ));
        }
    };
    if bundle.dsse_envelope.is_some() {
        return Err(
            "it holds a DSSE envelope (an attestation), not a signature of the file's bytes; \
             sign the file itself (cosign sign-blob --bundle)"
                .into(),
        );
    }
    let message = bundle
        .message_signature
        .ok_or("it holds no message signature")?;
    let signature = b64(&message.signature).map_err(|e| format!("its signature is {e}"))?;
    if let Some(digest) = &message.message_digest {
        let named = b64(&digest.digest).unwrap_or_default();
        if digest.algorithm != "SHA2_256" || hex::encode(named) != sha256 {
            return Err(
                "its message digest is not the file's sha256 (the file changed after signing)"
                    .into(),
            );
        }
    }
    let material = bundle.verification_material;
    let (leaf, extra) = match (material.certificate, material.x509_certificate_chain) {
        (Some(cert), _) => (b64(&cert.raw_bytes)?, Vec::new()),
        (None, Some(chain)) => {
            let mut certs = chain
                .certificates
                .iter()
                .map(|c| b64(&c.raw_bytes))
                .collect::<Result<Vec<_>, _>>()?;
            if certs.is_empty() {
                return Err("its certificate chain is empty".into());
            }
            let leaf = certs.remove(0);
            (leaf, certs)
        }
        (None, None) if material.public_key.is_some() => {
            return signers
                .keys
                .iter()
                .find(|k| k.verifies(&message.signature, bytes))
                .map(|key| Signed::by_key(key, "bundle"))
                .ok_or_else(|| {
                    format!(
                        "its signature verifies with none of {} (signed by another key, or \
                         the file changed after signing)",
                        super::list(signers.keys)
                    )
                });
        }
        (None, None) => return Err("it names no key and no certificate".into()),
    };
    let entries = Entries {
        entries: &material.tlog_entries,
        proof_required: version >= 2,
    };
    keyless(&leaf, &extra, &signature, &entries, bytes, sha256, signers)
}

/// A bundle's log entries, and whether they must carry inclusion proofs.
struct Entries<'a> {
    entries: &'a [RawEntry],
    proof_required: bool,
}

fn keyless(
    leaf: &[u8],
    extra: &[Vec<u8>],
    signature: &[u8],
    logged: &Entries<'_>,
    bytes: &[u8],
    sha256: &str,
    signers: &Signers<'_>,
) -> Result<Signed, String> {
    if signers.roots.is_empty() || signers.identities.is_empty() {
        return Err(format!(
            "it is a keyless signature, and {} (a keyless signature counts only with a \
             trusted root and a trusted identity)",
            if signers.roots.is_empty() {
                "no trusted root is configured"
            } else {
                "no signer identity is trusted"
            }
        ));
    }
    let holder = holder(leaf)?;
    if !holder.verifies(signature, bytes) {
        return Err(
            "its signature does not verify with its certificate's key (it signs other bytes, \
             or another key made it)"
                .into(),
        );
    }
    if logged.entries.is_empty() {
        return Err("it has no transparency log entry, which keyless signatures need".into());
    }
    let mut why = Vec::new();
    let mut found = None;
    for entry in logged.entries {
        match rekor::check(
            entry,
            signers.roots,
            sha256,
            signature,
            leaf,
            logged.proof_required,
        ) {
            Ok(l) => {
                found = Some(l);
                break;
            }
            Err(e) => why.push(e),
        }
    }
    let logged = found.ok_or_else(|| why.join("; "))?;
    let mut chained = Vec::new();
    let chains = signers.roots.iter().any(|root| {
        root.chains(leaf, extra, logged.integrated_time)
            .map_err(|e| chained.push(e))
            .is_ok()
    });
    if !chains {
        return Err(chained.join("; "));
    }
    let identity = signers
        .identities
        .iter()
        .find(|id| {
            holder.subjects.contains(&id.subject) && holder.issuer.as_deref() == Some(&id.issuer)
        })
        .ok_or_else(|| {
            let wanted: Vec<String> = signers.identities.iter().map(ToString::to_string).collect();
            let subjects: Vec<String> = holder.subjects.iter().map(|s| shown(s)).collect();
            format!(
                "it was signed by {} (issuer {}), not by {}",
                if subjects.is_empty() {
                    "no named subject".to_string()
                } else {
                    subjects.join(", ")
                },
                holder
                    .issuer
                    .as_deref()
                    .map_or_else(|| "not named".into(), shown),
                wanted.join(" or ")
            )
        })?;
    Ok(Signed {
        signer: identity.subject.clone(),
        fingerprint: format!("sha256:{}", hex::encode(Sha256::digest(leaf))),
        kind: "keyless",
        issuer: Some(identity.issuer.clone()),
        log_index: Some(logged.log_index),
    })
}

/// A bundle of `bytes` signed with `key` (a key-based bundle: the public key
/// named by its fingerprint, no log entry), as `cosign sign-blob --key
/// --bundle --tlog-upload=false` writes one.
///
/// # Errors
/// [`SignatureError::Key`] if signing fails.
pub fn key_bundle(key: &SigningKey, bytes: &[u8]) -> Result<String, SignatureError> {
    let signature = key.sign(bytes)?;
    let public = key.public("signing key")?;
    let bundle = serde_json::json!({
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {
            "publicKey": { "hint": public.fingerprint },
            "tlogEntries": [],
        },
        "messageSignature": {
            "messageDigest": {
                "algorithm": "SHA2_256",
                "digest": base64::engine::general_purpose::STANDARD.encode(Sha256::digest(bytes)),
            },
            "signature": signature,
        },
    });
    Ok(serde_json::to_string_pretty(&bundle).expect("a JSON value serializes"))
}
