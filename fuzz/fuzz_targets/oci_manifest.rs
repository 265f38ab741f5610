//! Fuzzes the manifest check of `corral pull`: the bytes a registry serves
//! as an artifact's manifest, parsed as an OCI image manifest, then its
//! component and policy layers picked and their declared sizes checked
//! against their caps, before anything is fetched.
//!
//! Run: `scripts/fuzz.sh oci_manifest`. Invariants: no panic; a refusal
//! holds no control character (the registry's text reaches a terminal);
//! an accepted manifest names a component layer that is within the cap
//! and is listed in it.
//!
//! The body, with the invariants, is `fuzz/invariants/oci_manifest.rs`,
//! which the seed replay on stable (corral-dist's `manifest::tests`) runs
//! over every file in `fuzz/seeds/oci_manifest/`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../invariants/oci_manifest.rs"]
mod invariants;

fuzz_target!(|data: &[u8]| invariants::check(data));
