//! The `signature_evidence` fuzz target's body: the load-time check of a
//! plugin's signature evidence, the input's first byte picking the kind (0
//! `.sig`, 1 bundle, 2 OCI) and the rest being the evidence text. The trust
//! (a key, a test Sigstore's trusted root, an identity) and the signed file
//! are the fixtures in `fuzz/fixtures/signature_evidence/`, written with
//! the seeds by `cargo run -p corral-test-support --example fuzz_seeds`.
//! Included with `#[path]` by the fuzz target
//! (`fuzz/fuzz_targets/signature_evidence.rs`) and by the seed replay on
//! stable (`tests/all/fuzz_seeds.rs`), so both check the same thing.
//!
//! Invariants: no panic; a refusal holds no control character (it reaches a
//! terminal); evidence that verifies the file never verifies a file one
//! byte different.

use std::sync::OnceLock;

use corral::__fuzz::check_evidence;
use corral::{PublicKey, Trust, TrustedRoot};

/// The file the fixtures' evidence signs.
const SIGNED: &[u8] = include_bytes!("../fixtures/signature_evidence/signed.bin");

/// The fixtures' trust, read once.
fn trust() -> &'static Trust {
    static TRUST: OnceLock<Trust> = OnceLock::new();
    TRUST.get_or_init(|| {
        Trust::new(
            vec![
                PublicKey::from_pem(
                    include_str!("../fixtures/signature_evidence/fuzz.pub"),
                    "fuzz.pub",
                )
                .expect("the fixture key"),
            ],
            vec![
                TrustedRoot::from_json(
                    include_str!("../fixtures/signature_evidence/trusted_root.json"),
                    "trusted_root.json",
                )
                .expect("the fixture root"),
            ],
            vec![
                "subject=alice@example.com,issuer=https://accounts.example.com"
                    .parse()
                    .expect("an identity"),
            ],
            true,
        )
    })
}

/// One input; panics when an invariant breaks. Answers whether the
/// evidence verified the file (the seed replay expects the valid seeds to).
pub fn check(data: &[u8]) -> bool {
    let Some((&kind, text)) = data.split_first() else {
        return false;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return false;
    };
    match check_evidence(kind, text, SIGNED, trust()) {
        Err(why) => {
            assert!(!why.chars().any(char::is_control), "{why:?}");
            false
        }
        Ok(signed) => {
            let mut other = SIGNED.to_vec();
            other[0] ^= 1;
            assert!(
                check_evidence(kind, text, &other, trust()).is_err(),
                "{signed}, and also of another file"
            );
            true
        }
    }
}
