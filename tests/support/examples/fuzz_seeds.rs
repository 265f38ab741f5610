//! Writes the fixtures (`fuzz/fixtures/signature_evidence/`) and named
//! seeds (`fuzz/seeds/signature_evidence/`) of the `signature_evidence`
//! fuzz target: a test Sigstore's trusted root, a key's public half, a
//! signed file, and one valid piece of evidence of each kind for it
//! (`corral_test_support::evidence_seeds`). The private key is thrown
//! away. Run from the repository root:
//!
//! ```text
//! cargo run -p corral-test-support --example fuzz_seeds
//! ```

use std::path::Path;

use corral_test_support::{TestSigstore, evidence_seeds};

/// The bytes the fuzz target's evidence signs.
const SIGNED: &[u8] = b"corral fuzz: the signed file\n";

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

fn main() {
    let fixtures = Path::new("fuzz/fixtures/signature_evidence");
    let seeds_dir = Path::new("fuzz/seeds/signature_evidence");
    let sigstore = TestSigstore::new();
    write(
        &fixtures.join("trusted_root.json"),
        sigstore.trusted_root().as_bytes(),
    );
    write(&fixtures.join("signed.bin"), SIGNED);
    let seeds = evidence_seeds(&sigstore, SIGNED);
    write(&fixtures.join("fuzz.pub"), seeds.public_pem.as_bytes());
    // The first byte of a seed is its kind.
    for (name, kind, text) in seeds.evidence {
        write(
            &seeds_dir.join(name),
            &[&[kind][..], text.as_bytes()].concat(),
        );
    }
}
