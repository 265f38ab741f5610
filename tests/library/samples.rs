//! The bundled sample tools: each works on valid arguments, rejects invalid
//! ones clearly, and returns structured JSON.

use corral::{CallError, Host};
use serde_json::json;

use crate::support::{SAMPLES, assert_described_for_a_model, call, host, plugin_dir};

async fn samples() -> (tempfile::TempDir, Host) {
    let dir = plugin_dir(SAMPLES);
    let host = host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (dir, host)
}

#[tokio::test]
async fn every_sample_tool_is_described_for_a_model() {
    let (_dir, host) = samples().await;
    let specs = host.specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "base64_decode",
            "base64_encode",
            "evaluate",
            "execute_code",
            "execute_tool_plan",
            "fetch_url",
            "json_query",
            "json_stats",
            "notes_delete",
            "notes_list",
            "notes_read",
            "notes_write",
            "regex_extract",
            "sha256",
            "slugify",
            "statistics",
            "word_count"
        ]
    );
    for spec in &specs {
        // Doc comments on argument fields become parameter descriptions.
        assert_described_for_a_model(spec);
        assert!(
            spec.parameters.get("title").is_none(),
            "no Rust type names leak"
        );
    }
}

#[tokio::test]
async fn text_tools() {
    let (_dir, host) = samples().await;
    let counts = call(
        &host,
        "word_count",
        json!({ "text": "One two. Three!\nFour" }),
    )
    .await;
    assert_eq!(
        counts.expect("ok"),
        json!({ "words": 4, "characters": 20, "lines": 2, "sentences": 3 })
    );
    let slug = call(&host, "slugify", json!({ "text": "Hello, Wörld! 2026" })).await;
    assert_eq!(slug.expect("ok")["slug"], "hello-world-2026");
    let found = call(
        &host,
        "regex_extract",
        json!({ "text": "a=1, b=22", "pattern": r"(?P<key>\w)=(\d+)" }),
    )
    .await
    .expect("ok");
    assert_eq!(found["count"], 2);
    assert_eq!(
        found["matches"][1],
        json!({ "match": "b=22", "start": 5, "groups": { "key": "b", "2": "22" } })
    );
    let err = call(
        &host,
        "regex_extract",
        json!({ "text": "x", "pattern": "(" }),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, CallError::InvalidArguments { problems, .. } if problems[0].starts_with("invalid `pattern`")),
        "{err:?}"
    );
    let err = call(
        &host,
        "regex_extract",
        json!({ "text": "x", "pattern": "x", "limit": 0 }),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("`/limit`"), "{err}");
}

#[tokio::test]
async fn math_tools() {
    let (_dir, host) = samples().await;
    let out = call(&host, "evaluate", json!({ "expression": "(2 + 3) * 4" })).await;
    assert_eq!(out.expect("ok")["result"], 20);
    let out = call(&host, "evaluate", json!({ "expression": "7.0 / 2" })).await;
    assert_eq!(out.expect("ok")["result"], 3.5);
    let err = call(&host, "evaluate", json!({ "expression": "2 +" }))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot evaluate `2 +`"), "{err}");
    let stats = call(&host, "statistics", json!({ "values": [4, 1, 3, 2] }))
        .await
        .expect("ok");
    assert_eq!(stats["median"], 2.5);
    assert_eq!(stats["mean"], 2.5);
    assert_eq!(stats["min"], 1.0);
    let err = call(&host, "statistics", json!({ "values": [] }))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`/values`"), "{err}");
}

#[tokio::test]
async fn json_tools() {
    let (_dir, host) = samples().await;
    let document = json!({ "books": [
        { "title": "A", "price": 8 },
        { "title": "B", "price": 12 },
        { "title": "C", "price": 5 },
    ]});
    let out = call(
        &host,
        "json_query",
        json!({ "document": document, "path": "$.books[?@.price < 10].title" }),
    )
    .await
    .expect("ok");
    assert_eq!(out, json!({ "count": 2, "matches": ["A", "C"] }));
    let err = call(&host, "json_query", json!({ "document": {}, "path": "$[" }))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("invalid JSONPath"), "{err}");
    let stats = call(&host, "json_stats", json!({ "document": document }))
        .await
        .expect("ok");
    assert_eq!(stats["depth"], 4);
    assert_eq!(stats["numbers"], 3);
    assert_eq!(stats["top_level_keys"], json!(["books"]));
}

#[tokio::test]
async fn encode_tools() {
    let (_dir, host) = samples().await;
    let out = call(&host, "sha256", json!({ "text": "abc" }))
        .await
        .expect("ok");
    assert_eq!(
        out["sha256"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let out = call(&host, "base64_encode", json!({ "text": "héllo?" }))
        .await
        .expect("ok");
    assert_eq!(out["base64"], "aMOpbGxvPw==");
    let out = call(
        &host,
        "base64_encode",
        json!({ "text": "héllo?", "url_safe": true }),
    )
    .await
    .expect("ok");
    assert_eq!(out["base64"], "aMOpbGxvPw");
    for encoded in ["aMOpbGxvPw==", "aMOpbGxvPw"] {
        let out = call(&host, "base64_decode", json!({ "base64": encoded }))
            .await
            .expect("ok");
        assert_eq!(out["text"], "héllo?");
    }
    let err = call(&host, "base64_decode", json!({ "base64": "!!!" }))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
    let err = call(&host, "base64_decode", json!({ "base64": "/w==" }))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::ToolFailed { message, .. } if message.contains("not UTF-8")),
        "{err:?}"
    );
}

#[tokio::test]
async fn notes_tools_without_a_granted_directory() {
    let (_dir, host) = samples().await;
    assert!(host.requires_approval("notes_delete"));
    assert!(!host.requires_approval("notes_write"));
    // Deny by default: the plugin has no filesystem and says what to grant.
    let err = call(&host, "notes_list", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), "tool_failed");
    assert!(
        err.to_string()
            .contains("the host did not grant `/notes` to this plugin"),
        "{err}"
    );
    // Names are checked by the schema before the guest runs: no path tricks.
    let err = call(&host, "notes_read", json!({"name": "../etc/passwd"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_arguments");
    assert!(err.to_string().contains("`/name`"), "{err}");
}
