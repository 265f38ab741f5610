//! `push`: publishes a component, with the policy it requests, as a Wasm OCI
//! artifact ([`crate::layout`]).

use std::path::Path;

use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use sha2::{Digest as _, Sha256};

use crate::reference::OciReference;
use crate::{DistError, layout};

/// What a push published.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Pushed {
    /// The reference pushed to.
    pub reference: String,
    /// The manifest's digest: pull `…@DIGEST` to get exactly this.
    pub manifest: String,
    /// The component layer's digest.
    pub component: String,
    /// The policy layer's digest, when a policy went with it.
    pub policy: Option<String>,
    /// The tag of the cosign signature pushed beside it (`sha256-….sig`),
    /// when it was signed.
    pub signature: Option<String>,
}

/// A component's preamble: `\0asm`, then the component layer's version.
const COMPONENT_PREAMBLE: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// Pushes the component `wasm` (and `policy`, a policy file, when given) to
/// `reference`, and, with `key`, a cosign signature of its manifest (which
/// covers the component and the policy).
///
/// # Errors
/// [`DistError::Reference`]; [`DistError::File`] when a file cannot be read
/// or `wasm` is not a component; [`DistError::Policy`] when the policy is not
/// valid; [`DistError::Registry`] when the registry refuses.
pub async fn push(
    wasm: &Path,
    policy: Option<&Path>,
    reference: &str,
    key: Option<&corral::SigningKey>,
) -> Result<Pushed, DistError> {
    let reference = OciReference::parse(reference)?;
    let file_error = |path: &Path, message: String| DistError::File {
        path: path.to_path_buf(),
        message,
    };
    let bytes = std::fs::read(wasm).map_err(|e| file_error(wasm, e.to_string()))?;
    if !bytes.starts_with(&COMPONENT_PREAMBLE) {
        return Err(file_error(
            wasm,
            "is not a WebAssembly component; build it for wasm32-wasip2 first".into(),
        ));
    }
    let component = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
    let mut layers = vec![ImageLayer::new(bytes, layout::WASM_MEDIA_TYPE.into(), None)];
    let mut policy_digest = None;
    if let Some(path) = policy {
        let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e.to_string()))?;
        corral::Policy::parse(&text, path).map_err(|e| DistError::Policy {
            reference: path.display().to_string(),
            message: e.to_string(),
        })?;
        policy_digest = Some(format!(
            "sha256:{}",
            hex::encode(Sha256::digest(text.as_bytes()))
        ));
        layers.push(ImageLayer::new(
            text.into_bytes(),
            layout::POLICY_MEDIA_TYPE.into(),
            None,
        ));
    }
    let config = Config::new(
        serde_json::to_vec(&layout::config(&component)).unwrap_or_default(),
        layout::CONFIG_MEDIA_TYPE.into(),
        None,
    );
    let manifest = OciImageManifest::build(&layers, &config, None);
    let pushed_layers: Vec<String> = manifest.layers.iter().map(|l| l.digest.clone()).collect();
    let pushed_config = manifest.config.digest.clone();
    let (client, auth) = crate::client::for_reference(&reference);
    client
        .push(&reference.inner, &layers, config, &auth, Some(manifest))
        .await
        .map_err(|e| crate::client::registry_error(&reference, &e))?;
    // What the tag now names, read back as bytes (their digest checked by
    // the client): it must be what was pushed, since that digest is what a
    // signature vouches for and what `pull …@DIGEST` fetches.
    let (raw, manifest) = client
        .pull_manifest_raw(
            &reference.inner,
            &auth,
            &[oci_client::manifest::OCI_IMAGE_MEDIA_TYPE],
        )
        .await
        .map_err(|e| crate::client::registry_error(&reference, &e))?;
    let stored: OciImageManifest =
        serde_json::from_slice(&raw).map_err(|e| DistError::Registry {
            reference: reference.to_string(),
            message: format!("the manifest it now serves is not an OCI image manifest ({e})"),
        })?;
    let stored_layers: Vec<String> = stored.layers.iter().map(|l| l.digest.clone()).collect();
    if stored_layers != pushed_layers || stored.config.digest != pushed_config {
        return Err(DistError::Registry {
            reference: reference.to_string(),
            message: "the tag names another manifest than the one just pushed (a concurrent \
                      push, or a registry that changed it); nothing was signed"
                .into(),
        });
    }
    let signature = match key {
        Some(key) => Some(crate::signing::push(&client, &auth, &reference, &manifest, key).await?),
        None => None,
    };
    Ok(Pushed {
        reference: reference.text.clone(),
        manifest,
        component,
        policy: policy_digest,
        signature,
    })
}
