//! Fuzzes the manifest check of `corral pull`: the bytes a registry serves
//! as an artifact's manifest, parsed as an OCI image manifest, then its
//! component and policy layers picked and their declared sizes checked
//! against their caps, before anything is fetched.
//!
//! Run: `scripts/fuzz.sh oci_manifest`. Invariants: no panic; a refusal
//! holds no control character (the registry's text reaches a terminal);
//! an accepted manifest names a component layer that is within the cap
//! and is listed in it.

#![no_main]

use corral_dist::__fuzz::manifest_check;
use libfuzzer_sys::fuzz_target;

/// The component cap of the check, in bytes.
const CAP: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
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
});
