//! The manifest of a pulled artifact, as the registry served it: parsed as
//! an OCI image manifest, then its layers picked ([`crate::layout`]): one
//! component layer within the size cap, at most one policy layer within
//! [`layout::MAX_POLICY_BYTES`]. Everything in it is the registry's text:
//! media types are escaped in messages.

use oci_client::manifest::{OciDescriptor, OciImageManifest};

use crate::reference::OciReference;
use crate::{DistError, layout};

/// The layers a pull fetches.
#[derive(Debug)]
pub(crate) struct Layers<'m> {
    /// The component layer.
    pub component: &'m OciDescriptor,
    /// The policy layer, if the publisher sent one.
    pub policy: Option<&'m OciDescriptor>,
}

/// `raw` (the manifest's bytes) as an OCI image manifest: JSON, so UTF-8
/// throughout (RFC 8259), checked first, since serde skips the fields it
/// ignores without checking them.
///
/// # Errors
/// [`DistError::NotAComponent`] when it is not one.
pub(crate) fn parse(reference: &OciReference, raw: &[u8]) -> Result<OciImageManifest, DistError> {
    if let Err(e) = std::str::from_utf8(raw) {
        return Err(DistError::NotAComponent {
            reference: reference.to_string(),
            message: format!(
                "its manifest is not UTF-8 JSON (byte {} is not UTF-8)",
                e.valid_up_to()
            ),
        });
    }
    serde_json::from_slice(raw).map_err(|e| DistError::NotAComponent {
        reference: reference.to_string(),
        message: format!(
            "its manifest is not an OCI image manifest ({})",
            corral::untrusted_text::escape_line(&e.to_string())
        ),
    })
}

/// The layers of `manifest` a pull fetches; the component's declared size
/// must be at most `max_bytes`.
///
/// # Errors
/// [`DistError::NotAComponent`] when it has no component layer, or more
/// than one component or policy layer; [`DistError::TooLarge`] when a
/// layer declares more than its cap.
pub(crate) fn layers<'m>(
    reference: &OciReference,
    manifest: &'m OciImageManifest,
    max_bytes: u64,
) -> Result<Layers<'m>, DistError> {
    let component =
        one_layer(reference, &manifest.layers, layout::is_component)?.ok_or_else(|| {
            DistError::NotAComponent {
                reference: reference.to_string(),
                message: format!(
                    "its manifest has no `{}` layer (layers: {}); is it a container image?",
                    layout::WASM_MEDIA_TYPE,
                    media_types(&manifest.layers)
                ),
            }
        })?;
    let policy = one_layer(reference, &manifest.layers, |t| {
        t == layout::POLICY_MEDIA_TYPE
    })?;
    let declared = u64::try_from(component.size).unwrap_or(u64::MAX);
    if declared > max_bytes {
        return Err(DistError::too_large(
            reference,
            "component",
            declared,
            max_bytes,
        ));
    }
    if let Some(policy) = policy {
        let size = u64::try_from(policy.size).unwrap_or(u64::MAX);
        if size > layout::MAX_POLICY_BYTES {
            return Err(DistError::too_large(
                reference,
                "policy",
                size,
                layout::MAX_POLICY_BYTES,
            ));
        }
    }
    Ok(Layers { component, policy })
}

/// The media types of `layers`, escaped, for a message.
fn media_types(layers: &[OciDescriptor]) -> String {
    let types: Vec<String> = layers
        .iter()
        .map(|l| corral::untrusted_text::escape_line(&l.media_type).into_owned())
        .collect();
    if types.is_empty() {
        "none".into()
    } else {
        types.join(", ")
    }
}

/// The one layer of `layers` that `pick` selects, if any.
fn one_layer<'m>(
    reference: &OciReference,
    layers: &'m [OciDescriptor],
    pick: impl Fn(&str) -> bool,
) -> Result<Option<&'m OciDescriptor>, DistError> {
    let mut found = layers.iter().filter(|l| pick(&l.media_type));
    let first = found.next();
    if first.is_some() && found.next().is_some() {
        return Err(DistError::NotAComponent {
            reference: reference.to_string(),
            message: format!(
                "its manifest has more than one `{}` layer; corral pulls one component with \
                 at most one policy",
                corral::untrusted_text::escape_line(
                    &first.map(|l| l.media_type.clone()).unwrap_or_default()
                )
            ),
        });
    }
    Ok(first)
}

/// The manifest check of a pull (not API; the `oci_manifest` fuzz target):
/// `raw` parsed and its layers picked as [`crate::pull`] does, for
/// `oci://registry.example/fuzz:1` with a component cap of `max_bytes`. Answers
/// the component layer's digest and whether a policy layer came.
///
/// # Errors
/// The pull's error message.
#[doc(hidden)]
pub fn check(raw: &[u8], max_bytes: u64) -> Result<(String, bool), String> {
    let reference =
        OciReference::parse("oci://registry.example/fuzz:1").map_err(|e| e.to_string())?;
    let manifest = parse(&reference, raw).map_err(|e| e.to_string())?;
    let layers = layers(&reference, &manifest, max_bytes).map_err(|e| e.to_string())?;
    Ok((layers.component.digest.clone(), layers.policy.is_some()))
}

/// The `oci_manifest` fuzz target's body, with its invariants: the seed
/// replay below runs it over every seed.
#[cfg(test)]
#[path = "../../../fuzz/invariants/oci_manifest.rs"]
mod fuzz_target;

#[cfg(test)]
mod tests {
    use super::*;

    /// The `oci_manifest` fuzz target's named seeds (the crash reproducers
    /// among them), by file name.
    fn seeds() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/oci_manifest")
    }

    /// Every seed of the fuzz target keeps its invariants on stable, as CI
    /// runs it (the campaign's generated corpus is an archive that only
    /// `scripts/fuzz.sh` unpacks).
    #[test]
    fn every_seed_keeps_the_fuzz_targets_invariants() {
        let mut replayed = 0;
        for entry in std::fs::read_dir(seeds()).expect("fuzz/seeds/oci_manifest") {
            let path = entry.expect("an entry").path();
            let data = std::fs::read(&path).expect("a seed");
            let kept = std::panic::catch_unwind(|| super::fuzz_target::check(&data));
            assert!(kept.is_ok(), "seed {} breaks an invariant", path.display());
            replayed += 1;
        }
        assert!(replayed >= 4, "only {replayed} seeds");
    }

    /// The fuzz target's seeds reach the manifest check and come out as
    /// each was written to (the reference was once written without
    /// `oci://`, so every input was refused before its manifest was read,
    /// and fuzzing reached nothing past it).
    #[test]
    fn the_check_reads_the_manifest() {
        let seed = |name: &str| std::fs::read(seeds().join(name)).expect(name);
        let (digest, policy) = check(&seed("component_and_policy.json"), 1 << 20).expect("valid");
        assert_eq!(
            digest,
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
        assert!(policy);
        let too_large = check(&seed("legacy_too_large.json"), 1 << 20).unwrap_err();
        assert!(too_large.contains("9999999999"), "{too_large}");
        assert!(check(&seed("two_components.json"), 1 << 20).is_err());
        let not_json = check(b"{", 1 << 20).unwrap_err();
        assert!(!not_json.contains("oci://REGISTRY"), "{not_json}");
    }

    /// Found by fuzzing: a manifest whose ignored annotation held bytes
    /// that are not UTF-8 was accepted (serde skips an ignored string
    /// unchecked), though it is not JSON.
    #[test]
    fn a_manifest_that_is_not_utf8_is_refused() {
        let raw = std::fs::read(seeds().join("not_utf8_in_an_ignored_field.json")).expect("seed");
        assert!(serde_json::from_slice::<serde_json::Value>(&raw).is_err());
        let why = check(&raw, 1 << 20).unwrap_err();
        assert!(why.contains("not UTF-8 JSON (byte 357 "), "{why}");
    }
}
