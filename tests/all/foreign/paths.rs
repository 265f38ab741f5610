//! Tools of a component of another world go every way any tool goes: a plan
//! with `$ref`s across waves, MCP `tools/list` and `tools/call` over stdio
//! (schemas with their docs, an `err` as `isError`), the manifest and
//! `tool_search`.

use corral::CallOptions;
use serde_json::{Value, json};

use super::{host, types_dir};
use crate::mcp::{Stdio_, text};

#[tokio::test]
async fn plans_the_manifest_and_tool_search_treat_them_like_any_tool() {
    let dir = types_dir(
        true,
        Some(
            "version = 1\n[metadata.kinds_divide]\ncategory = \"math\"\nkeywords = [\"quotient\"]\n",
        ),
    );
    let host = host(dir.path()).await;
    let plan = json!({"steps": [
        {"id": "hi", "tool": "greet", "arguments": {"name": "Ana"}},
        {"id": "again", "tool": "greet", "arguments": {"name": "$ref:hi"}},
        {"id": "half", "tool": "kinds_divide", "arguments": {"a": 1, "b": 2}},
        {"id": "zero", "tool": "kinds_divide", "arguments": {"a": 1, "b": 0}}
    ]});
    let out = host
        .call_value("execute_tool_plan", plan, &CallOptions::default())
        .await
        .expect("plan runs");
    let result = out.into_json().expect("json");
    let step = |id: &str| -> Value {
        result["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no step {id} in {result}"))
    };
    assert_eq!(
        result["waves"],
        json!([["hi", "half", "zero"], ["again"]]),
        "{result}"
    );
    assert_eq!(step("again")["output"], "Hello, Hello, Ana!!");
    assert_eq!(step("half")["output"], 0.5);
    assert!(
        step("zero")["error"]
            .to_string()
            .contains("cannot divide 1 by zero"),
        "{result}"
    );

    let manifest = host.manifest();
    let divide = manifest["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "kinds_divide")
        .cloned()
        .expect("in the manifest");
    assert_eq!(divide["metadata"]["category"], "math", "{divide}");

    let search = HostSearch::run(dir.path(), "quotient").await;
    assert!(search.contains("kinds_divide"), "{search}");
}

/// `tool_search` over the same directory.
struct HostSearch;

impl HostSearch {
    async fn run(dir: &std::path::Path, query: &str) -> String {
        let host = corral::Host::builder()
            .plugin_dir(dir)
            .pool(crate::support::pool())
            .cache(crate::support::cache())
            .tool_search(true)
            .build()
            .await
            .expect("host");
        host.call_value(
            "tool_search",
            json!({ "query": query }),
            &CallOptions::default(),
        )
        .await
        .expect("search")
        .text
    }
}

#[test]
fn mcp_lists_and_calls_them() {
    let dir = types_dir(true, None);
    let mut server = Stdio_::start(dir.path(), &[]);
    server.initialize(json!({}));
    let list = server.request(1, "tools/list", json!({}));
    let divide = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "kinds_divide")
        .cloned()
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(
        divide["inputSchema"]["properties"]["b"]["description"],
        "the divisor, not zero"
    );
    let ok = server.call(2, "kinds_divide", json!({"a": 3, "b": 4}));
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert_eq!(text(&ok), "0.75");
    let err = server.call(3, "kinds_divide", json!({"a": 3, "b": 0}));
    assert_eq!(err["result"]["isError"], true, "{err}");
    assert!(text(&err).contains("cannot divide 3 by zero"), "{err}");
    let refused = server.call(4, "kinds_only_blue", json!({"color": "mauve"}));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
}

#[tokio::test]
async fn a_reload_picks_up_a_changed_wit_beside_the_component() {
    let dir = types_dir(true, None);
    let host = host(dir.path()).await;
    assert_eq!(
        host.tool("greet").expect("greet").spec().description,
        "Greets someone by name."
    );
    // Nothing changed: the plugin is reused, no tool is updated.
    let report = host.reload().await.expect("reload");
    assert!(report.updated.is_empty(), "{report:?}");

    let wit = dir.path().join("types.wit");
    let text = std::fs::read_to_string(&wit).expect("read");
    std::fs::write(
        &wit,
        text.replace("Greets someone by name.", "Says hello to someone, by name."),
    )
    .expect("write");
    let report = host.reload().await.expect("reload");
    // `execute_code`'s description declares `greet`, so it changed too.
    assert_eq!(report.updated, ["execute_code", "greet"], "{report:?}");
    assert_eq!(
        host.tool("greet").expect("greet").spec().description,
        "Says hello to someone, by name."
    );
}

#[tokio::test]
async fn the_resilience_layers_apply_once_the_policy_declares_a_tool_idempotent() {
    let cache = "[resilience.tools.greet]\ncache = { ttl_ms = 600000 }\n";
    // Not idempotent by default: a cache is refused, saying how to declare it.
    let dir = types_dir(true, Some(&format!("version = 1\n{cache}")));
    let refused = host(dir.path()).await;
    let error = refused.load_errors()[0].to_string();
    assert!(error.contains("[metadata.<tool>]"), "{error}");

    let dir = types_dir(
        true,
        Some(&format!(
            "version = 1\n[metadata.greet]\nidempotent = true\n{cache}"
        )),
    );
    let host = host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let options = CallOptions::default();
    let first = host
        .call_value("greet", json!({"name": "Ana"}), &options)
        .await
        .expect("call");
    let second = host
        .call_value("greet", json!({"name": "Ana"}), &options)
        .await
        .expect("call");
    assert!(!first.cache_hit && second.cache_hit);
    assert_eq!(second.text, first.text);
}
