//! Progressive disclosure's facades through the library (what MCP shows is
//! `tests/mcp/python_disclosure.py`'s): generated per category and per
//! plugin, declared in `disclosure.toml` with nesting, every rule of the
//! file refused with a load error that names the fix (and then every tool
//! listed), a reload that picks up a changed file, and what facades save on
//! the first `tools/list` of 200 realistic tools (`o200k_base` tokens).

use std::path::Path;

use corral::{DisclosureMode, Host, LoadErrorReason};

use crate::support::{ENCODE, MATH, NOTES, TEXT, builder, catalog_dir, plugin_dir, tokens};

async fn host(dir: &Path, mode: DisclosureMode) -> Host {
    builder(dir).disclosure(mode).build().await.expect("host")
}

fn disclosure_errors(host: &Host) -> Vec<String> {
    host.load_errors()
        .into_iter()
        .filter(|e| e.path.ends_with(corral::DISCLOSURE_FILE))
        .map(|e| match e.reason {
            LoadErrorReason::InvalidDisclosure(message) => message,
            other => panic!("{other}"),
        })
        .collect()
}

#[tokio::test]
async fn facades_per_category_and_per_plugin() {
    let dir = plugin_dir(&[TEXT, MATH, NOTES, ENCODE]);
    let by_category = host(dir.path(), DisclosureMode::Category).await;
    let catalog = by_category.catalog();
    let facades = catalog.facades();
    let notes = facades
        .get("notes")
        .expect("a facade for the notes category");
    assert_eq!(
        notes.tools,
        ["notes_delete", "notes_list", "notes_read", "notes_write"]
    );
    assert!(notes.description.contains("notes_delete"), "{notes:?}");
    assert_eq!(facades.holder("sha256"), Some("encoding"));
    // Built-ins are never inside a facade.
    assert_eq!(facades.holder("execute_tool_plan"), None);
    // `math` has two tools in one category: a facade; a category of one tool
    // would stay listed on its own.
    assert!(facades.iter().all(|f| f.tools.len() >= 2), "{facades:?}");

    let by_plugin = host(dir.path(), DisclosureMode::Plugin).await;
    let catalog = by_plugin.catalog();
    let text = catalog
        .facades()
        .get("text")
        .expect("a facade for the text plugin");
    assert_eq!(text.tools, ["regex_extract", "slugify", "word_count"]);
}

#[tokio::test]
async fn a_disclosure_file_with_nesting_and_usage_notes() {
    let dir = plugin_dir(&[TEXT, NOTES]);
    std::fs::write(
        dir.path().join(corral::DISCLOSURE_FILE),
        "version = 1\n\
         [facades.workspace]\ndescription = \"Notes and text.\"\nfacades = [\"notes_kit\"]\n\
         categories = [\"text\"]\n\
         [facades.notes_kit]\ndescription = \"Notes.\"\ntools = [\"notes_*\"]\n\
         usage_notes = \"Writes replace.\"\nexclusive = true\n",
    )
    .expect("file");
    let host = host(dir.path(), DisclosureMode::File).await;
    assert!(
        disclosure_errors(&host).is_empty(),
        "{:?}",
        host.load_errors()
    );
    let catalog = host.catalog();
    let facades = catalog.facades();
    let top: Vec<&str> = facades.top_level().map(|f| f.name.as_str()).collect();
    assert_eq!(top, ["workspace"]);
    assert_eq!(facades.holder("notes_kit"), Some("workspace"));
    assert_eq!(facades.holder("notes_read"), Some("notes_kit"));
    assert_eq!(facades.holder("slugify"), Some("workspace"));
    let kit = facades.get("notes_kit").expect("kit");
    assert!(kit.exclusive);
    assert_eq!(kit.usage_notes.as_deref(), Some("Writes replace."));
}

#[tokio::test]
async fn a_disclosure_file_that_breaks_a_rule_is_refused_and_every_tool_listed() {
    let dir = plugin_dir(&[TEXT, NOTES]);
    let cases = [
        (
            "[facades.slugify]\ndescription = \"x\"\ntools = [\"notes_*\"]\n",
            "a served tool is called `slugify` too; rename the facade",
        ),
        (
            "[facades.a]\ndescription = \"x\"\ntools = [\"notes_*\"]\n\
             [facades.b]\ndescription = \"y\"\ntools = [\"notes_read\"]\n",
            "`notes_read` is in facades `a` and `b`; put it in one",
        ),
        (
            "[facades.a]\ndescription = \"x\"\nfacades = [\"b\"]\n\
             [facades.b]\ndescription = \"y\"\nfacades = [\"a\"]\n",
            "is nested inside itself",
        ),
        (
            "[facades.a]\ndescription = \"x\"\nfacades = [\"nowhere\"]\n",
            "it nests `nowhere`, which this file does not declare",
        ),
        (
            "[facades.a]\ndescription = \"x\"\ntools = [\"zzz_*\"]\n",
            "no served tool matches its tools, categories or plugins",
        ),
        (
            "[facades.a]\ndescription = \"x\"\nmembers = [\"notes_read\"]\n",
            "unknown field `members`",
        ),
        (
            "[facades.a]\ndescription = \"x\\u001b[2Jclear\"\ntools = [\"notes_*\"]\n",
            "the description of facade `a`",
        ),
    ];
    for (facades, expected) in cases {
        std::fs::write(
            dir.path().join(corral::DISCLOSURE_FILE),
            format!("version = 1\n{facades}"),
        )
        .expect("file");
        let host = host(dir.path(), DisclosureMode::File).await;
        let errors = disclosure_errors(&host);
        assert_eq!(errors.len(), 1, "{facades}: {errors:?}");
        assert!(errors[0].contains(expected), "{facades}: {}", errors[0]);
        assert!(host.catalog().facades().is_empty());
        // The tools themselves still load.
        assert!(host.tool("notes_read").is_some() && host.tool("slugify").is_some());
    }
}

#[tokio::test]
async fn a_reload_picks_up_a_changed_disclosure_file() {
    let dir = plugin_dir(&[TEXT, NOTES]);
    let host = host(dir.path(), DisclosureMode::File).await;
    assert!(host.catalog().facades().is_empty(), "no file, no facades");
    std::fs::write(
        dir.path().join(corral::DISCLOSURE_FILE),
        "version = 1\n[facades.notes_kit]\ndescription = \"Notes.\"\ntools = [\"notes_*\"]\n",
    )
    .expect("file");
    host.reload().await.expect("reload");
    assert_eq!(
        host.catalog().facades().holder("notes_write"),
        Some("notes_kit")
    );
}

/// Bytes and `o200k_base` tokens of a first `tools/list` result of `host`,
/// and the median tokens of one tool's definition as a model gets it (name,
/// description, `inputSchema`; clients keep annotations and `_meta` to
/// themselves).
fn first_list(host: &Host) -> (usize, usize, usize) {
    let server = corral_mcp::McpServer::new(host.clone());
    let tools = server.list(&[]);
    let mut each: Vec<usize> = tools
        .iter()
        .map(|t| {
            let definition = serde_json::json!({
                "name": t.name, "description": t.description, "inputSchema": t.input_schema,
            });
            tokens(&definition.to_string())
        })
        .collect();
    each.sort_unstable();
    // The result of `tools/list` is `{"tools": [...]}`.
    let text = serde_json::json!({ "tools": tools }).to_string();
    (text.len(), tokens(&text), each[each.len() / 2])
}

#[tokio::test]
async fn facades_cut_a_first_list_of_two_hundred_tools_twenty_fold() {
    let dir = catalog_dir();
    let all = host(dir.path(), DisclosureMode::Off).await;
    assert!(all.load_errors().is_empty(), "{:?}", all.load_errors());
    assert!(all.tools().len() >= 220, "{} tools", all.tools().len());
    let (bytes, off, median) = first_list(&all);
    assert!(
        (80..=200).contains(&median),
        "the median tool definition costs {median} tokens; a realistic catalog costs 80-200"
    );
    let facades = host(dir.path(), DisclosureMode::Category).await;
    let (bytes_on, on, _) = first_list(&facades);
    println!(
        "first tools/list, {} tools (median definition {median} tokens): {bytes} bytes, {off} \
         tokens without disclosure; {bytes_on} bytes, {on} tokens with a facade per category \
         ({:.1}x fewer tokens)",
        all.tools().len(),
        off as f64 / on as f64
    );
    assert!(off >= 20 * on, "{off} tokens against {on}: under 20x");
    // A model that asks for a category sees every tool of it.
    let catalog = facades.catalog();
    for facade in catalog.facades().iter() {
        let category: Vec<&str> = catalog
            .tools()
            .filter(|t| facade.tools.contains(&t.spec().name))
            .map(|t| t.spec().metadata.category.as_str())
            .collect();
        let same: Vec<String> = catalog
            .tools()
            .filter(|t| {
                category
                    .first()
                    .is_some_and(|c| *c == t.spec().metadata.category)
            })
            .map(|t| t.spec().name.clone())
            .collect();
        assert_eq!(facade.tools, same, "facade `{}`", facade.name);
    }
}
