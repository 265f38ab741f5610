//! Keyless Sigstore bundles beside a local `.wasm`
//! (`NAME.wasm.sigstore.json`), checked offline against a trusted root. The
//! test Sigstore ([`support::TestSigstore`]) stands in for Fulcio and Rekor;
//! every way a bundle can be wrong is tried against
//! [`corral::verify_file`], and the public roots are read. The host, a
//! policy's `[integrity] identities`, reloads, `corral sign --bundle` and
//! `corral verify` are in `bundles.rs`.

use std::path::Path;

use corral::{Trust, TrustedRoot};
use serde_json::Value;

use crate::support::{self, ALICE, DAY, Keyless, TestSigstore};

/// Writes `bytes` as `tool.wasm` in `dir` with `bundle` beside it, and
/// checks it against `trust`.
fn verify(
    dir: &Path,
    bytes: &[u8],
    bundle: &Value,
    trust: &Trust,
) -> Result<corral::Signed, String> {
    let wasm = dir.join("tool.wasm");
    std::fs::write(&wasm, bytes).expect("wasm");
    std::fs::write(corral::bundle_path(&wasm), bundle.to_string()).expect("bundle");
    corral::verify_file(&wasm, trust).map_err(|e| e.to_string())
}

#[track_caller]
fn refused(result: Result<corral::Signed, String>, because: &str) {
    match result {
        Ok(signed) => panic!("verified ({signed}), expected a refusal: {because}"),
        Err(err) => assert!(err.contains(because), "expected `{because}` in: {err}"),
    }
}

#[test]
fn a_keyless_bundle_verifies_only_with_its_root_log_time_identity_and_bytes() {
    let dir = tempfile::tempdir().expect("dir");
    let sigstore = TestSigstore::new();
    let bytes = b"\0asm keyless component bytes";
    let alice = Keyless::default();
    let good = sigstore.bundle(bytes, &alice);
    let trusted = sigstore.trust(&[ALICE]);

    let signed = verify(dir.path(), bytes, &good, &trusted).expect("verifies");
    assert_eq!(signed.kind, "keyless");
    assert_eq!(signed.signer, "alice@example.com");
    assert_eq!(
        signed.issuer.as_deref(),
        Some("https://accounts.example.com")
    );
    assert_eq!(signed.log_index, Some(5));
    assert!(
        signed
            .to_string()
            .contains("keyless signature, log index 5"),
        "{signed}"
    );
    // The signed entry timestamp alone is enough in a v0.1 bundle ...
    let promise_only = sigstore.bundle(
        bytes,
        &Keyless {
            proof: false,
            ..alice.clone()
        },
    );
    verify(dir.path(), bytes, &promise_only, &trusted).expect("verifies");
    // Every index and size of the log proves inclusion.
    for (index, size) in [(0, 1), (0, 2), (1, 2), (6, 7), (7, 8), (8, 9)] {
        let at = Keyless {
            log_index: index,
            tree_size: size,
            ..alice.clone()
        };
        verify(dir.path(), bytes, &sigstore.bundle(bytes, &at), &trusted)
            .unwrap_or_else(|e| panic!("index {index} of {size}: {e}"));
    }

    // A P-384 certificate whose key hashed with SHA-256 (some clients do).
    let (cert, key) = sigstore.certificate_for(&alice, &rcgen::PKCS_ECDSA_P384_SHA384);
    // (ring signs P-384 with SHA-384 only; OpenSSL signs the SHA-256 digest.)
    let ec = openssl::pkey::PKey::private_key_from_pkcs8(&key.serialize_der())
        .and_then(|k| k.ec_key())
        .expect("p384");
    let digest = openssl::sha::sha256(bytes);
    let signature = openssl::ecdsa::EcdsaSig::sign(&digest, &ec)
        .and_then(|s| s.to_der())
        .expect("sign");
    let p384 = sigstore.bundle_with(bytes, &cert, &signature, &alice);
    verify(dir.path(), bytes, &p384, &trusted).expect("a P-384 key with SHA-256 verifies");

    // Who: another identity, another issuer, or none trusted.
    let bob = "subject=bob@example.com,issuer=https://accounts.example.com";
    refused(
        verify(dir.path(), bytes, &good, &sigstore.trust(&[bob])),
        "it was signed by alice@example.com (issuer https://accounts.example.com), not by \
         bob@example.com (issuer https://accounts.example.com)",
    );
    let other_issuer = "subject=alice@example.com,issuer=https://evil.example.com";
    refused(
        verify(dir.path(), bytes, &good, &sigstore.trust(&[other_issuer])),
        "not by alice@example.com (issuer https://evil.example.com)",
    );
    refused(
        verify(dir.path(), bytes, &good, &sigstore.trust(&[])),
        "no signer identity is trusted",
    );
    let mut no_root = trusted.clone();
    no_root.roots.clear();
    refused(
        verify(dir.path(), bytes, &good, &no_root),
        "no trusted root is configured",
    );

    // Which root: another authority and log vouch for nothing here.
    let stranger = TestSigstore::new();
    refused(
        verify(dir.path(), bytes, &stranger.bundle(bytes, &alice), &trusted),
        "from a log no trusted root names",
    );
    // A certificate from another authority, logged by the trusted log.
    let (cert, key) = stranger.certificate(&alice);
    let signature = rcgen::SigningKey::sign(&key, bytes).expect("sign");
    let foreign = sigstore.bundle_with(bytes, &cert, &signature, &alice);
    refused(
        verify(dir.path(), bytes, &foreign, &trusted),
        "does not chain to root.json",
    );

    // What: other bytes.
    refused(
        verify(dir.path(), b"\0asm other bytes", &good, &trusted),
        "its message digest is not the file's sha256",
    );
    let mut no_digest = good.clone();
    no_digest["messageSignature"]
        .as_object_mut()
        .expect("object")
        .remove("messageDigest");
    refused(
        verify(dir.path(), b"\0asm other bytes", &no_digest, &trusted),
        "does not verify with its certificate's key",
    );

    // When: the log vouches for a time the certificate was not valid at.
    let late = Keyless {
        integrated_time: DAY + 3 * 86_400,
        ..alice.clone()
    };
    refused(
        verify(dir.path(), bytes, &sigstore.bundle(bytes, &late), &trusted),
        "does not chain to root.json at the signing time",
    );
    // ... and a time changed after logging no longer carries its signature.
    let mut moved = good.clone();
    moved["verificationMaterial"]["tlogEntries"][0]["integratedTime"] =
        (DAY + 60).to_string().into();
    refused(
        verify(dir.path(), bytes, &moved, &trusted),
        "signed entry timestamp is not the log's",
    );

    // The log entry: absent, unpromised, another proof, another record.
    let mut unlogged = good.clone();
    unlogged["verificationMaterial"]["tlogEntries"] = Value::Array(Vec::new());
    refused(
        verify(dir.path(), bytes, &unlogged, &trusted),
        "no transparency log entry",
    );
    // ... not from v0.2 on, where the proof is required.
    let mut unproven = good.clone();
    unproven["verificationMaterial"]["tlogEntries"][0]
        .as_object_mut()
        .expect("entry")
        .remove("inclusionProof");
    refused(
        verify(dir.path(), bytes, &unproven, &trusted),
        "no inclusion proof, which bundles from v0.2 on must carry",
    );
    // cosign's older bundle format gets the advice to sign again.
    let old = serde_json::json!({ "base64Signature": "AAAA", "cert": "", "rekorBundle": {} });
    refused(
        verify(dir.path(), bytes, &old, &trusted),
        "--new-bundle-format",
    );
    let mut unpromised = good.clone();
    unpromised["verificationMaterial"]["tlogEntries"][0]
        .as_object_mut()
        .expect("entry")
        .remove("inclusionPromise");
    refused(
        verify(dir.path(), bytes, &unpromised, &trusted),
        "no signed entry timestamp",
    );
    let mut bent = good.clone();
    bent["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["hashes"][0] =
        base64_of(&[7; 32]).into();
    refused(
        verify(dir.path(), bytes, &bent, &trusted),
        "inclusion proof does not lead",
    );
    let mut resized = good.clone();
    resized["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["checkpoint"]["envelope"] =
        Value::String(
            good["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["checkpoint"]["envelope"]
                .as_str()
                .expect("envelope")
                .replacen("\n9\n", "\n10\n", 1),
        );
    refused(
        verify(dir.path(), bytes, &resized, &trusted),
        "another tree size or root hash",
    );
    // Another certificate of the same identity, over a log entry of the first.
    let (second, second_key) = sigstore.certificate(&alice);
    let mut swapped = good.clone();
    swapped["verificationMaterial"]["certificate"]["rawBytes"] = base64_of(&second).into();
    swapped["messageSignature"]["signature"] =
        base64_of(&rcgen::SigningKey::sign(&second_key, bytes).expect("sign")).into();
    refused(
        verify(dir.path(), bytes, &swapped, &trusted),
        "records another signature",
    );

    // A certificate that may not sign code.
    let client_only = Keyless {
        code_signing: false,
        ..alice.clone()
    };
    refused(
        verify(
            dir.path(),
            bytes,
            &sigstore.bundle(bytes, &client_only),
            &trusted,
        ),
        "its certificate is not for code signing",
    );
    // Text from the bundle reaches a message escaped.
    let mut hostile = good.clone();
    hostile["verificationMaterial"]["tlogEntries"][0]["kindVersion"]["kind"] =
        "evil\u{1b}[2J".into();
    match verify(dir.path(), bytes, &hostile, &trusted) {
        Ok(signed) => panic!("verified: {signed}"),
        Err(err) => assert!(
            !err.contains('\u{1b}') && err.contains("hashedrekord 0.0.1"),
            "{err:?}"
        ),
    }
    // An attestation is not a signature of the file.
    let mut dsse = good.clone();
    dsse["dsseEnvelope"] =
        serde_json::json!({ "payload": "", "payloadType": "x", "signatures": [] });
    refused(verify(dir.path(), bytes, &dsse, &trusted), "DSSE envelope");
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn the_public_sigstore_trusted_roots_load() {
    // As sigstore-python ships them on PyPI (scripts/sigstore-roots.sh,
    // which scripts/test.sh runs): the roots operators copy next to a host.
    let dir = support::repository_root().join("target/sigstore-roots/4.5.1");
    for (file, authorities, logs) in [("production.json", 2, 2), ("staging.json", 1, 4)] {
        let path = dir.join(file);
        assert!(
            path.is_file(),
            "{} is missing: run scripts/sigstore-roots.sh",
            path.display()
        );
        let root = TrustedRoot::read(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(
            format!("{root:?}"),
            format!("TrustedRoot({file}, {authorities} authorities, {logs} logs)")
        );
        // A bundle the test Sigstore signed does not chain to it.
        let sigstore = TestSigstore::new();
        let bytes = b"\0asm";
        let trust = Trust::new(
            Vec::new(),
            vec![root],
            vec![ALICE.parse().expect("identity")],
            true,
        );
        let tmp = tempfile::tempdir().expect("dir");
        refused(
            verify(
                tmp.path(),
                bytes,
                &sigstore.bundle(bytes, &Keyless::default()),
                &trust,
            ),
            "from a log no trusted root names",
        );
    }
}
