//! Fuzzes the load-time check of a plugin's signature evidence: a `.sig`,
//! a Sigstore bundle (key-based or keyless: certificate chain, transparency
//! log entry, inclusion proof, checkpoint) and the OCI evidence a pull
//! keeps (manifest, simple-signing payload, signature). All of it arrives
//! beside a plugin file or from a registry, so all of it is untrusted.
//!
//! The input's first byte picks the kind (0 `.sig`, 1 bundle, 2 OCI), the
//! rest is the evidence text. The trust (a key, a test Sigstore's trusted
//! root, an identity) and the signed file are fixtures in
//! `fuzz/fixtures/signature_evidence/`, written with the seeds by
//! `cargo run -p corral-test-support --example fuzz_seeds`.
//!
//! Run: `scripts/fuzz.sh signature_evidence`. Invariants: no panic; a
//! refusal holds no control character (it reaches a terminal); evidence
//! that verifies the file never verifies a file one byte different.
//!
//! The body, with the invariants, is
//! `fuzz/invariants/signature_evidence.rs`, which the seed replay on stable
//! (`tests/all/fuzz_seeds.rs`) runs over every file in
//! `fuzz/seeds/signature_evidence/`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../invariants/signature_evidence.rs"]
mod invariants;

fuzz_target!(|data: &[u8]| {
    invariants::check(data);
});
