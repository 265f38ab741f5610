//! Plugin signatures, cosign-compatible: keys from `corral key new`, blob
//! signatures from `corral sign`, registry signatures from `corral push
//! --key`, checked at every load (host requirement and a policy's
//! `[integrity] signed_by`) and on pull, before anything is written; who
//! signed shows in `describe` and the manifest.

use std::path::Path;
use std::process::Command;

use crate::support::{self, Registry};

/// Runs `corral ARGS` with the shared cache; answers (exit code, stdout +
/// stderr).
pub(crate) fn corral(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["--cache-dir", &support::cache_dir().display().to_string()])
        .args(args)
        .env_remove("COSIGN_PASSWORD")
        .output()
        .expect("run corral");
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

pub(crate) fn s(path: &Path) -> String {
    path.display().to_string()
}

/// Keys `alice` and `bob` in `dir`.
fn keys(dir: &Path) {
    for who in ["alice", "bob"] {
        let (code, out) = corral(&["key", "new", &s(&dir.join(who))]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("fingerprint sha256:"), "{out}");
    }
}

#[test]
fn a_host_that_requires_signatures_loads_only_what_a_trusted_key_signed() {
    let keydir = tempfile::tempdir().expect("keys");
    keys(keydir.path());
    let alice_pub = s(&keydir.path().join("alice.pub"));
    let plugins = support::plugin_dir(&[support::ENCODE, support::TEXT]);
    let encode = plugins.path().join("encode.wasm");
    let (code, out) = corral(&[
        "sign",
        &s(&encode),
        "--key",
        &s(&keydir.path().join("alice.key")),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(plugins.path().join("encode.wasm.sig").is_file());

    let dir = s(plugins.path());
    let strict = [
        "--plugins",
        &dir,
        "--trusted-key",
        &alice_pub,
        "--require-signatures",
    ];
    let (_, out) = corral(&[&strict[..], &["list"]].concat());
    assert!(
        out.contains("base64_encode"),
        "the signed plugin loads: {out}"
    );
    assert!(!out.contains("word_count"), "{out}");
    assert!(
        out.contains("text.wasm") && out.contains("it is not signed"),
        "{out}"
    );
    assert!(
        out.contains("alice.pub"),
        "the error names the key expected: {out}"
    );
    let (_, out) = corral(&[&strict[..], &["describe", "base64_encode"]].concat());
    assert!(out.contains("signed by alice.pub (sha256:"), "{out}");
    assert!(out.contains("blob signature"), "{out}");
    let file = s(&plugins.path().join("manifest.json"));
    corral(&[&strict[..], &["manifest", "--out", &file]].concat());
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("manifest")).expect("json");
    let signed = manifest["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "base64_encode")
        .expect("tool")["provider"]["signature"]
        .clone();
    assert_eq!(signed["signer"], "alice.pub");

    // A signature by another key, or of other bytes, is refused.
    let bob_pub = s(&keydir.path().join("bob.pub"));
    let (_, out) = corral(&[
        "--plugins",
        &dir,
        "--trusted-key",
        &bob_pub,
        "--require-signatures",
        "list",
    ]);
    assert!(
        !out.contains("base64_encode") && out.contains("verifies with none of"),
        "{out}"
    );
    std::fs::copy(support::guest(support::MATH), &encode).expect("swap the bytes");
    let (_, out) = corral(&[&strict[..], &["list"]].concat());
    assert!(
        !out.contains("add") && out.contains("the file changed after signing"),
        "{out}"
    );

    // Not required: unsigned plugins load, and nothing claims a signature.
    let (_, out) = corral(&["--plugins", &dir, "list"]);
    assert!(out.contains("word_count"), "{out}");
    let (_, out) = corral(&["--plugins", &dir, "describe", "word_count"]);
    assert!(out.contains("signature:         none verified"), "{out}");
    let (code, out) = corral(&["--plugins", &dir, "--require-signatures", "list"]);
    assert_eq!(code, 2);
    assert!(out.contains("needs at least one --trusted-key"), "{out}");
}

#[test]
fn a_policy_names_the_keys_its_plugin_must_be_signed_by() {
    let keydir = tempfile::tempdir().expect("keys");
    keys(keydir.path());
    let plugins = support::plugin_dir(&[support::ENCODE]);
    std::fs::copy(
        keydir.path().join("alice.pub"),
        plugins.path().join("alice.pub"),
    )
    .expect("key");
    std::fs::write(
        plugins.path().join("encode.policy.toml"),
        "version = 1\n[integrity]\nsigned_by = [\"alice.pub\"]\n",
    )
    .expect("policy");
    let dir = s(plugins.path());
    let (_, out) = corral(&["--plugins", &dir, "list"]);
    assert!(
        !out.contains("base64_encode") && out.contains("it is not signed"),
        "{out}"
    );
    let encode = s(&plugins.path().join("encode.wasm"));
    corral(&["sign", &encode, "--key", &s(&keydir.path().join("bob.key"))]);
    let (_, out) = corral(&["--plugins", &dir, "list"]);
    assert!(
        !out.contains("base64_encode") && out.contains("verifies with none of"),
        "{out}"
    );
    corral(&[
        "sign",
        &encode,
        "--key",
        &s(&keydir.path().join("alice.key")),
    ]);
    let (_, out) = corral(&["--plugins", &dir, "list"]);
    assert!(out.contains("base64_encode"), "{out}");
    let (_, out) = corral(&["--plugins", &dir, "policy", "check"]);
    assert!(
        out.contains("integrity: loads only if signed by alice.pub"),
        "{out}"
    );
}

#[test]
fn a_pull_checks_the_registry_signature_before_writing_and_every_load_checks_it_again() {
    let registry = Registry::start();
    let keydir = tempfile::tempdir().expect("keys");
    keys(keydir.path());
    let (alice_key, alice_pub) = (
        s(&keydir.path().join("alice.key")),
        s(&keydir.path().join("alice.pub")),
    );
    let wasm = s(&support::guest(support::ENCODE));
    let signed = registry.reference("tools/encode:1.0");
    let unsigned = registry.reference("tools/encode:unsigned");
    let by_bob = registry.reference("tools/encode:bob");
    let (code, out) = corral(&["push", &wasm, &signed, "--no-policy", "--key", &alice_key]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("signed: sha256-"), "{out}");
    // A signature belongs to a manifest digest, not a tag: the unsigned and
    // Bob's artifacts are other components, so other digests.
    let json = s(&support::guest(support::JSON));
    assert_eq!(corral(&["push", &json, &unsigned, "--no-policy"]).0, 0);
    let other = s(&support::guest(support::MATH));
    let bob_key = s(&keydir.path().join("bob.key"));
    assert_eq!(
        corral(&["push", &other, &by_bob, "--no-policy", "--key", &bob_key]).0,
        0
    );

    let target = tempfile::tempdir().expect("target");
    let dir = s(target.path());
    let strict = [
        "--plugins",
        &dir,
        "--trusted-key",
        &alice_pub,
        "--require-signatures",
    ];
    let (code, out) = corral(&[&strict[..], &["pull", &by_bob, "--name", "math"]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("none of them verifies") && out.contains("nothing was written"),
        "{out}"
    );
    let (code, out) = corral(&[&strict[..], &["pull", &unsigned, "--name", "other"]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no signature"), "{out}");
    // A host that trusts only keyless identities: a pull says what it reads.
    let roots = tempfile::tempdir().expect("root");
    let root = roots.path().join("trusted_root.json");
    std::fs::write(&root, support::TestSigstore::new().trusted_root()).expect("root");
    let (code, out) = corral(&[
        "--plugins",
        &dir,
        "--trusted-root",
        &s(&root),
        "--trusted-identity",
        "subject=alice@example.com,issuer=https://accounts.example.com",
        "--require-signatures",
        "pull",
        &signed,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("no trusted key is configured")
            && out.contains("keyless signatures in a registry are not read")
            && out.contains("the registry holds one key signature"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_dir(target.path()).expect("dir").count(),
        0,
        "nothing written"
    );

    let (code, out) = corral(&[&strict[..], &["pull", &signed]].concat());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("signed by key alice.pub"), "{out}");
    assert!(target.path().join("encode.wasm.cosign.json").is_file());
    let lock = corral::Lock::read(target.path())
        .expect("lock")
        .expect("some");
    assert!(
        lock.get("encode")
            .expect("entry")
            .signer
            .as_deref()
            .is_some_and(|s| s.starts_with("alice.pub"))
    );
    let (_, out) = corral(&[&strict[..], &["describe", "base64_encode"]].concat());
    assert!(
        out.contains("signed by alice.pub") && out.contains("oci signature"),
        "{out}"
    );

    // The kept signature covers these bytes only.
    let (_, out) = corral(&[&strict[..], &["list"]].concat());
    assert!(out.contains("base64_encode"), "{out}");
    std::fs::remove_file(target.path().join("corral.lock")).expect("unlock");
    std::fs::copy(
        support::guest(support::MATH),
        target.path().join("encode.wasm"),
    )
    .expect("swap");
    let (_, out) = corral(&[&strict[..], &["list"]].concat());
    assert!(
        !out.contains("add") && out.contains("it does not cover this file"),
        "{out}"
    );
}
