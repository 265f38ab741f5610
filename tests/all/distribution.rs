//! Plugins over OCI, against a real registry (Debian's `docker-registry`,
//! one per test, with its own storage): push and pull with a policy request
//! and the lock file, tags and digests, a missing tag, a moved tag under
//! `--locked`, a changed file at startup, a tampered blob, an oversized
//! layer, a registry that goes away mid-download, and credentials from the
//! docker `config.json`.

use std::path::Path;
use std::process::Command;

use crate::support::{self, CuttingRelay, Registry};

/// Runs `corral --plugins DIR ARGS`, answering (exit code, stdout, stderr).
fn corral(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .arg("--plugins")
        .arg(dir)
        .args(["--cache-dir", &support::cache_dir().display().to_string()])
        .args(args)
        .output()
        .expect("run corral");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A directory holding `fetch.wasm` and a policy that grants one origin.
fn publisher() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(
        support::guest(support::FETCH),
        dir.path().join("fetch.wasm"),
    )
    .expect("copy");
    std::fs::write(
        dir.path().join("fetch.policy.toml"),
        "version = 1\n[http]\nallow = [\"https://example.com\"]\n",
    )
    .expect("policy");
    dir
}

fn lock(dir: &Path) -> corral::Lock {
    corral::Lock::read(dir).expect("lock").expect("a lock file")
}

#[test]
fn a_pushed_plugin_pulls_with_its_policy_as_a_request_and_is_locked() {
    let registry = Registry::start();
    let source = publisher();
    let reference = registry.reference("tools/fetch:1.0");
    let wasm = source.path().join("fetch.wasm");
    let (code, out_push, err) = corral(
        source.path(),
        &["push", &wasm.display().to_string(), &reference],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out_push.contains("with its policy"), "{out_push}");

    let target = tempfile::tempdir().expect("target");
    let (code, out, err) = corral(target.path(), &["pull", &reference]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("outbound HTTP to: https://example.com:443"),
        "{out}"
    );
    assert!(out.contains("corral policy accept fetch"), "{out}");
    assert_eq!(
        std::fs::read(target.path().join("fetch.wasm")).expect("pulled"),
        std::fs::read(&wasm).expect("source"),
    );
    let entry = lock(target.path()).get("fetch").expect("entry").clone();
    assert_eq!(entry.reference, reference);
    assert_eq!(
        entry.component,
        format!("sha256:{}", support::guest_sha256(support::FETCH))
    );
    assert!(
        out_push.contains(&entry.manifest),
        "push printed the digest pulled"
    );
    assert!(entry.policy.is_some());

    // The request is not in force: the plugin loads with nothing granted.
    assert!(!target.path().join("fetch.policy.toml").exists());
    let (code, out, _) = corral(target.path(), &["policy", "check"]);
    assert_eq!(code, 0);
    assert!(out.contains("fetch.wasm (no policy file)"), "{out}");
    let (code, out, _) = corral(target.path(), &["policy", "accept", "fetch"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("outbound HTTP to: https://example.com:443"),
        "{out}"
    );
    assert!(!target.path().join("fetch.policy.requested.toml").exists());
    let (_, out, _) = corral(target.path(), &["policy", "check"]);
    assert!(out.contains("fetch.policy.toml"), "{out}");
    let (code, _, err) = corral(target.path(), &["policy", "accept", "fetch"]);
    assert_eq!(code, 2);
    assert!(err.contains("no policy request for `fetch`"), "{err}");

    // A plugin of the same name from elsewhere is not replaced: the policy
    // beside it was granted to other code.
    let local = tempfile::tempdir().expect("local");
    std::fs::copy(
        support::guest(support::TEXT),
        local.path().join("fetch.wasm"),
    )
    .expect("copy");
    let (code, _, err) = corral(local.path(), &["pull", &reference]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("already in the plugin directory"), "{err}");
    assert_eq!(
        std::fs::read(local.path().join("fetch.wasm")).expect("kept"),
        std::fs::read(support::guest(support::TEXT)).expect("text")
    );

    // By digest, into another name; with --accept-policy at once.
    let other = tempfile::tempdir().expect("other");
    let by_digest = format!("{}@{}", registry.reference("tools/fetch"), entry.manifest);
    let (code, out, err) = corral(
        other.path(),
        &["pull", &by_digest, "--name", "web", "--accept-policy"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("accepted: now in force"), "{out}");
    assert!(other.path().join("web.wasm").exists());
    assert!(other.path().join("web.policy.toml").exists());
}

#[test]
fn a_missing_tag_or_a_moved_tag_under_the_lock_writes_nothing() {
    let registry = Registry::start();
    let source = publisher();
    let wasm = source.path().join("fetch.wasm").display().to_string();
    let reference = registry.reference("tools/fetch:latest");
    assert_eq!(corral(source.path(), &["push", &wasm, &reference]).0, 0);

    let target = tempfile::tempdir().expect("target");
    let (code, _, err) = corral(
        target.path(),
        &["pull", &registry.reference("tools/fetch:nope")],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no such tag or digest"), "{err}");
    assert_eq!(
        std::fs::read_dir(target.path()).expect("dir").count(),
        0,
        "nothing written"
    );

    assert_eq!(corral(target.path(), &["pull", &reference]).0, 0);
    let before = std::fs::read(target.path().join("fetch.wasm")).expect("pulled");
    // The publisher moves the tag to another component.
    let text = support::guest(support::TEXT).display().to_string();
    assert_eq!(
        corral(source.path(), &["push", &text, &reference, "--no-policy"]).0,
        0
    );
    let (code, out, err) = corral(target.path(), &["pull", "--locked"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("the tag moved"), "{err}");
    assert_eq!(
        std::fs::read(target.path().join("fetch.wasm")).expect("kept"),
        before
    );
    // Without the lock the new version comes, and the lock follows it.
    assert_eq!(corral(target.path(), &["pull", &reference]).0, 0);
    assert_eq!(
        lock(target.path()).get("fetch").expect("entry").component,
        format!("sha256:{}", support::guest_sha256(support::TEXT))
    );
    assert_eq!(corral(target.path(), &["pull", "--locked"]).0, 0);
}

#[test]
fn startup_refuses_a_locked_plugin_whose_file_changed() {
    let registry = Registry::start();
    let source = publisher();
    let wasm = source.path().join("fetch.wasm").display().to_string();
    let reference = registry.reference("tools/fetch:1.0");
    assert_eq!(corral(source.path(), &["push", &wasm, &reference]).0, 0);
    let target = tempfile::tempdir().expect("target");
    assert_eq!(corral(target.path(), &["pull", &reference]).0, 0);
    std::fs::copy(
        support::guest(support::ENCODE),
        target.path().join("encode.wasm"),
    )
    .expect("an unlocked plugin beside it");
    let (_, out, _) = corral(target.path(), &["list"]);
    assert!(
        out.contains("fetch_url") && out.contains("base64_encode"),
        "{out}"
    );

    std::fs::copy(
        support::guest(support::TEXT),
        target.path().join("fetch.wasm"),
    )
    .expect("swap");
    let (_, out, err) = corral(target.path(), &["list"]);
    let text = format!("{out}{err}");
    assert!(text.contains("corral.lock records"), "{text}");
    assert!(text.contains(&reference), "{text}");
    assert!(
        !out.contains("fetch_url") && !out.contains("word_count"),
        "{out}"
    );
    assert!(out.contains("base64_encode"), "the rest is served: {out}");
}

#[tokio::test]
async fn a_tampered_blob_an_oversized_layer_and_a_broken_download_write_nothing() {
    let registry = Registry::start();
    let source = publisher();
    let wasm = source.path().join("fetch.wasm");
    let reference = registry.reference("tools/fetch:1.0");
    let pushed = corral_dist::push(&wasm, None, &reference, None)
        .await
        .expect("push");
    let text = support::guest(support::TEXT);
    let big = registry.reference("tools/text:1.0");
    corral_dist::push(&text, None, &big, None)
        .await
        .expect("push");
    let target = tempfile::tempdir().expect("target");
    let options = corral_dist::PullOptions::default();

    // Over the plugin size cap: refused from the manifest, before download.
    let capped = options.clone().max_bytes(1 << 20);
    let err = corral_dist::pull(&big, target.path(), &capped)
        .await
        .unwrap_err();
    assert!(
        matches!(err, corral_dist::DistError::TooLarge { what: "component", bytes, limit_bytes: 1_048_576, .. } if bytes > 1 << 20),
        "{err}"
    );
    // The same cap holds when the plugin is loaded.
    assert_eq!(corral(target.path(), &["pull", &big]).0, 0);
    let (_, out, err) = corral(target.path(), &["--max-plugin-mib", "1", "list"]);
    assert!(
        format!("{out}{err}").contains("over the host's plugin size cap"),
        "{out}{err}"
    );
    std::fs::remove_file(target.path().join("text.wasm")).expect("rm");

    // A registry that breaks off mid-download: the old file stays.
    let relay = CuttingRelay::start(&registry.addr, &pushed.component, 4096);
    let through = format!("oci://{}/tools/fetch:1.0", relay.addr);
    corral_dist::pull(&through, target.path(), &options)
        .await
        .expect("first pull");
    let before = std::fs::read(target.path().join("fetch.wasm")).expect("pulled");
    relay.start_cutting();
    let err = corral_dist::pull(&through, target.path(), &options)
        .await
        .unwrap_err();
    assert_eq!(
        relay.cuts.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "{err}"
    );
    assert!(err.to_string().contains("broke off"), "{err}");
    assert_eq!(
        std::fs::read(target.path().join("fetch.wasm")).expect("kept"),
        before
    );
    // `.corral.lock.lock` is the lock file's lock (`corral_files::update_locked`),
    // kept for the next writer.
    assert_only(
        target.path(),
        &[".corral.lock.lock", "corral.lock", "fetch.wasm"],
    );

    // Bytes in the registry's storage changed under their digest.
    let blob = registry.blob_file(&pushed.component);
    let mut bytes = std::fs::read(&blob).expect("blob");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, bytes).expect("tamper");
    let fresh = tempfile::tempdir().expect("fresh");
    let err = corral_dist::pull(&reference, fresh.path(), &options)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("does not match its digest"),
        "{err}"
    );
    assert_only(fresh.path(), &[]);
}

/// `dir` holds exactly `names`.
fn assert_only(dir: &Path, names: &[&str]) {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, names, "no partial download left behind");
}

#[test]
fn a_registry_that_wants_credentials_gets_them_from_the_docker_config() {
    // The user `corral`, password `corral-test` (bcrypt, cost 5).
    let registry = Registry::start_with_basic_auth(
        "corral:$2b$05$2mh1//XXS5NDxmn9INDwQe1KCcw3NvLn7ILcZpVJtzMc/hNwp.GSC",
    );
    let source = publisher();
    let wasm = source.path().join("fetch.wasm").display().to_string();
    let reference = registry.reference("private/fetch:1.0");
    let (code, _, err) = corral(source.path(), &["push", &wasm, &reference]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("wants credentials"), "{err}");

    let docker = tempfile::tempdir().expect("docker config");
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode("corral:corral-test");
    std::fs::write(
        docker.path().join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
            registry.addr
        ),
    )
    .expect("config.json");
    let with_config = |dir: &Path, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_corral"))
            .arg("--plugins")
            .arg(dir)
            .args(args)
            .env("DOCKER_CONFIG", docker.path())
            .output()
            .expect("run corral")
    };
    let out = with_config(source.path(), &["push", &wasm, &reference]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let target = tempfile::tempdir().expect("target");
    let out = with_config(target.path(), &["pull", &reference]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(target.path().join("fetch.wasm").is_file());
}
