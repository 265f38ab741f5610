//! The evidence rules: aggregation and its bounds, merging across
//! processes, the suggestion's edits, and that a suggestion is never wider
//! than the evidence (a property test over random access sets).

use proptest::prelude::*;

use super::suggest::{Generalise, collapse, directory_of};
use super::*;

fn usage(fuel: u64) -> corral_sandbox::Usage {
    corral_sandbox::Usage {
        fuel,
        memory_peak: 2 << 20,
        wall: std::time::Duration::from_millis(30),
        egress_bytes: 0,
    }
}

fn http(origin: &str, denied: Option<corral_sandbox::Denial>) -> corral_sandbox::Attempts {
    let mut attempts = corral_sandbox::Attempts::default();
    attempts.http.push(corral_sandbox::HttpAttempt {
        origin: origin.into(),
        method: "GET".into(),
        denied,
        count: 2,
    });
    attempts
}

#[test]
fn runs_add_up_per_tool_and_a_new_build_starts_afresh() {
    let book = EvidenceBook::new(None, Default::default(), None).unwrap();
    let name: Arc<str> = "p".into();
    let denied = http(
        "http://127.0.0.1:9",
        Some(corral_sandbox::Denial::NotGranted),
    );
    for fuel in [10, 30, 20] {
        book.record(
            &name,
            "aaa",
            "fetch",
            "{}",
            &Observed {
                usage: &usage(fuel),
                attempts: &denied,
            },
        );
    }
    let e = book.snapshot("p").unwrap().expect("evidence");
    let tool = &e.tools["fetch"];
    assert_eq!(tool.calls.count, 3);
    assert_eq!(tool.peaks.fuel, 30);
    assert_eq!(tool.http.len(), 1);
    assert_eq!(tool.http[0].seen.count, 3, "counted in calls that made it");
    assert_eq!(
        tool.http[0].seen.examples.len(),
        1,
        "one distinct argument text"
    );
    // Another build's first run replaces it.
    book.record(
        &name,
        "bbb",
        "fetch",
        "{}",
        &Observed {
            usage: &usage(1),
            attempts: &corral_sandbox::Attempts::default(),
        },
    );
    let e = book.snapshot("p").unwrap().expect("evidence");
    assert_eq!(
        (e.sha256.as_str(), e.tools["fetch"].calls.count),
        ("bbb", 1)
    );
}

#[test]
fn flushes_merge_into_one_file_across_books() {
    let dir = tempfile::tempdir().unwrap();
    let name: Arc<str> = "p".into();
    let ok = http("https://api.example.com:443", None);
    for _ in 0..2 {
        let book =
            EvidenceBook::new(Some(dir.path().to_path_buf()), Default::default(), None).unwrap();
        book.record(
            &name,
            "aaa",
            "t",
            "{\"a\":1}",
            &Observed {
                usage: &usage(5),
                attempts: &ok,
            },
        );
        book.flush().unwrap();
        // Flushed: nothing left in memory to add twice.
        book.flush().unwrap();
    }
    let e = read_evidence(dir.path(), "p").unwrap().expect("a file");
    assert_eq!(e.tools["t"].calls.count, 2);
    assert_eq!(e.tools["t"].http[0].seen.count, 2);
}

#[test]
fn a_suggestion_adds_what_was_denied_and_says_why() {
    let mut e = PluginEvidence::new("fetcher", "aaa");
    let mut tool = ToolEvidence {
        calls: Seen {
            count: 3,
            first: 1,
            last: 2,
            examples: vec![],
        },
        peaks: Peaks {
            fuel: 1_234_567,
            memory_bytes: 3 << 20,
            wall_ms: 40,
        },
        ..ToolEvidence::default()
    };
    for origin in ["http://127.0.0.1:8080", "https://a.example.com:443"] {
        tool.http.push(HttpSeen {
            origin: origin.into(),
            method: "GET".into(),
            denied: Some("not-granted".into()),
            seen: Seen {
                count: 2,
                first: 1,
                last: 2,
                examples: vec![],
            },
        });
    }
    e.tools.insert("fetch_url".into(), tool);
    let current = "version = 1\n\n[http]\nallow = [\"https://kept.example.org\"]\n";
    let s = suggest("fetcher", current, &e, Generalise::Nothing).unwrap();
    assert!(
        s.text
            .contains("\"http://127.0.0.1:8080\",  # fetch_url (2 calls)"),
        "{}",
        s.text
    );
    assert!(
        s.text
            .contains("\"https://a.example.com\",  # fetch_url (2 calls)"),
        "{}",
        s.text
    );
    assert!(
        s.text.contains("\"https://kept.example.org\","),
        "{}",
        s.text
    );
    assert!(
        s.text
            .contains("fuel = 2500000  # peak 1234567 × 2, by fetch_url (3 calls)"),
        "{}",
        s.text
    );
    assert!(s.text.contains("memory_mib = 6"), "{}", s.text);
    assert!(
        s.diff
            .iter()
            .any(|l| l.starts_with("- allow = [\"https://kept")),
        "{:?}",
        s.diff
    );
    crate::Policy::parse(&s.text, std::path::Path::new("/x/fetcher.policy.toml"))
        .expect("the suggestion is a valid policy");
}

#[test]
fn the_root_and_its_files_are_never_a_grant() {
    assert_eq!(
        directory_of("/notes/a.md", "write").as_deref(),
        Some("/notes")
    );
    assert_eq!(directory_of("/notes", "list").as_deref(), Some("/notes"));
    assert_eq!(directory_of("/a.md", "read"), None);
    assert_eq!(directory_of("/", "list"), None);
    assert_eq!(
        collapse([
            ("/notes/a.md", "read"),
            ("/notes/x/b.md", "create"),
            ("/etc/h", "read")
        ]),
        vec![("/etc".to_string(), false), ("/notes".to_string(), true)]
    );
}

fn path() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop::sample::select(vec!["a", "b", "c", "notes", "d"]),
        1..5,
    )
    .prop_map(|parts| format!("/{}", parts.join("/")))
}

fn op() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["read", "write", "create", "remove", "list"])
}

proptest! {
    /// Every suggested directory is one an access needed (the parent of a
    /// path, or a listed directory), never one above; every access is
    /// covered; read-write only when a change was seen under it.
    #[test]
    fn a_suggestion_is_never_wider_than_the_evidence(seen in proptest::collection::vec((path(), op()), 0..24)) {
        let pairs: Vec<(&str, &str)> = seen.iter().map(|(p, o)| (p.as_str(), *o)).collect();
        let dirs = collapse(pairs.iter().copied());
        let needed: Vec<String> = pairs.iter().filter_map(|(p, o)| directory_of(p, o)).collect();
        for (dir, writes) in &dirs {
            prop_assert!(needed.contains(dir), "{dir} is no access's directory");
            let inside = |p: &str| p == dir || p.starts_with(&format!("{dir}/"));
            let changed = pairs.iter().any(|(p, o)| inside(p) && matches!(*o, "write" | "create" | "remove"));
            prop_assert_eq!(*writes, changed);
        }
        for need in &needed {
            prop_assert!(dirs.iter().any(|(d, _)| need == d || need.starts_with(&format!("{d}/"))), "{need} not covered");
        }
    }
}
