//! Serving before compiling (`HostBuilder::serve_while_compiling`, on in
//! `corral serve`): plugins the component cache holds are served when
//! `build` returns; the others are compiled by one background reload, which
//! announces them; a call naming a tool not loaded yet waits for it. Tested
//! by order, not by timing: a `#[tokio::test]` runs on one thread, so the
//! background reload cannot start before the test first awaits.
//!
//! And the warm start's digest memo: an unchanged plugin file is not read.

use std::sync::{Arc, Mutex};

use corral::{CallOptions, ComponentCache, Host};

use crate::support::{ANY_TYPES, ENCODE, HOSTILE, guest, guest_sha256, plugin_dir, pool};

/// Call options whose progress sink keeps every message.
fn recording() -> (CallOptions, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = CallOptions::default().with_progress(Arc::new(move |_tool: &str, m: &str| {
        sink.lock().expect("lock").push(m.to_string());
    }));
    (options, seen)
}

#[tokio::test]
async fn cached_plugins_serve_at_once_and_the_rest_arrive_after_compiling() {
    // A cache that holds `encode` only.
    let cache_dir = tempfile::tempdir().expect("cache");
    let cache = ComponentCache::in_dir(cache_dir.path());
    let warm = plugin_dir(&[ENCODE]);
    Host::builder()
        .plugin_dir(warm.path())
        .pool(pool())
        .cache(cache.clone())
        .build()
        .await
        .expect("warm the cache");

    let dir = plugin_dir(&[ENCODE, HOSTILE]);
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache)
        .serve_while_compiling(true)
        .build()
        .await
        .expect("host");
    let mut changes = host.subscribe();
    // `build` returned with the cached plugin served and the other pending.
    assert!(host.tool("base64_encode").is_some());
    assert!(host.tool("echo").is_none());
    assert_eq!(
        host.pending_plugins(),
        [dir.path().join("fixture_hostile.wasm")]
    );
    assert!(host.load_errors().is_empty());

    // A tool of the pending plugin: the call waits (saying so), then runs.
    let (options, seen) = recording();
    let out = host
        .call("echo", r#"{"text": "late"}"#, &options)
        .await
        .expect("echo, once compiled");
    assert_eq!(out.into_json().expect("json")["echo"], "late");
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("waiting for 1 plugin(s) still being compiled"),
        "{seen:?}"
    );
    assert!(host.pending_plugins().is_empty());
    assert!(
        changes.has_changed().expect("open"),
        "the new tools were announced"
    );
    assert_eq!(*changes.borrow_and_update(), 2);

    // Nothing pending: a cached tool and an unknown name answer at once.
    let (options, seen) = recording();
    host.call("base64_encode", r#"{"text": "hi"}"#, &options)
        .await
        .expect("cached tool");
    let err = host.call("no_such_tool", "{}", &options).await.unwrap_err();
    assert!(
        matches!(err, corral::CallError::UnknownTool { .. }),
        "{err}"
    );
    assert!(seen.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_call_for_a_name_no_pending_plugin_brings_is_unknown_once_they_load() {
    let cache_dir = tempfile::tempdir().expect("cache");
    let dir = plugin_dir(&[HOSTILE]);
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(ComponentCache::in_dir(cache_dir.path()))
        .serve_while_compiling(true)
        .build()
        .await
        .expect("host");
    // An empty cache: nothing but the built-ins is served yet.
    assert_eq!(host.pending_plugins().len(), 1);
    assert!(host.tool("echo").is_none());
    let (options, seen) = recording();
    let err = host.call("no_such_tool", "{}", &options).await.unwrap_err();
    assert!(
        matches!(err, corral::CallError::UnknownTool { .. }),
        "{err}"
    );
    assert_eq!(
        seen.lock().expect("lock").len(),
        1,
        "it waited for the compile"
    );
    assert!(
        host.tool("echo").is_some(),
        "the pending plugin loaded meanwhile"
    );
}

/// Waits until `path`'s change time is more than a second old, the age
/// from which the loader remembers a file's digest (a guest cargo built
/// moments ago is younger; the wait is the rule under test, at most 1 s).
fn settled(path: &std::path::Path) {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).expect("stat");
    let changed = std::time::UNIX_EPOCH
        + std::time::Duration::new(
            u64::try_from(meta.ctime()).expect("ctime"),
            u32::try_from(meta.ctime_nsec()).expect("ns"),
        );
    let settled_at = changed + std::time::Duration::from_millis(1100);
    if let Ok(wait) = settled_at.duration_since(std::time::SystemTime::now()) {
        std::thread::sleep(wait);
    }
}

#[tokio::test]
async fn a_warm_start_takes_a_settled_plugins_digest_from_the_memo_and_rereads_a_replaced_one() {
    // Symlinks to the built guests: the loader follows them to files whose
    // change time is settled (a copy would be new, and not remembered).
    // `c.wasm` is of another world: served in any-component mode, which
    // reads its bytes when the memo answered for them.
    let (encode, hostile, foreign) = (guest(ENCODE), guest(HOSTILE), guest(ANY_TYPES));
    for file in [&encode, &hostile, &foreign] {
        settled(file);
    }
    let dir = tempfile::tempdir().expect("dir");
    std::os::unix::fs::symlink(&encode, dir.path().join("a.wasm")).expect("symlink");
    std::os::unix::fs::symlink(&hostile, dir.path().join("b.wasm")).expect("symlink");
    std::os::unix::fs::symlink(&foreign, dir.path().join("c.wasm")).expect("symlink");
    let cache_dir = tempfile::tempdir().expect("cache");
    let build = || {
        Host::builder()
            .plugin_dir(dir.path())
            .pool(pool())
            .cache(ComponentCache::in_dir(cache_dir.path()))
            .build()
    };
    let host = build().await.expect("cold start");
    assert!(host.tool("base64_encode").is_some() && host.tool("echo").is_some());
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let tools = host.tools().len();
    drop(host);

    // The cold start remembered both digests, one memo file each.
    let memo_dir = cache_dir.path().join("digests");
    let memos: Vec<(std::path::PathBuf, String)> = std::fs::read_dir(&memo_dir)
        .expect("digests/")
        .map(|e| {
            let path = e.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("memo");
            (path, text)
        })
        .collect();
    let (encode_sha, hostile_sha) = (guest_sha256(ENCODE), guest_sha256(HOSTILE));
    let encode_memo = memos
        .iter()
        .find(|(_, text)| text.trim_end().ends_with(&encode_sha))
        .unwrap_or_else(|| panic!("no memo of encode's digest: {memos:?}"));
    assert!(
        memos
            .iter()
            .any(|(_, t)| t.trim_end().ends_with(&hostile_sha)),
        "{memos:?}"
    );
    assert_eq!(memos.len(), 3, "{memos:?}");

    // A warm start from the memo serves the same tools, the foreign
    // component's included.
    let host = build().await.expect("warm start");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    assert_eq!(host.tools().len(), tools);
    drop(host);

    // The memo answers for `a.wasm` but its cache entry is damaged: the
    // file is read after all, compiled again, and the entry rewritten.
    let entry = std::fs::read_dir(cache_dir.path())
        .expect("cache dir")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&encode_sha))
        })
        .expect("encode's cache entry");
    let mut bytes = std::fs::read(&entry).expect("entry");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&entry, &bytes).expect("damage");
    let host = build().await.expect("warm start over a damaged entry");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    assert_eq!(host.tools().len(), tools);
    drop(host);
    assert_ne!(std::fs::read(&entry).expect("entry"), bytes, "rewritten");

    // A forged line: `a.wasm`'s memo names the hostile fixture's digest.
    // The warm start believes it without reading `a.wasm`, so it loads the
    // compiled entry of that digest (the component that digest pins: the
    // memo has the cache directory's trust, which already runs code).
    let (memo_path, memo_text) = encode_memo;
    std::fs::write(memo_path, memo_text.replace(&encode_sha, &hostile_sha)).expect("forge");
    let host = build().await.expect("warm start");
    assert!(host.tool("base64_encode").is_none(), "a.wasm was not read");
    assert_eq!(host.load_errors().len(), 1, "{:?}", host.load_errors());
    drop(host);

    // `a.wasm` replaced by a copy of itself (another inode, a new change
    // time): no memo line is its, so it is read, hashed and loads as itself.
    std::fs::remove_file(dir.path().join("a.wasm")).expect("rm");
    std::fs::copy(&encode, dir.path().join("a.wasm")).expect("copy");
    let host = build().await.expect("start after the replacement");
    assert!(host.tool("base64_encode").is_some() && host.tool("echo").is_some());
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
}
