//! The `signature_evidence` fuzz target's invariants as a property test:
//! valid evidence of each kind (`corral_test_support::evidence_seeds`),
//! mutated (text inserted from the formats' vocabulary, spans cut or
//! overwritten), is checked against the trust that made it
//! ([`crate::loader::signature::check_evidence`]): no panic; a refusal holds no
//! control character; evidence that verifies the file never verifies a file
//! one byte different.

use std::sync::OnceLock;

use proptest::prelude::*;

use super::CASES;
use crate::Trust;
use crate::loader::signature::check_evidence;

const SIGNED: &[u8] = b"corral property test: the signed file\n";

/// Valid evidence: (name, kind, text).
type Evidence = Vec<(&'static str, u8, String)>;

/// The trust and the valid evidence, made once.
fn setup() -> &'static (Trust, Evidence) {
    static SETUP: OnceLock<(Trust, Evidence)> = OnceLock::new();
    SETUP.get_or_init(|| {
        let sigstore = corral_test_support::TestSigstore::new();
        let seeds = corral_test_support::evidence_seeds(&sigstore, SIGNED);
        let trust = Trust::new(
            vec![crate::PublicKey::from_pem(&seeds.public_pem, "test.pub").expect("the key")],
            vec![
                crate::TrustedRoot::from_json(&sigstore.trusted_root(), "root")
                    .expect("the test root"),
            ],
            vec![
                "subject=alice@example.com,issuer=https://accounts.example.com"
                    .parse()
                    .expect("an identity"),
            ],
            true,
        );
        (trust, seeds.evidence)
    })
}

/// The invariants for one piece of evidence.
fn check(kind: u8, text: &str) -> Result<(), String> {
    let (trust, _) = setup();
    match check_evidence(kind, text, SIGNED, trust) {
        Err(why) if why.chars().any(char::is_control) => {
            Err(format!("a refusal with a control character: {why:?}"))
        }
        Err(_) => Ok(()),
        Ok(signed) => {
            let mut other = SIGNED.to_vec();
            other[0] ^= 1;
            match check_evidence(kind, text, &other, trust) {
                Ok(_) => Err(format!("{signed}, and also of another file")),
                Err(_) => Ok(()),
            }
        }
    }
}

#[test]
fn every_seed_verifies_the_file_and_no_other() {
    let (trust, seeds) = setup();
    for (name, kind, text) in seeds {
        let signed = check_evidence(*kind, text, SIGNED, trust)
            .unwrap_or_else(|why| panic!("{name} does not verify: {why}"));
        assert!(signed.starts_with("signed by"), "{name}: {signed}");
        check(*kind, text).unwrap_or_else(|broken| panic!("{name}: {broken}"));
    }
}

/// Text that the formats are made of, to insert.
fn vocabulary() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"".to_string()),
        Just("{}".to_string()),
        Just("[]".to_string()),
        Just("null".to_string()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("99999999999999999999".to_string()),
        Just("\"sha256:".to_string()),
        Just("\\u001b[2J".to_string()),
        Just("\u{1b}".to_string()),
        Just("==".to_string()),
        Just("\"mediaType\":\"x\",".to_string()),
        Just("\"tlogEntries\":[],".to_string()),
        Just("\"hashes\":[\"AA==\"],".to_string()),
        "[A-Za-z0-9+/=]{1,8}",
        ".{1,4}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn mutated_evidence_is_refused_cleanly_or_verifies_only_its_file(
        seed in 0usize..4,
        edits in proptest::collection::vec((any::<usize>(), 0u8..3, vocabulary()), 1..4),
        kind_flip in prop_oneof![8 => Just(0u8), 1 => 1u8..3],
    ) {
        let (_, seeds) = setup();
        let (_, kind, text) = &seeds[seed % seeds.len()];
        let mut bytes = text.clone().into_bytes();
        for (at, edit, insert) in edits {
            let at = at % (bytes.len() + 1);
            match edit {
                0 => {
                    bytes.splice(at..at, insert.bytes());
                }
                1 => {
                    let end = (at + insert.len()).min(bytes.len());
                    bytes.drain(at..end);
                }
                _ => {
                    let end = (at + insert.len()).min(bytes.len());
                    bytes.splice(at..end, insert.bytes());
                }
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Err(broken) = check(kind + kind_flip, &text) {
            prop_assert!(false, "{}", broken);
        }
    }
}
