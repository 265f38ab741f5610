//! Sigstore bundles end to end: a host that requires keyless signatures, a
//! policy's `[integrity] identities`, a reload that meets a new bundle,
//! `corral verify`, and key-based bundles from `corral sign --bundle`.

use serde_json::Value;

use super::signatures::{corral, s};
use crate::support::{self, ALICE, Keyless, TestSigstore};

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
        .trust(sigstore.trust(&[ALICE]))
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
