//! Hot reload: a plugin replaced while calls run in a loop (zero failed calls,
//! the new version served afterwards), half-written files that never replace a
//! working version, added and removed plugins, calls in flight finishing on
//! their version, new versions that fail to resolve (a policy naming a missing
//! tool, a name another plugin serves) never replacing a working one, a
//! sequential tool staying sequential across a reload, and change
//! notifications. The file watcher has its own module (`watcher`).

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use corral::{ApprovalDecision, CallOptions, Host};
use corral::{ReviewFuture, ReviewRequest, Reviewer};

use crate::support::load::new_version;
use crate::support::{DUP_A, DUP_B, HOSTILE, cache, guest, host, plugin_dir, pool};

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn sha_of(host: &Host, tool: &str) -> String {
    host.tool(tool)
        .and_then(|t| t.plugin().map(|p| p.sha256().to_string()))
        .expect("a plugin tool")
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over
/// `path`: how a careful deploy replaces a plugin.
fn replace_atomically(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("wasm.tmp");
    std::fs::write(&tmp, bytes).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replacing_a_plugin_under_load_fails_no_call() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let path = dir.path().join(HOSTILE);
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, failures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (host, stop, calls, failures) =
            (host.clone(), stop.clone(), calls.clone(), failures.clone());
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let result = host
                    .call("echo", r#"{"text": "x"}"#, &CallOptions::default())
                    .await;
                calls.fetch_add(1, Ordering::SeqCst);
                if let Err(err) = result {
                    eprintln!("failed call: {err}");
                    failures.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }

    let mut last = String::new();
    for round in 0..5 {
        let bytes = new_version(HOSTILE, &format!("v{round}"));
        let before = calls.load(Ordering::SeqCst);
        replace_atomically(&path, &bytes);
        let report = host.reload().await.expect("reload");
        assert_eq!(report.kept, Vec::<std::path::PathBuf>::new());
        assert!(report.updated.contains(&"echo".to_string()), "{report:?}");
        last = sha256(&bytes);
        assert_eq!(sha_of(&host, "echo"), last);
        // Calls keep running across every swap.
        while calls.load(Ordering::SeqCst) < before + 20 {
            tokio::task::yield_now().await;
        }
    }
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.expect("worker");
    }
    assert!(calls.load(Ordering::SeqCst) >= 100);
    assert_eq!(
        failures.load(Ordering::SeqCst),
        0,
        "no call failed during reloads"
    );
    assert_eq!(sha_of(&host, "echo"), last, "the new version is served");
}

#[tokio::test]
async fn a_half_written_file_never_replaces_a_working_version() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let path = dir.path().join(HOSTILE);
    let old = sha_of(&host, "echo");
    let next = new_version(HOSTILE, "next");

    // A copy caught halfway.
    std::fs::write(&path, &next[..next.len() / 2]).expect("partial write");
    let report = host.reload().await.expect("reload");
    assert_eq!(report.kept, vec![path.clone()]);
    assert!(!report.tools_changed(), "{report:?}");
    assert!(
        report.errors[0]
            .to_string()
            .contains("not a valid component"),
        "{:?}",
        report.errors
    );
    assert_eq!(sha_of(&host, "echo"), old, "still the old version");
    crate::support::assert_still_serves(&host).await;

    // The copy finishes.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    file.write_all(&next[next.len() / 2..]).expect("rest");
    drop(file);
    let report = host.reload().await.expect("reload");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(sha_of(&host, "echo"), sha256(&next));
}

fn write_policy(dir: &Path, plugin: &str, text: &str) {
    let stem = plugin.trim_end_matches(".wasm");
    std::fs::write(dir.join(format!("{stem}.policy.toml")), text).expect("policy");
}

fn plugin_of(host: &Host, tool: &str) -> String {
    host.tool(tool)
        .and_then(|t| t.plugin().map(|p| p.name().to_string()))
        .unwrap_or_else(|| panic!("`{tool}` is not served"))
}

#[tokio::test]
async fn a_policy_naming_a_missing_tool_keeps_the_served_version() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let path = dir.path().join(HOSTILE);
    let old = sha_of(&host, "echo");

    write_policy(
        dir.path(),
        HOSTILE,
        "version = 1\n[approval]\nrequire = [\"ech\"]\n",
    );
    let report = host.reload().await.expect("reload");
    assert_eq!(report.kept, vec![path.clone()]);
    assert!(!report.tools_changed(), "{report:?}");
    let message = report.errors[0].to_string();
    assert!(
        message.contains("names `ech`, which this plugin does not provide"),
        "{message}"
    );
    assert_eq!(sha_of(&host, "echo"), old);
    assert!(
        !host
            .tool("echo")
            .expect("echo")
            .spec()
            .metadata
            .requires_approval,
        "the previous version runs under its previous policy"
    );
    crate::support::assert_still_serves(&host).await;

    // The policy is fixed: the new version (and its policy) is served.
    write_policy(
        dir.path(),
        HOSTILE,
        "version = 1\n[approval]\nrequire = [\"echo\"]\n",
    );
    let report = host.reload().await.expect("reload");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.updated.contains(&"echo".to_string()), "{report:?}");
    assert!(
        host.tool("echo")
            .expect("echo")
            .spec()
            .metadata
            .requires_approval
    );
}

#[tokio::test]
async fn a_newcomer_never_takes_a_name_from_a_served_tool() {
    // `fixture_dup_a.wasm` sorts first, so at startup it would win `dup_tool`;
    // dropped in beside a running `fixture_dup_b.wasm`, it is the one refused.
    let dir = plugin_dir(&[DUP_B]);
    let host = host(dir.path()).await;
    assert_eq!(plugin_of(&host, "dup_tool"), "fixture_dup_b");

    std::fs::copy(guest(DUP_A), dir.path().join(DUP_A)).expect("copy");
    let report = host.reload().await.expect("reload");
    assert!(!report.tools_changed(), "{report:?}");
    assert_eq!(report.kept, Vec::<std::path::PathBuf>::new());
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    let message = report.errors[0].to_string();
    assert!(
        message.contains(DUP_A) && message.contains("dup_tool") && message.contains(DUP_B),
        "{message}"
    );
    assert_eq!(plugin_of(&host, "dup_tool"), "fixture_dup_b");

    // A fresh start decides by file name, as documented.
    let fresh = self::host(dir.path()).await;
    assert_eq!(plugin_of(&fresh, "dup_tool"), "fixture_dup_a");
}

#[tokio::test]
async fn a_changed_plugin_that_takes_a_served_name_keeps_its_previous_version() {
    let dir = plugin_dir(&[DUP_A, HOSTILE]);
    let host = host(dir.path()).await;

    // `fixture_dup_a` sorts before `fixture_hostile`, and now wants `echo`.
    write_policy(
        dir.path(),
        DUP_A,
        "version = 1\n[presentation]\nrename = { dup_tool = \"echo\" }\n",
    );
    let report = host.reload().await.expect("reload");
    assert_eq!(report.kept, vec![dir.path().join(DUP_A)]);
    assert!(!report.tools_changed(), "{report:?}");
    assert!(
        report.errors[0].to_string().contains("echo"),
        "{:?}",
        report.errors
    );
    assert_eq!(plugin_of(&host, "echo"), "fixture_hostile");
    assert_eq!(plugin_of(&host, "dup_tool"), "fixture_dup_a");
    crate::support::assert_still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_tool_stays_sequential_across_a_reload() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let run = |host: Host| async move {
        let out = host
            .call("one_at_a_time", r#"{"ms": 400}"#, &CallOptions::default())
            .await
            .expect("call");
        let json = out.into_json().expect("json");
        (
            json["start_us"].as_u64().expect("start"),
            json["end_us"].as_u64().expect("end"),
        )
    };
    let first = tokio::spawn(run(host.clone()));
    // The first call is under way on the old catalog while the new version
    // compiles and loads.
    replace_atomically(&dir.path().join(HOSTILE), &new_version(HOSTILE, "next"));
    let report = host.reload().await.expect("reload");
    assert!(report.updated.contains(&"one_at_a_time".to_string()));
    let second = run(host.clone()).await;
    let first = first.await.expect("task");
    assert!(
        second.0 >= first.1 || first.0 >= second.1,
        "calls overlapped: {first:?} and {second:?}"
    );
}

#[tokio::test]
async fn plugins_come_and_go_and_subscribers_hear_of_it() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let mut changes = host.subscribe();
    let start = *changes.borrow_and_update();

    std::fs::copy(guest(DUP_A), dir.path().join(DUP_A)).expect("add");
    let report = host.reload().await.expect("reload");
    assert_eq!(report.added, ["dup_tool"]);
    assert!(changes.has_changed().expect("sender alive"));
    assert_eq!(*changes.borrow_and_update(), start + 1);

    let report = host.reload().await.expect("reload");
    assert!(!report.tools_changed(), "nothing changed: {report:?}");
    assert!(!changes.has_changed().expect("sender alive"));

    std::fs::remove_file(dir.path().join(DUP_A)).expect("remove");
    let report = host.reload().await.expect("reload");
    assert_eq!(report.removed, ["dup_tool"]);
    assert!(host.tool("dup_tool").is_none());
    assert_eq!(*changes.borrow_and_update(), start + 3);
}

/// Holds a guest's approval request until the test releases it: a call
/// parked inside its guest.
#[derive(Debug, Default)]
struct Held {
    entered: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

impl Reviewer for Held {
    fn name(&self) -> &str {
        "held"
    }

    fn review<'a>(&'a self, _request: &'a ReviewRequest) -> ReviewFuture<'a> {
        Box::pin(async move {
            self.entered.notify_one();
            self.release.notified().await;
            Ok(ApprovalDecision::Continue)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_finishes_on_the_version_it_started_with() {
    let dir = plugin_dir(&[HOSTILE]);
    let held = Arc::new(Held::default());
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .reviewer_arc(held.clone())
        .build()
        .await
        .expect("host");
    let call = {
        let host = host.clone();
        tokio::spawn(async move {
            host.call("ask", r#"{"message": "m"}"#, &CallOptions::default())
                .await
        })
    };
    // The guest is running and waiting on its approval: remove its plugin.
    held.entered.notified().await;
    std::fs::remove_file(dir.path().join(HOSTILE)).expect("remove");
    let report = host.reload().await.expect("reload");
    assert!(report.removed.contains(&"ask".to_string()));
    assert!(host.tool("ask").is_none());
    held.release.notify_one();
    let out = call
        .await
        .expect("task")
        .expect("the call that started finishes");
    assert_eq!(out.into_json().expect("json")["decision"], "continue");
}

/// Says "always" once, then fails the test if asked again.
#[derive(Debug, Default)]
struct AlwaysOnce {
    asked: AtomicUsize,
}

impl Reviewer for AlwaysOnce {
    fn name(&self) -> &str {
        "always-once"
    }

    fn review<'a>(&'a self, _request: &'a ReviewRequest) -> ReviewFuture<'a> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            Ok(if n == 0 {
                ApprovalDecision::ContinueAlways
            } else {
                ApprovalDecision::ExitEarly("asked again".into())
            })
        })
    }
}

#[tokio::test]
async fn a_standing_approval_stops_applying_to_a_reloaded_plugin() {
    let dir = plugin_dir(&[HOSTILE]);
    let reviewer = Arc::new(AlwaysOnce::default());
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .reviewer_arc(reviewer.clone())
        .build()
        .await
        .expect("host");
    let gated = |host: Host| async move {
        host.call("gated", r#"{"message": "m"}"#, &CallOptions::default())
            .await
    };
    gated(host.clone()).await.expect("approved always");
    gated(host.clone()).await.expect("standing");
    assert_eq!(reviewer.asked.load(Ordering::SeqCst), 1);

    replace_atomically(&dir.path().join(HOSTILE), &new_version(HOSTILE, "new"));
    host.reload().await.expect("reload");
    let err = gated(host.clone()).await.unwrap_err();
    assert_eq!(err.llm_text(), "Error: Rejected by reviewer: asked again");
    assert_eq!(reviewer.asked.load(Ordering::SeqCst), 2);
}
