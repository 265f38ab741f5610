//! Signature checks of a pull: the registry's cosign signatures of the
//! manifest against the trusted keys, before anything is written; and the
//! evidence kept beside the component for every later load.

use std::path::Path;

use oci_client::Client;
use oci_client::secrets::RegistryAuth;

use crate::DistError;
use crate::reference::OciReference;

/// The trusted key that verified a signature, and the (payload, signature).
pub(crate) type Verified = (corral::PublicKey, (String, String));

/// Checks the registry's signatures of `digest` against `trust`.
///
/// # Errors
/// [`DistError::Signature`] when a signature is required and none verifies.
pub(crate) async fn registry(
    client: &Client,
    auth: &RegistryAuth,
    reference: &OciReference,
    digest: &str,
    trust: &corral::Trust,
) -> Result<Option<Verified>, DistError> {
    if trust.keys.is_empty() && !trust.required {
        return Ok(None);
    }
    let signatures = crate::signing::fetch(client, auth, reference, digest).await?;
    if let Some((pair, key)) = crate::signing::verified(&signatures, reference, digest, &trust.keys)
    {
        return Ok(Some((key.clone(), pair.clone())));
    }
    if !trust.required {
        if !signatures.is_empty() {
            tracing::warn!(%reference, "signed, but by no trusted key; pulling it as unsigned");
        }
        return Ok(None);
    }
    if trust.keys.is_empty() {
        return Err(DistError::Signature {
            reference: reference.to_string(),
            message: format!(
                "signatures are required, and a pull checks the registry's key signatures \
                 (cosign's sha256-….sig tag) but no trusted key is configured; keyless \
                 signatures in a registry are not read (the registry holds {} for {digest}). \
                 Trust the publisher's key, or fetch the component with its Sigstore bundle \
                 beside it; nothing was written",
                match signatures.len() {
                    0 => "no key signature".to_string(),
                    1 => "one key signature".to_string(),
                    n => format!("{n} key signatures"),
                },
            ),
        });
    }
    let expected: Vec<String> = trust.keys.iter().map(ToString::to_string).collect();
    Err(DistError::Signature {
        reference: reference.to_string(),
        message: format!(
            "it must be signed by {}, but the registry holds {} for {digest}{}; nothing was \
             written",
            expected.join(" or "),
            match signatures.len() {
                0 => "no signature".to_string(),
                1 => "one signature".to_string(),
                n => format!("{n} signatures"),
            },
            if signatures.is_empty() {
                ""
            } else {
                " that none of them verifies"
            }
        ),
    })
}

/// Replaces the signature evidence beside the component `wasm`: the
/// registry signature that verified (with the manifest `raw` it covers), or
/// none.
///
/// # Errors
/// [`DistError::File`] when it cannot be written.
pub(crate) fn keep(wasm: &Path, raw: &[u8], verified: Option<&Verified>) -> Result<(), DistError> {
    // Evidence for other bytes would make the new file fail its check.
    let _ = std::fs::remove_file(corral::blob_signature_path(wasm));
    let _ = std::fs::remove_file(corral::bundle_path(wasm));
    let path = corral::oci_evidence_path(wasm);
    let Some((_, (payload, signature))) = verified else {
        let _ = std::fs::remove_file(&path);
        return Ok(());
    };
    let evidence = corral::OciEvidence::new(
        String::from_utf8_lossy(raw).into_owned(),
        payload.clone(),
        signature.clone(),
    );
    let text = serde_json::to_string_pretty(&evidence).unwrap_or_default();
    crate::transfer::write_atomically(&path, text.as_bytes())
}
