//! Sigstore bundles beside a local `.wasm` (`NAME.wasm.sigstore.json`):
//! key-based ones from `corral sign --bundle`, and keyless ones checked
//! offline against a trusted root. The test Sigstore
//! ([`support::TestSigstore`]) stands in for Fulcio and Rekor; every way a
//! bundle can be wrong is tried against [`corral::verify_file`], and the
//! host, a policy's `[integrity] identities` and `corral verify` are tried
//! end to end.

use std::path::Path;

use corral::{Identity, Trust, TrustedRoot};
use serde_json::Value;

use super::signatures::{corral, s};
use crate::support::{self, DAY, Keyless, TestSigstore};

const ALICE: &str = "subject=alice@example.com,issuer=https://accounts.example.com";

fn trust(sigstore: &TestSigstore, identities: &[&str]) -> Trust {
    Trust {
        roots: vec![TrustedRoot::from_json(&sigstore.trusted_root(), "root.json").expect("root")],
        identities: identities
            .iter()
            .map(|i| i.parse::<Identity>().expect("identity"))
            .collect(),
        required: true,
        ..Trust::default()
    }
}

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
    let trusted = trust(&sigstore, &[ALICE]);

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
        verify(dir.path(), bytes, &good, &trust(&sigstore, &[bob])),
        "it was signed by alice@example.com (issuer https://accounts.example.com), not by \
         bob@example.com (issuer https://accounts.example.com)",
    );
    let other_issuer = "subject=alice@example.com,issuer=https://evil.example.com";
    refused(
        verify(dir.path(), bytes, &good, &trust(&sigstore, &[other_issuer])),
        "not by alice@example.com (issuer https://evil.example.com)",
    );
    refused(
        verify(dir.path(), bytes, &good, &trust(&sigstore, &[])),
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
fn a_host_loads_keyless_signed_plugins_and_a_policy_names_the_identity() {
    let sigstore = TestSigstore::new();
    let keys = tempfile::tempdir().expect("keys");
    let root = keys.path().join("trusted_root.json");
    std::fs::write(&root, sigstore.trusted_root()).expect("root");
    let plugins = support::plugin_dir(&[support::ENCODE, support::TEXT]);
    let encode = plugins.path().join("encode.wasm");
    let bytes = std::fs::read(&encode).expect("encode");
    std::fs::write(
        corral::bundle_path(&encode),
        sigstore.bundle(&bytes, &Keyless::default()).to_string(),
    )
    .expect("bundle");

    let dir = s(plugins.path());
    let root = s(&root);
    let strict = [
        "--plugins",
        &dir,
        "--trusted-root",
        &root,
        "--trusted-identity",
        ALICE,
        "--require-signatures",
    ];
    let (_, out) = corral(&[&strict[..], &["list"]].concat());
    assert!(
        out.contains("base64_encode"),
        "the signed plugin loads: {out}"
    );
    assert!(
        !out.contains("word_count")
            && out.contains("text.wasm")
            && out.contains("it is not signed"),
        "{out}"
    );
    assert!(
        out.contains("alice@example.com (issuer https://accounts.example.com)"),
        "{out}"
    );
    let (_, out) = corral(&[&strict[..], &["describe", "base64_encode"]].concat());
    assert!(
        out.contains(
            "signed by alice@example.com (issuer https://accounts.example.com, keyless \
             signature, log index 5)"
        ),
        "{out}"
    );
    // The manifest says who, and stays valid against its schema.
    let file = s(&keys.path().join("manifest.json"));
    corral(&[&strict[..], &["manifest", "--out", &file]].concat());
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("manifest")).expect("json");
    let schema: Value = serde_json::from_str(corral::MANIFEST_SCHEMA).expect("schema");
    assert!(jsonschema::is_valid(&schema, &manifest), "{manifest:#}");
    let signed = &manifest["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "base64_encode")
        .expect("tool")["provider"]["signature"];
    assert_eq!(
        (&signed["signer"], &signed["kind"], &signed["log_index"]),
        (&"alice@example.com".into(), &"keyless".into(), &5.into())
    );
    let (code, out) = corral(&[&strict[..], &["verify", &s(&encode)]].concat());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("signed by alice@example.com"), "{out}");
    let (code, out) = corral(
        &[
            &strict[..],
            &["verify", &s(&plugins.path().join("text.wasm"))],
        ]
        .concat(),
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("it is not signed"), "{out}");
    let (code, out) = corral(&["--trusted-identity", ALICE, "verify", &s(&encode)]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("needs a --trusted-root"), "{out}");
    let (code, out) = corral(&["--trusted-identity", "alice", "list"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("write subject=SUBJECT,issuer=ISSUER"), "{out}");

    // A policy naming another identity refuses the plugin, whatever the
    // host requires; naming alice, it loads without the host's demand.
    let policy = plugins.path().join("encode.policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[integrity]\nidentities = [{ subject = \"bob@example.com\", issuer = \
         \"https://accounts.example.com\" }]\n",
    )
    .expect("policy");
    let (_, out) = corral(&["--plugins", &dir, "--trusted-root", &root, "list"]);
    assert!(
        !out.contains("base64_encode") && out.contains("not by bob@example.com"),
        "{out}"
    );
    std::fs::write(
        &policy,
        "version = 1\n[integrity]\nidentities = [{ subject = \"alice@example.com\", issuer = \
         \"https://accounts.example.com\" }]\n",
    )
    .expect("policy");
    let (_, out) = corral(&["--plugins", &dir, "--trusted-root", &root, "list"]);
    assert!(out.contains("base64_encode"), "{out}");
    let (_, out) = corral(&[
        "--plugins",
        &dir,
        "--trusted-root",
        &root,
        "policy",
        "check",
    ]);
    assert!(
        out.contains(
            "integrity: loads only if signed without a key by alice@example.com (issuer \
             https://accounts.example.com)"
        ),
        "{out}"
    );
    // A host that requires signatures keeps its own say: the policy's
    // identity counts only if the host trusts it too.
    let bob = "subject=bob@example.com,issuer=https://accounts.example.com";
    let (_, out) = corral(&[
        "--plugins",
        &dir,
        "--trusted-root",
        &root,
        "--trusted-identity",
        bob,
        "--require-signatures",
        "list",
    ]);
    assert!(
        !out.contains("base64_encode") && out.contains("names signers the host does not trust"),
        "{out}"
    );
}

#[test]
fn corral_sign_writes_a_key_based_bundle_that_verify_and_the_host_accept() {
    let keys = tempfile::tempdir().expect("keys");
    for who in ["alice", "bob"] {
        let (code, out) = corral(&["key", "new", &s(&keys.path().join(who))]);
        assert_eq!(code, 0, "{out}");
    }
    let plugins = support::plugin_dir(&[support::ENCODE]);
    let encode = plugins.path().join("encode.wasm");
    let (code, out) = corral(&[
        "sign",
        &s(&encode),
        "--bundle",
        "--key",
        &s(&keys.path().join("alice.key")),
    ]);
    assert_eq!(code, 0, "{out}");
    let bundle: Value = serde_json::from_str(
        &std::fs::read_to_string(corral::bundle_path(&encode)).expect("bundle"),
    )
    .expect("json");
    assert_eq!(bundle["mediaType"], corral::BUNDLE_MEDIA_TYPE);
    assert!(!plugins.path().join("encode.wasm.sig").exists());

    let alice = s(&keys.path().join("alice.pub"));
    let (code, out) = corral(&["--trusted-key", &alice, "verify", &s(&encode)]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("signed by alice.pub") && out.contains("bundle signature"),
        "{out}"
    );
    let bob = s(&keys.path().join("bob.pub"));
    let (code, out) = corral(&["--trusted-key", &bob, "verify", &s(&encode)]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("encode.wasm.sigstore.json: its signature verifies with none of"),
        "{out}"
    );
    let (_, out) = corral(&[
        "--plugins",
        &s(plugins.path()),
        "--trusted-key",
        &alice,
        "--require-signatures",
        "describe",
        "base64_encode",
    ]);
    assert!(
        out.contains("signed by alice.pub") && out.contains("bundle signature"),
        "{out}"
    );
}

#[tokio::test]
async fn a_reload_checks_a_bundle_that_arrives_or_changes_beside_a_served_plugin() {
    let sigstore = TestSigstore::new();
    let plugins = support::plugin_dir(&[support::ENCODE]);
    let encode = plugins.path().join("encode.wasm");
    let host = corral::Host::builder()
        .plugin_dir(plugins.path())
        .pool(support::pool())
        .cache(support::cache())
        .trust(trust(&sigstore, &[ALICE]))
        .build()
        .await
        .expect("host builds");
    assert!(host.tool("base64_encode").is_none(), "unsigned: not served");

    let bytes = std::fs::read(&encode).expect("encode");
    std::fs::write(
        corral::bundle_path(&encode),
        sigstore.bundle(&bytes, &Keyless::default()).to_string(),
    )
    .expect("bundle");
    let report = host.reload().await.expect("reload");
    assert!(
        report.added.contains(&"base64_encode".to_string()),
        "{report:?}"
    );
    let tool = host.tool("base64_encode").expect("served once signed");
    let signed = tool.plugin().and_then(|p| p.signature()).expect("signed");
    assert_eq!(
        (signed.signer.as_str(), signed.kind),
        ("alice@example.com", "keyless")
    );

    // A bundle for another identity replaces it: the reload reports the
    // error and, as with any new version that fails, the version already
    // checked keeps serving (its bytes did not change, and alice's
    // signature of them still holds).
    let bob = Keyless {
        subject: "bob@example.com".into(),
        ..Keyless::default()
    };
    std::fs::write(
        corral::bundle_path(&encode),
        sigstore.bundle(&bytes, &bob).to_string(),
    )
    .expect("bundle");
    let report = host.reload().await.expect("reload");
    assert_eq!(report.kept, std::slice::from_ref(&encode), "{report:?}");
    assert!(
        format!("{:?}", report.errors).contains("not by alice@example.com"),
        "{report:?}"
    );
    let tool = host.tool("base64_encode").expect("still served");
    let signed = tool.plugin().and_then(|p| p.signature()).expect("signed");
    assert_eq!(signed.signer, "alice@example.com");
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
        let trust = Trust {
            roots: vec![root],
            identities: vec![ALICE.parse().expect("identity")],
            required: true,
            ..Trust::default()
        };
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
