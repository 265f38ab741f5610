//! The `oci_manifest` fuzz target's body: the manifest check of `corral
//! pull` on the bytes a registry serves as an artifact's manifest. Included
//! with `#[path]` by the fuzz target (`fuzz/fuzz_targets/oci_manifest.rs`)
//! and by corral-dist's seed replay on stable (`manifest::tests`), so both
//! check the same thing.
//!
//! Invariants: no panic; a refusal holds no control character (the
//! registry's text reaches a terminal); an accepted manifest names a
//! component layer that is within the cap and is listed in it.

use corral_dist::__fuzz::manifest_check;

/// The component cap of the check, in bytes.
const CAP: u64 = 1 << 20;

/// One input; panics when an invariant breaks.
pub fn check(data: &[u8]) {
    match manifest_check(data, CAP) {
        Err(why) => assert!(!why.chars().any(char::is_control), "{why:?}"),
        Ok((digest, _)) => {
            let value: serde_json::Value =
                serde_json::from_slice(data).expect("an accepted manifest is JSON");
            let layers = value["layers"].as_array().expect("it has layers");
            assert!(
                layers.iter().any(|l| l["digest"] == digest.as_str()
                    && l["size"].as_u64().is_some_and(|size| size <= CAP)),
                "{digest} is not a layer within the cap"
            );
        }
    }
}
