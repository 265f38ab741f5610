//! The file watcher (`Host::watch`): a plugin dropped in is served, a file
//! rewritten without pause still reloads (the burst cap), and a plugin
//! directory that goes away and comes back is watched again, and a policy
//! directory shaped like a Kubernetes ConfigMap volume reloads on its swap.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::support::{DUP_A, HOSTILE, guest, host, plugin_dir};

/// Waits for the next change of the tool set, failing after 30 s.
async fn next_change(changes: &mut watch::Receiver<u64>, what: &str) {
    tokio::time::timeout(Duration::from_secs(30), changes.changed())
        .await
        .unwrap_or_else(|_| panic!("no list change within 30 s: {what}"))
        .expect("sender alive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_reloads_when_a_plugin_is_dropped_in() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let mut changes = host.subscribe();
    changes.borrow_and_update();
    let _watcher = host.watch().expect("watch");

    let tmp = dir.path().join("incoming.tmp");
    std::fs::copy(guest(DUP_A), &tmp).expect("copy");
    std::fs::rename(&tmp, dir.path().join(DUP_A)).expect("drop in");
    next_change(&mut changes, "a plugin dropped in").await;
    assert!(host.tool("dup_tool").is_some());
}

/// Before the burst cap, a file rewritten every 50 ms never left the
/// directory quiet for the debounce and never reloaded while the writes went
/// on. Now the reload comes while they still do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_rewritten_without_pause_still_reloads() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let before = host
        .tool("echo")
        .expect("echo")
        .plugin()
        .expect("plugin")
        .sha256()
        .to_string();
    let mut changes = host.subscribe();
    changes.borrow_and_update();
    let _watcher = host.watch().expect("watch");

    // Prebuilt versions, so each reload hits the compile cache.
    let versions: Vec<Vec<u8>> = (0..4)
        .map(|i| crate::support::load::new_version(HOSTILE, &format!("w{i}")))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (path, stop) = (dir.path().join(HOSTILE), stop.clone());
        std::thread::spawn(move || {
            let mut writes = 0usize;
            // Bounded: 30 s of writes at most.
            while !stop.load(Ordering::SeqCst) && writes < 600 {
                std::fs::write(&path, &versions[writes % versions.len()]).expect("write");
                writes += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            writes
        })
    };
    next_change(&mut changes, "a plugin rewritten every 50 ms").await;
    let still_writing = !writer.is_finished();
    stop.store(true, Ordering::SeqCst);
    let writes = writer.join().expect("writer");
    assert!(
        still_writing,
        "the reload came only after {writes} writes stopped"
    );
    let after = host.tool("echo").expect("echo still served");
    assert_ne!(after.plugin().expect("plugin").sha256(), before);
}

/// The directory renamed away (a deploy swapping it), then deleted and made
/// again: each time the host keeps serving what it had, and serves the new
/// directory's plugins once it is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_directory_that_goes_away_and_comes_back_is_watched_again() {
    let root = tempfile::tempdir().expect("tempdir");
    let plugins = root.path().join("plugins");
    std::fs::create_dir(&plugins).expect("mkdir");
    std::fs::copy(guest(HOSTILE), plugins.join(HOSTILE)).expect("copy");
    let host = host(&plugins).await;
    let mut changes = host.subscribe();
    changes.borrow_and_update();
    let _watcher = host.watch().expect("watch");

    // Renamed away: still serving.
    std::fs::rename(&plugins, root.path().join("old")).expect("rename away");
    crate::support::assert_still_serves(&host).await;
    // A new directory in its place, with one more plugin.
    let next = root.path().join("next");
    std::fs::create_dir(&next).expect("mkdir");
    std::fs::copy(guest(HOSTILE), next.join(HOSTILE)).expect("copy");
    std::fs::copy(guest(DUP_A), next.join(DUP_A)).expect("copy");
    std::fs::rename(&next, &plugins).expect("swap in");
    next_change(&mut changes, "a directory swapped in").await;
    assert!(
        host.tool("dup_tool").is_some(),
        "the new directory is served"
    );

    // Deleted: still serving; made again without the extra plugin.
    std::fs::remove_dir_all(&plugins).expect("rm -r");
    crate::support::assert_still_serves(&host).await;
    assert!(
        host.tool("dup_tool").is_some(),
        "nothing dropped while it is gone"
    );
    std::fs::create_dir(&next).expect("mkdir");
    std::fs::copy(guest(HOSTILE), next.join(HOSTILE)).expect("copy");
    std::fs::rename(&next, &plugins).expect("made again");
    next_change(&mut changes, "a directory made again").await;
    assert!(
        host.tool("dup_tool").is_none(),
        "the plugin left with the old directory"
    );
    crate::support::assert_still_serves(&host).await;
}

/// Policies from a directory of their own, laid out as Kubernetes mounts a
/// ConfigMap: each file a link through `..data` to a timestamped directory,
/// updated by swapping `..data` (the policy files themselves never change).
/// The policy applies, and the swap reloads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_from_a_configmap_shaped_directory_apply_and_reload_on_a_swap() {
    use std::os::unix::fs::symlink;
    let dir = plugin_dir(&[HOSTILE]);
    let policies = tempfile::tempdir().expect("policy dir");
    let name = HOSTILE.replace(".wasm", ".policy.toml");
    let version = |stamp: &str, description: &str| {
        let data = policies.path().join(stamp);
        std::fs::create_dir(&data).expect("data dir");
        std::fs::write(
            data.join(&name),
            format!("version = 1\n[presentation]\ndescriptions = {{ echo = \"{description}\" }}\n"),
        )
        .expect("policy");
    };
    version("..2026_11_26_01", "Echo, first edition.");
    symlink("..2026_11_26_01", policies.path().join("..data")).expect("..data");
    symlink(format!("..data/{name}"), policies.path().join(&name)).expect("policy link");

    let host = corral::Host::builder()
        .plugin_dir(dir.path())
        .policy_dir(policies.path())
        .pool(crate::support::pool())
        .cache(crate::support::cache())
        .build()
        .await
        .expect("host");
    let description =
        |host: &corral::Host| host.tool("echo").expect("echo").spec().description.clone();
    assert_eq!(description(&host), "Echo, first edition.");
    assert!(
        !dir.path().join(&name).exists(),
        "nothing beside the plugin"
    );
    let mut changes = host.subscribe();
    changes.borrow_and_update();
    let _watcher = host.watch().expect("watch");

    // The kubelet's update: a new directory, a new link renamed over ..data.
    version("..2026_11_26_02", "Echo, second edition.");
    symlink("..2026_11_26_02", policies.path().join("..data_tmp")).expect("link");
    std::fs::rename(
        policies.path().join("..data_tmp"),
        policies.path().join("..data"),
    )
    .expect("swap");
    std::fs::remove_dir_all(policies.path().join("..2026_11_26_01")).expect("old");
    next_change(&mut changes, "the policy directory's swap").await;
    assert_eq!(description(&host), "Echo, second edition.");
}
