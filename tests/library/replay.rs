//! Record and replay through the library (`corral::replay`): every sample
//! (Rust, Python, JavaScript, C, and a 0.3.0 tool with an image) records
//! and replays identically with its server stopped and its files gone; a
//! changed build shows its output diff and one that asks for another URL
//! diverges there; recordings stay within their caps and their directory
//! within its bounds; a cut or changed recording is refused. The update
//! gate: `update_gate.rs`; the CLI and the leak scan of a recording:
//! `tests/all/replay.rs`.

use std::path::Path;

use corral::replay::{
    RecordRequest, Recording, RecordingError, RecordingsConfig, ReplayError, ReplayOptions,
    Verdict, replay,
};
use corral::{CallOptions, Host};
use serde_json::{Value, json};

use crate::support::{
    CHART, DUP_A, DUP_B, ENCODE, FETCH, FETCH_NEXT, FUZZY, HOSTILE, JSON, MATH, NOTES, TABLES,
    TEXT, TestServer, VERSIONS, builder, guest, plugin_dir_with_policies,
};

/// Calls `tool` with a record request; the one recording it wrote.
pub(crate) async fn record(
    host: &Host,
    tool: &str,
    arguments: Value,
) -> (Recording, std::path::PathBuf) {
    let request = RecordRequest::new();
    let options = CallOptions::default().with_record(request.clone());
    let _ = host.call(tool, &arguments.to_string(), &options).await;
    assert_eq!(request.failed(), Vec::<String>::new());
    let written = request.written();
    assert_eq!(written.len(), 1, "{tool}: {written:?}");
    let recording = Recording::read(&written[0]).expect("the recording reads back");
    assert_eq!(recording.header.parent.as_ref().map(|p| p.1), Some(0));
    (recording, written[0].clone())
}

pub(crate) async fn host_recording_into(dir: &Path, recordings: &Path) -> Host {
    let host = builder(dir)
        .recordings(RecordingsConfig::new(recordings))
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    host
}

#[tokio::test]
async fn every_sample_records_and_replays_identically_offline() {
    let server = TestServer::start("hello from the test server");
    let fetch_policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n",
        server.port
    );
    let notes_policy = "version = 1\n[[filesystem]]\nhost = \"notes-data\"\nguest = \"/notes\"\n\
                        access = \"read-only\"\n";
    let dir = plugin_dir_with_policies(&[
        (TEXT, None),
        (MATH, None),
        (JSON, None),
        (ENCODE, None),
        (NOTES, Some(notes_policy)),
        (FETCH, Some(&fetch_policy)),
        (CHART, None),
        (TABLES, None),
        (VERSIONS, None),
        (FUZZY, None),
    ]);
    let notes = dir.path().join("notes-data");
    std::fs::create_dir(&notes).expect("notes dir");
    std::fs::write(notes.join("plan.md"), "first: record\nthen: replay\n").expect("note");
    std::fs::write(notes.join("other.md"), "x").expect("note");
    // A directory corral makes (an existing one is the operator's).
    let scratch = tempfile::tempdir().expect("recordings");
    let recordings = scratch.path().join("recordings");
    let host = host_recording_into(dir.path(), &recordings).await;

    let calls = [
        ("word_count", json!({"text": "one two three"})),
        ("evaluate", json!({"expression": "(2 + 3) * 4"})),
        (
            "json_query",
            json!({"document": {"a": [1, 2]}, "path": "$.a[*]"}),
        ),
        ("sha256", json!({"text": "hi"})),
        ("notes_read", json!({"name": "plan"})),
        ("notes_list", json!({})),
        (
            "fetch_url",
            json!({"url": format!("http://127.0.0.1:{}/x", server.port)}),
        ),
        (
            "bar_chart",
            json!({"title": "T", "labels": ["a", "b"], "values": [1.0, 2.5]}),
        ),
        (
            "table_render",
            json!({"rows": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]}),
        ),
        ("semver_compare", json!({"a": "1.2.3", "b": "1.10.0"})),
        ("edit_distance", json!({"a": "kitten", "b": "sitting"})),
    ];
    let mut recorded = Vec::new();
    for (tool, arguments) in calls {
        let (recording, path) = record(&host, tool, arguments).await;
        assert!(
            recording.incomplete.is_empty(),
            "{tool}: {:?}",
            recording.incomplete
        );
        recorded.push((tool, recording, path));
    }
    assert_eq!(server.hits(), 1);
    // Nothing the calls reached is there any more.
    server.stop();
    std::fs::remove_dir_all(&notes).expect("remove notes");

    for (tool, recording, path) in &recorded {
        let report = replay(&host, recording, ReplayOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert_eq!(
            report.verdict,
            Verdict::Identical,
            "{tool} ({})",
            path.display()
        );
        assert!(report.same_build);
        assert_eq!(report.replayed, recording.outcome.result, "{tool}");
        // The same inputs, the same instructions.
        assert_eq!(report.fuel.0, report.fuel.1, "{tool}");
        assert_eq!(report.unused, 0, "{tool}");
    }
    // What made them faithful is in the recordings.
    let fetched = &recorded[6].1;
    assert!(
        fetched
            .outcome
            .result
            .contains("hello from the test server")
    );
    let read = &recorded[4].1;
    assert!(read.files.iter().any(|f| f.path == "/notes/plan.md"
        && f.contents.as_ref().map(|c| c.as_slice())
            == Some(b"first: record\nthen: replay\n".as_slice())));
    // Private: the directory corral made 0700, each recording 0600.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&recordings), 0o700);
    assert!(recorded.iter().all(|(_, _, path)| mode(path) == 0o600));
}

/// A plugin directory with `build` as `dup.wasm`.
pub(crate) fn dup_dir(build: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(guest(build), dir.path().join("dup.wasm")).expect("copy");
    dir
}

#[tokio::test]
async fn a_changed_build_shows_its_output_diff_and_is_refused_unless_shadowed() {
    let recordings = tempfile::tempdir().expect("recordings");
    let old = dup_dir(DUP_A);
    let host = host_recording_into(old.path(), recordings.path()).await;
    let (recording, _) = record(&host, "dup_tool", json!({})).await;
    let same = replay(&host, &recording, ReplayOptions::default())
        .await
        .expect("replay");
    assert_eq!(same.verdict, Verdict::Identical);

    let new = dup_dir(DUP_B);
    let next = host_recording_into(new.path(), recordings.path()).await;
    let refused = replay(&next, &recording, ReplayOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ReplayError::OtherBuild { .. }),
        "{refused}"
    );
    assert!(refused.to_string().contains("--plugin FILE"), "{refused}");

    let shadow = replay(&next, &recording, ReplayOptions::shadow())
        .await
        .expect("shadow replay");
    assert!(!shadow.same_build);
    let Verdict::OutputChanged(diff) = &shadow.verdict else {
        panic!("{:?}", shadow.verdict)
    };
    let changed: Vec<&str> = diff
        .iter()
        .map(String::as_str)
        .filter(|l| !l.starts_with("  "))
        .collect();
    assert_eq!(changed.len(), 2, "{diff:#?}");
    assert!(
        changed[0].starts_with("- ") && changed[0].contains("dup-a"),
        "{diff:#?}"
    );
    assert!(
        changed[1].starts_with("+ ") && changed[1].contains("dup-b"),
        "{diff:#?}"
    );
}

#[tokio::test]
async fn a_build_that_asks_for_another_url_diverges_at_that_request() {
    let server = TestServer::start("v1");
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n",
        server.port
    );
    let recordings = tempfile::tempdir().expect("recordings");
    let old = plugin_dir_with_policies(&[(FETCH, Some(&policy))]);
    let host = host_recording_into(old.path(), recordings.path()).await;
    let url = format!("http://127.0.0.1:{}/data", server.port);
    let (recording, _) = record(&host, "fetch_url", json!({ "url": url })).await;
    server.stop();

    // The next build appends `?v=2` to the URL it fetches (one line).
    let new = tempfile::tempdir().expect("dir");
    std::fs::copy(guest(FETCH_NEXT), new.path().join("fetch.wasm")).expect("copy");
    std::fs::write(new.path().join("fetch.policy.toml"), &policy).expect("policy");
    let next = host_recording_into(new.path(), recordings.path()).await;
    let report = replay(&next, &recording, ReplayOptions::shadow())
        .await
        .expect("shadow replay");
    let Verdict::Diverged(divergence) = &report.verdict else {
        panic!("{:?}", report.verdict)
    };
    let http = recording
        .events
        .iter()
        .position(|e| matches!(e, corral::tape::Event::Http(_)))
        .expect("an HTTP event");
    assert_eq!(divergence.position, http);
    let expected = divergence.expected.as_deref().unwrap_or("");
    assert!(expected.contains(&format!("GET {url})")), "{divergence}");
    assert!(
        divergence.got.contains(&format!("GET {url}?v=2")),
        "{divergence}"
    );
    // The request was answered with a denial; nothing went out.
    assert_eq!(report.unused, 0);
}

#[tokio::test]
async fn hostile_runs_stay_within_the_recording_caps_and_the_directory_its_bounds() {
    // 8 MiB of body against a recording cap of 1 MiB.
    let body: &'static str = Box::leak("x".repeat(8 << 20).into_boxed_str());
    let server = TestServer::start(body);
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n",
        server.port
    );
    let dir = plugin_dir_with_policies(&[(FETCH, Some(&policy)), (HOSTILE, None)]);
    let recordings = tempfile::tempdir().expect("recordings");
    let cap = 1 << 20;
    let host = builder(dir.path())
        .recordings(
            RecordingsConfig::new(recordings.path())
                .with_recording_cap(cap)
                .with_bounds(5, 64 << 20),
        )
        .build()
        .await
        .expect("host");
    let url = format!("http://127.0.0.1:{}/big", server.port);
    let (big, path) = record(&host, "fetch_url", json!({ "url": url, "max_bytes": 16 })).await;
    assert!(std::fs::metadata(&path).unwrap().len() < cap as u64);
    let Some(corral::tape::Event::Http(exchange)) = big
        .events
        .iter()
        .find(|e| matches!(e, corral::tape::Event::Http(_)))
    else {
        panic!("no HTTP event")
    };
    let Some(Ok(response)) = &exchange.response else {
        panic!("{:?}", exchange.response)
    };
    assert!(response.body.len() < cap, "{}", response.body.len());
    assert!(response.cut > 0);
    assert!(
        big.incomplete.iter().any(|n| n.contains("is cut after")),
        "{:?}",
        big.incomplete
    );
    // A replay of it says so.
    server.stop();
    let report = replay(&host, &big, ReplayOptions::default())
        .await
        .expect("replay");
    assert!(!report.incomplete.is_empty());

    // A million log lines: the recording keeps the lines the host writes.
    let (flood, path) = record(&host, "flood_log", json!({ "count": 1_000_000 })).await;
    let lines = flood
        .events
        .iter()
        .filter(|e| matches!(e, corral::tape::Event::Log { .. }))
        .count();
    assert_eq!(lines, corral::MAX_LOG_LINES as usize);
    assert!(std::fs::metadata(&path).unwrap().len() < 64 << 10);

    // Twenty more calls under load: five recordings kept, the newest.
    let request = RecordRequest::new();
    let options = CallOptions::default().with_record(request.clone());
    let calls = (0..20).map(|i| {
        let host = host.clone();
        let options = options.clone();
        async move {
            host.call(
                "echo",
                &json!({ "text": i.to_string() }).to_string(),
                &options,
            )
            .await
        }
    });
    futures_util::future::join_all(calls).await;
    assert_eq!(request.written().len(), 20);
    let kept = corral::replay::recordings_in(recordings.path()).expect("list");
    assert_eq!(kept.len(), 5, "{kept:?}");
}

#[tokio::test]
async fn a_cut_or_changed_recording_is_refused_with_its_reason() {
    let dir = plugin_dir_with_policies(&[(ENCODE, None)]);
    let recordings = tempfile::tempdir().expect("recordings");
    let host = host_recording_into(dir.path(), recordings.path()).await;
    let (recording, path) = record(&host, "sha256", json!({"text": "x"})).await;
    let bytes = std::fs::read(&path).expect("read");

    let cut = &bytes[..bytes.len() - 7];
    let err = Recording::decode("cut.rec", cut).unwrap_err();
    assert!(matches!(err, RecordingError::Digest { .. }), "{err}");
    assert!(err.to_string().contains("truncated or changed"), "{err}");

    let mut flipped = bytes.clone();
    flipped[20] ^= 1;
    let err = Recording::decode("flipped.rec", &flipped).unwrap_err();
    assert!(matches!(err, RecordingError::Digest { .. }), "{err}");

    let err = Recording::decode("other.rec", b"{\"not\": \"a recording\"}").unwrap_err();
    assert!(matches!(err, RecordingError::NotARecording { .. }), "{err}");

    // A recording that names another build of the plugin (written whole,
    // so its digest holds): refused, naming both builds.
    let mut other = recording.clone();
    other.header.plugin_sha256 = "0".repeat(64);
    let reread = Recording::decode("other.rec", &other.encode().expect("encode")).expect("decode");
    let err = replay(&host, &reread, ReplayOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&"0".repeat(64)), "{err}");
    assert!(
        err.to_string().contains(&recording.header.plugin_sha256),
        "{err}"
    );
}

#[tokio::test]
async fn a_plans_steps_are_child_recordings_of_one_call() {
    let dir = plugin_dir_with_policies(&[(ENCODE, None), (TEXT, None)]);
    let recordings = tempfile::tempdir().expect("recordings");
    let host = host_recording_into(dir.path(), recordings.path()).await;
    let plan = json!({"steps": [
        {"id": "a", "tool": "sha256", "arguments": {"text": "one"}},
        {"id": "b", "tool": "word_count", "arguments": {"text": "one two"}},
    ]});
    let request = RecordRequest::new();
    host.call(
        "execute_tool_plan",
        &plan.to_string(),
        &CallOptions::default().with_record(request.clone()),
    )
    .await
    .expect("plan");
    let mut steps: Vec<Recording> = request
        .written()
        .iter()
        .map(|p| Recording::read(p).expect("read"))
        .collect();
    steps.sort_by_key(|r| r.header.parent.as_ref().map(|p| p.1));
    assert_eq!(steps.len(), 2, "one recording per step");
    let (first, second) = (&steps[0].header, &steps[1].header);
    let ids = (
        first.parent.clone().unwrap(),
        second.parent.clone().unwrap(),
    );
    assert_eq!(ids.0.0, ids.1.0, "one call");
    assert_eq!((ids.0.1, ids.1.1), (0, 1));
    let mut tools = vec![first.tool.as_str(), second.tool.as_str()];
    tools.sort_unstable();
    assert_eq!(tools, ["sha256", "word_count"]);
    for step in &steps {
        let report = replay(&host, step, ReplayOptions::default())
            .await
            .expect("replay");
        assert_eq!(report.verdict, Verdict::Identical);
    }
}

#[tokio::test]
async fn a_policy_that_records_failures_keeps_only_the_failed_calls() {
    let dir = plugin_dir_with_policies(&[(
        HOSTILE,
        Some("version = 1\n[record]\non = \"failure\"\ntools = { panic = 0.0 }\n"),
    )]);
    let recordings = tempfile::tempdir().expect("recordings");
    let host = host_recording_into(dir.path(), recordings.path()).await;
    for i in 0..3 {
        let text = json!({ "text": i.to_string() }).to_string();
        host.call("echo", &text, &CallOptions::default())
            .await
            .expect("echo");
    }
    // A failure of a tool whose own rate is 0: not kept.
    let message = json!({ "message": "it broke" }).to_string();
    host.call("panic", &message, &CallOptions::default())
        .await
        .unwrap_err();
    host.call("fail", &message, &CallOptions::default())
        .await
        .unwrap_err();
    // Written in the background: wait for the writer, up to 10 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let files = loop {
        let files = corral::replay::recordings_in(recordings.path()).unwrap_or_default();
        if !files.is_empty() || std::time::Instant::now() > deadline {
            break files;
        }
        tokio::task::yield_now().await;
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert_eq!(files.len(), 1, "{files:?}");
    let recording = Recording::read(&files[0]).expect("read");
    assert_eq!(recording.header.tool, "fail");
    assert!(recording.outcome.failed);
    assert_eq!(recording.header.parent, None, "sampled, not asked for");
    assert!(
        recording.outcome.result.contains("it broke"),
        "{}",
        recording.outcome.result
    );
    let report = replay(&host, &recording, ReplayOptions::default())
        .await
        .expect("replay");
    assert_eq!(report.verdict, Verdict::Identical);
}
