//! Record and replay through the `corral` binary: `call --record DIR`
//! writes a private recording and names it, `replay` runs it again (exit
//! 0 when identical), `replay DIR --plugin FILE` runs a new build against
//! a directory of recordings and prints the table (exit 1 when outputs
//! changed), a cut recording is refused (exit 2); and a recording of a call
//! that used a credential holds the secret in no encoding. The library's
//! side: `tests/library/replay.rs`.

use std::path::PathBuf;

use crate::cli::{corral, stdout_json};
use crate::support::{DUP_A, DUP_B, EchoServer, guest};

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The recordings `call --record` named on stderr.
fn recorded(out: &std::process::Output) -> Vec<PathBuf> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("recorded: "))
        .map(PathBuf::from)
        .collect()
}

fn dup_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(guest(DUP_A), dir.path().join("dup.wasm")).expect("copy");
    dir
}

#[test]
fn record_replay_and_a_shadow_test_of_a_new_build_from_the_command_line() {
    let plugins = dup_dir();
    let recordings = plugins.path().join("recordings");
    let dir = recordings.to_str().expect("utf-8");
    let mut files = Vec::new();
    for _ in 0..2 {
        let out = corral(plugins.path(), &["call", "dup_tool", "{}", "--record", dir]);
        assert!(out.status.success(), "{}", text(&out));
        files.extend(recorded(&out));
    }
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().all(|f| f.starts_with(&recordings)));

    let one = files[0].to_str().expect("utf-8");
    let out = corral(plugins.path(), &["replay", one]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("dup_tool (plugin dup, the recorded build): identical"),
        "{}",
        text(&out)
    );

    // The next build, against the directory: both outputs changed.
    let next = guest(DUP_B);
    let next = next.to_str().expect("utf-8");
    let out = corral(plugins.path(), &["replay", dir, "--plugin", next]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(table.matches("output changed").count(), 2 + 1, "{table}");
    assert!(
        table.contains("0 identical, 2 output changed, 0 diverged at an import, 0 failed"),
        "{table}"
    );
    let out = corral(plugins.path(), &["replay", one, "--plugin", next, "--json"]);
    let rows = stdout_json(&out);
    assert_eq!(rows[0]["result"], "output changed");
    assert_eq!(rows[0]["same_build"], false);
    let diff: Vec<String> = serde_json::from_value(rows[0]["diff"].clone()).expect("diff");
    assert!(
        diff.iter()
            .any(|l| l.starts_with("+ ") && l.contains("dup-b")),
        "{diff:?}"
    );

    // A cut recording: refused, naming why.
    let bytes = std::fs::read(&files[1]).expect("read");
    std::fs::write(&files[1], &bytes[..bytes.len() / 2]).expect("cut");
    let out = corral(
        plugins.path(),
        &["replay", files[1].to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("truncated or changed"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn a_recording_of_a_call_with_a_credential_holds_no_secret_in_any_encoding() {
    let server = EchoServer::start();
    let other = EchoServer::start();
    let dir = crate::secrets::spin_dir(server.port, other.port);
    let secret = "sk-test-0123456789abcdef";
    let store_dir = tempfile::tempdir().expect("store");
    let store = corral::SecretStore::at(store_dir.path().join("secrets.toml"));
    store.set("EXAMPLE_KEY", secret).expect("set");
    let recordings = store_dir.path().join("recordings");
    let host = corral::Host::builder()
        .plugin_dir(dir.path())
        .pool(crate::support::pool())
        .cache(crate::support::cache())
        .secrets(store)
        .recordings(corral::replay::RecordingsConfig::new(&recordings))
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let request = corral::replay::RecordRequest::new();
    let url = format!("http://127.0.0.1:{}/x", server.port);
    let out = host
        .call_value(
            "web_fetch",
            serde_json::json!({ "url": url }),
            &corral::CallOptions::default().with_record(request.clone()),
        )
        .await
        .expect("fetch");
    assert!(
        out.text.contains("[secret EXAMPLE_KEY redacted]"),
        "{}",
        out.text
    );
    // The server saw the secret: the call did use it.
    assert!(server.heads.lock().expect("lock")[0].contains(secret));

    let written = request.written();
    assert_eq!(written.len(), 1);
    let recording = corral::replay::Recording::read(&written[0]).expect("read");
    let scan = corral::Redactor::new(&[("EXAMPLE_KEY".to_owned(), secret.to_owned())])
        .expect("a redactor");
    // Every text of the recording, and its bytes decompressed.
    let whole = serde_json::to_string(&recording).expect("json");
    assert!(whole.contains("[secret EXAMPLE_KEY redacted]"), "{whole}");
    assert_eq!(scan.text(&whole).1, 0, "{whole}");
    let raw = std::fs::read(&written[0]).expect("raw");
    let cbor = zstd::stream::decode_all(&raw[10..raw.len() - 32]).expect("zstd");
    assert_eq!(scan.text(&String::from_utf8_lossy(&cbor)).1, 0);
    assert_eq!(scan.text(&String::from_utf8_lossy(&raw)).1, 0);
}

#[tokio::test]
async fn a_guests_questions_to_its_client_are_answered_from_the_recording() {
    use crate::support::{C_PROBE, PY_PROBE, plugin_dir_with_policies};
    let policy = "version = 1\n[client]\nelicitation = true\nroots = true\n\
                  sampling = { max_tokens = 20, calls_per_call = 1 }\n";
    let dir = plugin_dir_with_policies(&[(PY_PROBE, Some(policy)), (C_PROBE, Some(policy))]);
    let recordings = dir.path().join("recordings");
    let host = crate::support::builder(dir.path())
        .recordings(corral::replay::RecordingsConfig::new(&recordings))
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    for (tool, arguments) in [
        ("py_ask", r#"{"question": "Who are you?"}"#),
        ("c_sample", r#"{"path": "?"}"#),
    ] {
        let request = corral::replay::RecordRequest::new();
        let options = corral::CallOptions::default()
            .with_client(std::sync::Arc::new(crate::parts::Scripted))
            .with_record(request.clone());
        let out = host.call(tool, arguments, &options).await.expect(tool);
        let recording =
            corral::replay::Recording::read(&request.written()[0]).expect("the recording");
        assert!(
            recording
                .events
                .iter()
                .any(|e| matches!(e, corral::tape::Event::Client { .. })),
            "{tool}: no client event"
        );
        // No client at all now: the recording answers.
        let report =
            corral::replay::replay(&host, &recording, corral::replay::ReplayOptions::default())
                .await
                .expect("replay");
        assert_eq!(
            report.verdict,
            corral::replay::Verdict::Identical,
            "{tool}: {}",
            out.text
        );
    }
}

#[test]
fn a_pull_that_changes_recorded_outputs_is_held_unless_accepted() {
    let registry = crate::support::Registry::start();
    let publish = |build: &str, tag: &str| {
        let source = tempfile::tempdir().expect("dir");
        let wasm = source.path().join("dup.wasm");
        std::fs::copy(guest(build), &wasm).expect("copy");
        let reference = registry.reference(&format!("tools/dup:{tag}"));
        let out = corral(
            source.path(),
            &[
                "push",
                wasm.to_str().expect("utf-8"),
                &reference,
                "--no-policy",
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
        reference
    };
    let (first, next) = (publish(DUP_A, "1"), publish(DUP_B, "2"));

    let target = tempfile::tempdir().expect("target");
    let recordings = target.path().join("recordings");
    let at = recordings.to_str().expect("utf-8");
    let with = |args: &[&str]| {
        let mut all = vec!["--recordings-dir", at];
        all.extend_from_slice(args);
        corral(target.path(), &all)
    };
    let out = with(&["pull", &first, "--name", "dup"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(
        target.path().join("dup.policy.toml"),
        "version = 1\n[record]\nrate = 0.0\ngate_updates = true\n",
    )
    .expect("policy");
    let out = with(&["call", "dup_tool", "{}", "--record", at]);
    assert_eq!(recorded(&out).len(), 1, "{}", text(&out));
    let served = std::fs::read(guest(DUP_A)).expect("first build");
    let wasm = target.path().join("dup.wasm");

    // The next build changes the recorded output: put back, exit 1.
    let out = with(&["pull", &next, "--name", "dup"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("held: dup: the pulled build") && text(&out).contains("changes 1 of 1"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(&wasm).expect("dup.wasm"), served);

    // Told to accept changes, it is put in place.
    let out = with(&["pull", &next, "--name", "dup", "--accept-changes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(&wasm).expect("dup.wasm"),
        std::fs::read(guest(DUP_B)).expect("next build")
    );
}
