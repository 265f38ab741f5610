//! Least privilege from evidence through the library: what a tool's calls
//! attempt is recorded per tool (`Host::evidence`), a suggestion grants
//! exactly what was denied and accepting it makes the same calls pass, and
//! the grants nothing used are reported. Learning runs (files outside the
//! grants): `file_attempts.rs`; the CLI: `tests/all/evidence.rs`.

use std::path::Path;

use corral::{CallOptions, Generalise, Host};
use serde_json::json;

use crate::support::{FETCH, TestServer, builder, plugin_dir_with_policies};

async fn host(dir: &Path) -> Host {
    let host = builder(dir)
        .evidence_dir(dir.join("evidence"))
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    host
}

async fn fetch(host: &Host, port: u16) -> bool {
    let arguments = json!({ "url": format!("http://127.0.0.1:{port}/x") }).to_string();
    host.call("fetch_url", &arguments, &CallOptions::default())
        .await
        .is_ok()
}

#[tokio::test]
async fn denied_origins_become_exactly_the_suggested_allow_list() {
    let (a, b) = (TestServer::start("a"), TestServer::start("b"));
    let dir = plugin_dir_with_policies(&[(FETCH, None)]);
    let host = host(dir.path()).await;
    // Three fetches to two origins, all denied: no allow-list.
    assert!(!fetch(&host, a.port).await);
    assert!(!fetch(&host, a.port).await);
    assert!(!fetch(&host, b.port).await);
    assert_eq!(a.hits() + b.hits(), 0);

    let evidence = host.evidence("fetch").unwrap().expect("evidence");
    let tool = &evidence.tools["fetch_url"];
    assert_eq!(tool.calls.count, 3);
    assert!(tool.peaks.fuel > 0 && tool.peaks.memory_bytes > 0);
    let mut seen: Vec<(String, Option<String>, u64)> = tool
        .http
        .iter()
        .map(|h| (h.origin.clone(), h.denied.clone(), h.seen.count))
        .collect();
    seen.sort();
    let denied = Some("not-granted".to_string());
    let mut wanted = vec![
        (format!("http://127.0.0.1:{}", a.port), denied.clone(), 2),
        (format!("http://127.0.0.1:{}", b.port), denied, 1),
    ];
    wanted.sort();
    assert_eq!(seen, wanted);

    let suggestion =
        corral::suggest_policy("fetch", "", &evidence, Generalise::Nothing).expect("a suggestion");
    let origins: Vec<&str> = suggestion
        .text
        .lines()
        .filter(|l| l.trim_start().starts_with("\"http"))
        .collect();
    assert_eq!(origins.len(), 2, "{}", suggestion.text);
    assert!(
        suggestion.text.contains(&format!(
            "\"http://127.0.0.1:{}\",  # fetch_url (2 calls)",
            a.port
        )),
        "{}",
        suggestion.text
    );
    assert!(suggestion.diff.iter().all(|l| !l.starts_with("- ")));

    // Accepted, the same calls pass.
    std::fs::write(dir.path().join("fetch.policy.toml"), &suggestion.text).expect("write");
    host.reload().await.expect("reload");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    assert!(fetch(&host, a.port).await);
    assert!(fetch(&host, b.port).await);
    assert_eq!((a.hits(), b.hits()), (1, 1));

    // Flushed on request (and when the host goes), merged into one file.
    host.flush_evidence().expect("flush");
    let file = corral::read_evidence(&dir.path().join("evidence"), "fetch")
        .unwrap()
        .expect("a file");
    assert_eq!(file.tools["fetch_url"].calls.count, 5);
}

#[tokio::test]
async fn of_three_grants_the_two_never_used_are_reported_across_a_reload() {
    let (used, idle) = (TestServer::start("used"), TestServer::start("idle"));
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\", \"http://127.0.0.1:{}\", \
         \"https://api.example.org\"]\n",
        used.port, idle.port
    );
    let dir = plugin_dir_with_policies(&[(FETCH, Some(&policy))]);
    let host = host(dir.path()).await;
    assert!(fetch(&host, used.port).await);
    // Unchanged bytes: the reload keeps what was seen.
    host.reload().await.expect("reload");
    assert!(fetch(&host, used.port).await);
    let evidence = host.evidence("fetch").unwrap().expect("evidence");
    assert_eq!(evidence.tools["fetch_url"].calls.count, 2);

    let parsed =
        corral::Policy::parse(&policy, &dir.path().join("fetch.policy.toml")).expect("policy");
    let report = corral::unused_grants("fetch", &parsed, Some(&evidence), 0);
    let lines: Vec<&str> = report.grants.iter().map(|g| g.line.as_str()).collect();
    assert_eq!(
        lines,
        vec![
            format!("\"http://127.0.0.1:{}\"", idle.port).as_str(),
            "\"https://api.example.org:443\""
        ]
    );
    assert!(
        report
            .grants
            .iter()
            .all(|g| g.section == "http.allow" && g.verdict == corral::UnusedVerdict::Unused)
    );
    assert_eq!(report.calls, 2);
    // A window after the calls: every grant unused.
    let later = corral::unused_grants("fetch", &parsed, Some(&evidence), u64::MAX);
    assert_eq!(later.grants.len(), 3);
}
