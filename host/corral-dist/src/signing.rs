//! Registry signatures in cosign's layout: for a manifest `sha256:HEX`, the
//! tag `sha256-HEX.sig` of the same repository holds a manifest whose
//! layers are simple-signing payloads
//! ([`corral::SIGNATURE_MEDIA_TYPE`]) naming the manifest digest, each with
//! its signature in the [`corral::SIGNATURE_ANNOTATION`] annotation. `push`
//! with a key writes one; `pull` reads them and checks them against the
//! trusted keys before anything is written.

use std::collections::BTreeMap;

use oci_client::Client;
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;

use crate::DistError;
use crate::reference::OciReference;

/// The largest signature payload read, in bytes: 64 KiB.
const MAX_PAYLOAD_BYTES: u64 = 64 * 1024;

/// Most signature layers looked at: 16.
const MAX_SIGNATURES: usize = 16;

/// cosign's tag for the signatures of `digest`.
fn tag(digest: &str) -> String {
    format!("{}.sig", digest.replace(':', "-"))
}

/// The repository part of a reference, as a simple-signing payload names it.
fn repository(reference: &OciReference) -> String {
    format!(
        "{}/{}",
        reference.inner.registry(),
        reference.inner.repository()
    )
}

/// Signs the manifest `digest` of `reference` with `key` and pushes the
/// signature; answers its tag.
pub(crate) async fn push(
    client: &Client,
    auth: &RegistryAuth,
    reference: &OciReference,
    digest: &str,
    key: &corral::SigningKey,
) -> Result<String, DistError> {
    let payload = corral::simple_signing_payload(&repository(reference), digest);
    let signature = key
        .sign(payload.as_bytes())
        .map_err(|e| DistError::Registry {
            reference: reference.to_string(),
            message: format!("cannot sign: {e}"),
        })?;
    let annotations = BTreeMap::from([(corral::SIGNATURE_ANNOTATION.to_string(), signature)]);
    let layers = vec![ImageLayer::new(
        payload.into_bytes(),
        corral::SIGNATURE_MEDIA_TYPE.into(),
        Some(annotations),
    )];
    let config = Config::new(
        b"{}".to_vec(),
        oci_client::manifest::IMAGE_CONFIG_MEDIA_TYPE.into(),
        None,
    );
    let manifest = OciImageManifest::build(&layers, &config, None);
    let tag = tag(digest);
    let at = oci_client::Reference::with_tag(
        reference.inner.registry().to_string(),
        reference.inner.repository().to_string(),
        tag.clone(),
    );
    client
        .push(&at, &layers, config, auth, Some(manifest))
        .await
        .map_err(|e| crate::client::registry_error(reference, &e))?;
    Ok(tag)
}

/// The signatures the registry holds for the manifest `digest` of
/// `reference`: (payload, signature) pairs; none when there is no
/// signature tag.
pub(crate) async fn fetch(
    client: &Client,
    auth: &RegistryAuth,
    reference: &OciReference,
    digest: &str,
) -> Result<Vec<(String, String)>, DistError> {
    let at = oci_client::Reference::with_tag(
        reference.inner.registry().to_string(),
        reference.inner.repository().to_string(),
        tag(digest),
    );
    let manifest = match client.pull_image_manifest(&at, auth).await {
        Ok((manifest, _)) => manifest,
        Err(err) => {
            let err = crate::client::registry_error(reference, &err);
            if err.to_string().contains("no such tag") {
                return Ok(Vec::new());
            }
            return Err(err);
        }
    };
    let mut found = Vec::new();
    for layer in manifest
        .layers
        .iter()
        .filter(|l| l.media_type == corral::SIGNATURE_MEDIA_TYPE)
        .take(MAX_SIGNATURES)
    {
        let Some(signature) = layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(corral::SIGNATURE_ANNOTATION))
        else {
            continue;
        };
        if u64::try_from(layer.size).unwrap_or(u64::MAX) > MAX_PAYLOAD_BYTES {
            continue;
        }
        let payload = crate::transfer::fetch(
            client,
            reference,
            &at,
            layer,
            MAX_PAYLOAD_BYTES,
            "signature",
        )
        .await?;
        if let Ok(payload) = String::from_utf8(payload) {
            found.push((payload, signature.clone()));
        }
    }
    Ok(found)
}

/// The first of `signatures` that names `digest` of `reference`'s
/// repository and that one of `keys` verifies, with its key.
pub(crate) fn verified<'s, 'k>(
    signatures: &'s [(String, String)],
    reference: &OciReference,
    digest: &str,
    keys: &'k [corral::PublicKey],
) -> Option<(&'s (String, String), &'k corral::PublicKey)> {
    let identity = repository(reference);
    signatures.iter().find_map(|pair| {
        let (payload, signature) = pair;
        // As cosign checks: this digest, this repository, a signature type.
        let value: serde_json::Value = serde_json::from_str(payload).ok()?;
        let critical = &value["critical"];
        if critical["image"]["docker-manifest-digest"] != digest
            || critical["identity"]["docker-reference"] != identity.as_str()
            || critical["type"] != "cosign container image signature"
        {
            return None;
        }
        corral::verifying_key(keys, signature, payload.as_bytes()).map(|key| (pair, key))
    })
}
