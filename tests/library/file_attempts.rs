//! Files in the evidence, and learning runs: a tool's file operations are
//! recorded by guest path and operation with the host path of their grant;
//! in a learning run (`HostBuilder::learning`) the plugin also gets an
//! empty read-only `/`, so opens outside its grants reach the host, fail
//! as they would have, and are recorded. The notes sample with no grant
//! learns exactly `/notes`, read-write because it wrote; accepting the
//! suggestion makes the same calls pass. A permissive run writes only to
//! scratch copies and reaches only the origins it was given.

use corral::{CallOptions, Generalise, Host};
use serde_json::json;

use crate::support::{HOSTILE, NOTES, builder, plugin_dir_with_policies};

async fn host(dir: &std::path::Path, learning: bool) -> Host {
    let mut b = builder(dir).evidence_dir(dir.join("evidence"));
    if learning {
        b = b.learning(["notes", "fixture_hostile"]);
    }
    let host = b.build().await.expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    host
}

async fn call(host: &Host, tool: &str, arguments: serde_json::Value) -> Result<(), String> {
    host.call(tool, &arguments.to_string(), &CallOptions::default())
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn notes_without_a_grant_learns_exactly_notes_read_write_and_then_works() {
    let dir = plugin_dir_with_policies(&[(NOTES, None)]);
    let learning = host(dir.path(), true).await;
    let write = json!({"name": "todo", "text": "buy milk"});
    let err = call(&learning, "notes_write", write.clone())
        .await
        .unwrap_err();
    assert!(!err.is_empty());
    call(&learning, "notes_list", json!({})).await.ok();

    let evidence = learning.evidence("notes").unwrap().expect("evidence");
    assert!(evidence.learning);
    let files: Vec<_> = evidence.tools.values().flat_map(|t| &t.files).collect();
    assert!(
        files.iter().any(|f| f.guest_path.starts_with("/notes")
            && f.host_path.is_none()
            && f.error.is_some()
            && matches!(f.op.as_str(), "create" | "write")),
        "{files:#?}"
    );
    // No grant, no host path; nothing outside /notes was touched.
    assert!(
        files.iter().all(|f| f.guest_path.starts_with("/notes")),
        "{files:#?}"
    );

    let suggestion =
        corral::suggest_policy("notes", "", &evidence, Generalise::Nothing).expect("a suggestion");
    let guests: Vec<&str> = suggestion
        .text
        .lines()
        .filter(|l| l.starts_with("guest = "))
        .collect();
    assert_eq!(guests, vec!["guest = \"/notes\""], "{}", suggestion.text);
    assert!(
        suggestion.text.contains("access = \"read-write\""),
        "{}",
        suggestion.text
    );
    assert!(
        suggestion.text.contains("host = \"notes-files/notes\""),
        "{}",
        suggestion.text
    );

    // Accepted (its host directory made), the same call passes outside a
    // learning run.
    std::fs::create_dir_all(dir.path().join("notes-files/notes")).expect("mkdir");
    std::fs::write(dir.path().join("notes.policy.toml"), &suggestion.text).expect("write");
    drop(learning);
    let served = host(dir.path(), false).await;
    call(&served, "notes_write", write)
        .await
        .expect("granted now");
    assert!(dir.path().join("notes-files/notes/todo.md").is_file());
    let evidence = served.evidence("notes").unwrap().expect("evidence");
    let granted = evidence.tools["notes_write"]
        .files
        .iter()
        .find(|f| f.error.is_none() && f.guest_path == "/notes/todo.md")
        .expect("the allowed write");
    assert!(
        granted
            .host_path
            .as_deref()
            .is_some_and(|p| p.ends_with("notes-files/notes/todo.md")),
        "{granted:?}"
    );
}

#[tokio::test]
async fn a_read_only_grant_refusing_a_write_is_suggested_read_write_and_only_in_learning_is_slash_there()
 {
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    let policy = format!(
        "version = 1\n[[filesystem]]\nhost = {:?}\nguest = \"/notes\"\naccess = \"read-only\"\n",
        data.display()
    );
    let plugins = plugin_dir_with_policies(&[(NOTES, Some(&policy)), (HOSTILE, None)]);
    let host = host(plugins.path(), false).await;
    call(&host, "notes_write", json!({"name": "a", "text": "x"}))
        .await
        .unwrap_err();
    let evidence = host.evidence("notes").unwrap().expect("evidence");
    let refused = evidence.tools["notes_write"]
        .files
        .iter()
        .find(|f| f.error.as_deref() == Some("not-permitted"))
        .expect("the refused write");
    assert!(refused.host_path.is_some(), "{refused:?}");
    let current = std::fs::read_to_string(plugins.path().join("notes.policy.toml")).unwrap();
    let suggestion =
        corral::suggest_policy("notes", &current, &evidence, Generalise::Nothing).unwrap();
    // The grant becomes read-write (and limits come from the peaks); it
    // stays the only directory.
    let diff = &suggestion.diff;
    let at = diff
        .iter()
        .position(|l| l == "- access = \"read-only\"")
        .expect("the old line");
    assert_eq!(
        diff[at + 1],
        "+ access = \"read-write\"  # written by notes_write (1 call)",
        "{diff:?}"
    );
    assert!(
        diff.iter()
            .all(|l| !l.contains("[[filesystem]]") || l.starts_with("  "))
    );
    assert!(diff.iter().any(|l| l.starts_with("+ fuel = ")), "{diff:?}");

    // Outside a learning run a path outside the grants never reaches the
    // host; in one, it does, and fails as it would have.
    call(&host, "read_file", json!({"path": "/etc/passwd"}))
        .await
        .unwrap_err();
    let seen = host.evidence("fixture_hostile").unwrap().expect("evidence");
    assert!(seen.tools["read_file"].files.is_empty());
    drop(host);
    let learning = self::host(plugins.path(), true).await;
    call(&learning, "read_file", json!({"path": "/etc/passwd"}))
        .await
        .unwrap_err();
    let seen = learning
        .evidence("fixture_hostile")
        .unwrap()
        .expect("evidence");
    let file = &seen.tools["read_file"].files;
    assert!(
        file.iter().any(|f| f.guest_path == "/etc/passwd"
            && f.host_path.is_none()
            && f.error.as_deref() == Some("no-entry")),
        "{file:?}"
    );
}

#[tokio::test]
async fn a_permissive_run_never_touches_the_real_directory_or_an_origin_not_given() {
    let dir = tempfile::tempdir().expect("dir");
    let real = dir.path().join("real-notes");
    std::fs::create_dir(&real).expect("mkdir");
    std::fs::write(real.join("kept.md"), "the real note").expect("write");
    let (given, other) = (
        crate::support::TestServer::start("given"),
        crate::support::TestServer::start("other"),
    );
    // The policy grants the real directory read-only and both origins.
    let notes = format!(
        "version = 1\n[[filesystem]]\nhost = {:?}\nguest = \"/notes\"\naccess = \"read-only\"\n",
        real.display()
    );
    let fetch = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\", \"http://127.0.0.1:{}\"]\n",
        given.port, other.port
    );
    let plugins =
        plugin_dir_with_policies(&[(NOTES, Some(&notes)), (crate::support::FETCH, Some(&fetch))]);
    let origin = corral::HostPattern::parse(&format!("http://127.0.0.1:{}", given.port)).unwrap();
    let host = builder(plugins.path())
        .learning(["notes", "fetch"])
        .learning_permissive(vec![origin])
        .build()
        .await
        .expect("host");
    // Writes land in the scratch copy, which started as a copy.
    call(&host, "notes_write", json!({"name": "new", "text": "x"}))
        .await
        .expect("allowed in the copy");
    call(
        &host,
        "notes_write",
        json!({"name": "kept", "text": "changed"}),
    )
    .await
    .expect("allowed in the copy");
    assert!(!real.join("new.md").exists());
    assert_eq!(
        std::fs::read_to_string(real.join("kept.md")).unwrap(),
        "the real note"
    );
    // Only the origin given is reachable, whatever the policy allows.
    let url = |port: u16| json!({"url": format!("http://127.0.0.1:{port}/")});
    call(&host, "fetch_url", url(given.port))
        .await
        .expect("the given origin");
    call(&host, "fetch_url", url(other.port)).await.unwrap_err();
    assert_eq!((given.hits(), other.hits()), (1, 0));
    let evidence = host.evidence("notes").unwrap().expect("evidence");
    assert!(evidence.learning);
    let writes: Vec<_> = evidence.tools["notes_write"]
        .files
        .iter()
        .filter(|f| f.error.is_none() && f.op == "create")
        .collect();
    assert!(
        !writes.is_empty(),
        "{:?}",
        evidence.tools["notes_write"].files
    );
    assert!(
        writes
            .iter()
            .all(|f| !f.host_path.as_deref().unwrap_or("").contains("real-notes")),
        "{writes:?}"
    );
}
