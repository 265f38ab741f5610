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

#![no_main]

use std::sync::OnceLock;

use corral::__fuzz::check_evidence;
use corral::{PublicKey, Trust, TrustedRoot};
use libfuzzer_sys::fuzz_target;

const SIGNED: &[u8] = include_bytes!("../fixtures/signature_evidence/signed.bin");

fn trust() -> &'static Trust {
    static TRUST: OnceLock<Trust> = OnceLock::new();
    TRUST.get_or_init(|| Trust {
        keys: vec![
            PublicKey::from_pem(
                include_str!("../fixtures/signature_evidence/fuzz.pub"),
                "fuzz.pub",
            )
            .expect("the fixture key"),
        ],
        roots: vec![
            TrustedRoot::from_json(
                include_str!("../fixtures/signature_evidence/trusted_root.json"),
                "trusted_root.json",
            )
            .expect("the fixture root"),
        ],
        identities: vec![
            "subject=alice@example.com,issuer=https://accounts.example.com"
                .parse()
                .expect("an identity"),
        ],
        required: true,
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    match check_evidence(kind, text, SIGNED, trust()) {
        Err(why) => assert!(!why.chars().any(char::is_control), "{why:?}"),
        Ok(signed) => {
            let mut other = SIGNED.to_vec();
            other[0] ^= 1;
            assert!(
                check_evidence(kind, text, &other, trust()).is_err(),
                "{signed}, and also of another file"
            );
        }
    }
});
