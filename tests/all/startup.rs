//! Serving before compiling (`HostBuilder::serve_while_compiling`, on in
//! `corral serve`): plugins the component cache holds are served when
//! `build` returns; the others are compiled by one background reload, which
//! announces them; a call naming a tool not loaded yet waits for it. Tested
//! by order, not by timing: a `#[tokio::test]` runs on one thread, so the
//! background reload cannot start before the test first awaits.

use std::sync::{Arc, Mutex};

use corral::{CallOptions, ComponentCache, Host};

use crate::support::{ENCODE, HOSTILE, plugin_dir, pool};

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
