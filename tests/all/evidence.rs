//! Least privilege from evidence through the `corral` binary: `policy
//! learn` runs a plugin's calls in a learning run, `policy suggest --write`
//! turns the denials into a suggested policy (a diff with the tools that
//! needed each line), `policy accept --suggested` puts it in force (making
//! its directories), the same call then passes, and `policy unused` lists
//! a grant nothing used as the line to delete (exit 1), and none when every
//! grant was used (exit 0).

use crate::cli::corral;
use crate::support::{NOTES, plugin_dir};

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn learn_suggest_accept_then_the_calls_pass_and_unused_grants_are_listed() {
    let dir = plugin_dir(&[NOTES]);
    let plugins = dir.path();
    let evidence = plugins.join("evidence");
    let evidence = evidence.to_str().expect("utf-8");
    let calls = plugins.join("calls.jsonl");
    std::fs::write(
        &calls,
        "{\"tool\": \"notes_write\", \"arguments\": {\"name\": \"todo\", \"text\": \"milk\"}}\n\
         {\"tool\": \"notes_list\", \"arguments\": {}}\n",
    )
    .expect("calls");
    let with = |args: &[&str]| {
        let mut all = vec!["--evidence-dir", evidence];
        all.extend_from_slice(args);
        corral(plugins, &all)
    };

    let out = with(&["policy", "learn", "notes", "--run", calls.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("learnt from 2 calls of notes"),
        "{}",
        text(&out)
    );

    // The publisher asks for a variable: named, since it cannot be learnt.
    std::fs::write(
        plugins.join("notes.policy.requested.toml"),
        "version = 1\n[environment]\npass = [\"NOTES_LOCALE\"]\n",
    )
    .expect("requested");
    let out = with(&["policy", "suggest", "notes", "--write"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("note: environment variable NOTES_LOCALE is requested by the publisher"),
        "{shown}"
    );
    assert!(shown.contains("+ [[filesystem]]  # notes_"), "{shown}");
    assert!(shown.contains("+ guest = \"/notes\""), "{shown}");
    assert!(shown.contains("+ access = \"read-write\""), "{shown}");
    assert!(shown.contains("learning runs included"), "{shown}");
    assert!(plugins.join("notes.policy.suggested.toml").is_file());
    // Inert until accepted: the plugin still has no grant.
    let out = with(&["call", "notes_write", "{\"name\": \"a\", \"text\": \"x\"}"]);
    assert!(!out.status.success(), "{}", text(&out));

    let out = with(&["policy", "accept", "notes", "--suggested"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(plugins.join("notes-files/notes").is_dir());
    let out = with(&["call", "notes_write", "{\"name\": \"a\", \"text\": \"x\"}"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(plugins.join("notes-files/notes/a.md").is_file());

    // Every grant used: exit 0.
    let out = with(&["policy", "unused", "notes", "--since", "1d"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // A grant nothing used is the line to delete: exit 1.
    let policy = plugins.join("notes.policy.toml");
    let mut current = std::fs::read_to_string(&policy).expect("policy");
    current.push_str("\n[http]\nallow = [\"https://api.example.org\"]\n");
    std::fs::write(&policy, current).expect("write");
    let out = with(&["policy", "unused", "notes", "--since", "1d"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("- [http.allow] \"https://api.example.org:443\""),
        "{shown}"
    );
    assert!(!shown.contains("[filesystem]"), "{shown}");
    let out = with(&["policy", "unused", "notes", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report[0]["grants"][0]["section"], "http.allow", "{report}");

    // A standing approval of a tool no call used is an exemption nobody
    // needs; one of a tool that ran is not listed.
    let approvals = plugins.join("approvals.json");
    std::fs::write(
        &approvals,
        serde_json::json!({"version": 1, "approvals": [
            {"tool": "notes_delete", "plugin": "notes", "sha256": "ab", "granted_at": "2026-11-01T00:00:00Z"},
            {"tool": "notes_write", "plugin": "notes", "sha256": "ab", "granted_at": "2026-11-01T00:00:00Z"},
        ]})
        .to_string(),
    )
    .expect("approvals");
    let file = approvals.to_str().expect("utf-8");
    let out = with(&["policy", "unused", "notes", "--standing-approvals", file]);
    let shown = text(&out);
    assert!(
        shown.contains("- [standing approvals] notes_delete (granted 2026-11-01T00:00:00Z)"),
        "{shown}"
    );
    assert!(!shown.contains("notes_write (granted"), "{shown}");
}
