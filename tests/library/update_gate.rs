//! The update gate (`[record] gate_updates`): on a reload, a new build of
//! a plugin replays the served build's recordings first; a build that
//! changes an output waits (the old one keeps answering) until accepted,
//! and one that replays identically swaps in.

use corral::replay::RecordingsConfig;
use corral::{CallOptions, Host};
use serde_json::json;

use crate::replay::{dup_dir, host_recording_into, record};
use crate::support::{DUP_A, DUP_B, guest};

/// `bytes` (a component) with a custom section appended: another build,
/// that behaves the same.
fn rebuilt(bytes: &[u8]) -> Vec<u8> {
    let name = b"corral-test-rebuild";
    let mut section = vec![u8::try_from(name.len()).unwrap()];
    section.extend_from_slice(name);
    section.extend_from_slice(b"same code, other bytes");
    let mut out = bytes.to_vec();
    out.push(0); // a custom section
    out.push(u8::try_from(section.len()).unwrap()); // its size, one LEB128 byte
    out.extend_from_slice(&section);
    out
}

#[tokio::test]
async fn the_update_gate_holds_a_changed_build_and_swaps_an_identical_one() {
    let dir = dup_dir(DUP_A);
    std::fs::write(
        dir.path().join("dup.policy.toml"),
        "version = 1\n[record]\nrate = 0.0\ngate_updates = true\n",
    )
    .expect("policy");
    let recordings = tempfile::tempdir().expect("recordings");
    let host = host_recording_into(dir.path(), recordings.path()).await;
    let served = |host: &Host| {
        host.tool("dup_tool")
            .and_then(|t| t.plugin().map(|p| p.sha256().to_owned()))
            .expect("dup_tool")
    };
    let first = served(&host);
    for _ in 0..2 {
        record(&host, "dup_tool", json!({})).await;
    }
    let wasm = dir.path().join("dup.wasm");

    // A build whose output changed waits; the old one keeps serving.
    std::fs::copy(guest(DUP_B), &wasm).expect("copy");
    host.reload().await.expect("reload");
    assert_eq!(served(&host), first);
    let held = host
        .load_errors()
        .iter()
        .map(ToString::to_string)
        .find(|e| e.contains("changes 2 of 2 recorded calls"))
        .unwrap_or_else(|| panic!("{:?}", host.load_errors()));
    assert!(held.contains("--accept"), "{held}");
    let out = host
        .call("dup_tool", "{}", &CallOptions::default())
        .await
        .expect("call");
    assert!(out.text.contains("dup-a"), "{}", out.text);

    // A build that replays identically swaps in.
    let same = rebuilt(&std::fs::read(guest(DUP_A)).expect("read"));
    std::fs::write(&wasm, &same).expect("write");
    host.reload().await.expect("reload");
    assert_ne!(served(&host), first);
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());

    // A person accepts the changed build: it swaps in at the next reload
    // (with no recording of the served build, nothing holds it either way:
    // accept it against the first build's recordings).
    std::fs::copy(guest(DUP_A), &wasm).expect("copy");
    host.reload().await.expect("reload");
    assert_eq!(served(&host), first);
    std::fs::copy(guest(DUP_B), &wasm).expect("copy");
    host.reload().await.expect("reload");
    assert_eq!(served(&host), first, "held again");
    corral::replay::Recordings::open(RecordingsConfig::new(recordings.path()))
        .expect("open")
        .accept_file(&guest(DUP_B))
        .expect("accept");
    host.reload().await.expect("reload");
    assert_ne!(served(&host), first);
    let out = host
        .call("dup_tool", "{}", &CallOptions::default())
        .await
        .expect("call");
    assert!(out.text.contains("dup-b"), "{}", out.text);
}
