//! Discovery for large tool sets (TnsAI's search tool, Embabel's tool groups
//! and one-shot tools; `docs/references.md`): `tool_search` and
//! its query forms, tool groups with checked permissions, the selection of
//! served tools (`groups`, `exclude_tools`; library, CLI and MCP),
//! one-shot-per-loop tools, and policy description replacement.

use std::path::Path;
use std::process::Command;

use corral::{CallContext, CallError, CallOptions, Host, HostBuilder, LoadErrorReason};
use serde_json::{Value, json};

use crate::mcp::{Stdio_, cache_dir, corral_bin, text};
use crate::support::{ENCODE, FETCH, MATH, NOTES, TEXT, builder, plugin_dir};

async fn host(dir: &Path, configure: impl FnOnce(HostBuilder) -> HostBuilder) -> Host {
    configure(builder(dir)).build().await.expect("host")
}

async fn search(host: &Host, arguments: Value) -> Result<Value, CallError> {
    host.call_value("tool_search", arguments, &CallOptions::default())
        .await
        .map(|out| out.into_json().expect("tool_search answers JSON"))
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .expect("array")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect()
}

#[tokio::test]
async fn tool_search_is_off_by_default_and_its_name_is_reserved() {
    let dir = plugin_dir(&[ENCODE]);
    let plain = host(dir.path(), |b| b).await;
    let err = search(&plain, json!({"query": "list"})).await.unwrap_err();
    assert!(matches!(err, CallError::UnknownTool { .. }), "{err}");
    let reserved = corral::check_name(corral::SEARCH_TOOL).unwrap_err();
    assert!(reserved.contains("reserved"), "{reserved}");
}

#[tokio::test]
async fn tool_search_answers_every_query_form() {
    let dir = plugin_dir(&[ENCODE, TEXT, MATH]);
    let host = host(dir.path(), |b| b.tool_search(true)).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());

    // Free text: ranked, capped by `limit`, never a built-in.
    let found = search(&host, json!({"query": "base64 encode", "limit": 2}))
        .await
        .expect("search");
    let matches = names(&found["matches"]);
    assert_eq!(matches.len(), 2, "{found}");
    assert_eq!(matches[0], "base64_encode", "{found}");
    assert!(found["total_matches"].as_u64().unwrap() >= 2, "{found}");
    let everything = search(&host, json!({"query": "a", "limit": 50})).await;
    assert!(everything.is_ok());
    let all = search(&host, json!({"query": "text count", "limit": 50}))
        .await
        .expect("search");
    assert_eq!(names(&all["matches"])[0], "word_count", "{all}");
    assert!(
        !names(&all["matches"])
            .iter()
            .any(|n| n.starts_with("execute_tool_plan") || *n == "tool_search"),
        "{all}"
    );

    // category:<name>
    let encoding = search(&host, json!({"query": "category:encoding"}))
        .await
        .expect("category");
    assert_eq!(
        names(&encoding["tools"]),
        ["base64_decode", "base64_encode", "sha256"]
    );
    assert_eq!(encoding["count"], 3);
    let unknown = search(&host, json!({"query": "category:weather"}))
        .await
        .expect("category");
    assert!(
        unknown["note"].as_str().unwrap().contains("weather"),
        "{unknown}"
    );
    assert!(unknown["categories"].is_array(), "{unknown}");

    // list: the catalog's own counts, built-ins left out.
    let list = search(&host, json!({"query": "list"})).await.expect("list");
    let specs: Vec<_> = host
        .specs()
        .into_iter()
        .filter(|s| s.metadata.category != "builtin")
        .collect();
    assert_eq!(list["total_tools"], specs.len(), "{list}");
    for category in list["categories"].as_array().unwrap() {
        let name = category["name"].as_str().unwrap();
        let count = specs.iter().filter(|s| s.metadata.category == name).count();
        assert_eq!(category["count"], count, "{name}: {list}");
    }

    // info:<tool>: enough to call it, and its health.
    host.call("sha256", r#"{"text":"abc"}"#, &CallOptions::default())
        .await
        .expect("call");
    let info = search(&host, json!({"query": "info:sha256"}))
        .await
        .expect("info");
    let spec = host.tool("sha256").unwrap().spec().clone();
    assert_eq!(info["parameters"], spec.parameters);
    assert_eq!(info["description"], spec.description);
    assert_eq!(info["provider"], "encode");
    assert_eq!(info["requiresApproval"], false);
    assert_eq!(info["health"]["status"], "UP", "{info}");
    assert_eq!(info["health"]["calls"], 1, "{info}");

    let err = search(&host, json!({"query": "info:sha25"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("did you mean `sha256`"), "{err}");
    let err = search(&host, json!({"query": ""})).await.unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
}

/// fetch with an `[http]` grant, notes with a read-write directory, encode
/// with nothing; `groups` is written as `groups.toml`.
fn grouped_dir(groups: &str) -> tempfile::TempDir {
    let dir = plugin_dir(&[FETCH, NOTES, ENCODE]);
    std::fs::create_dir(dir.path().join("notes-data")).expect("mkdir");
    std::fs::write(
        dir.path().join("fetch.policy.toml"),
        "version = 1\n[http]\nallow = [\"https://example.com\"]\n",
    )
    .expect("policy");
    std::fs::write(
        dir.path().join("notes.policy.toml"),
        "version = 1\n[[filesystem]]\nhost = \"notes-data\"\nguest = \"/notes\"\naccess = \"read-write\"\n",
    )
    .expect("policy");
    std::fs::write(dir.path().join(corral::GROUPS_FILE), groups).expect("groups");
    dir
}

fn group_errors(host: &Host) -> Vec<LoadErrorReason> {
    host.load_errors()
        .into_iter()
        .filter(|e| e.path.ends_with(corral::GROUPS_FILE))
        .map(|e| e.reason)
        .collect()
}

#[tokio::test]
async fn a_group_wider_than_its_permissions_fails_naming_group_tool_and_grant() {
    let dir = grouped_dir(
        "version = 1\n\
         [groups.web]\ndescription = \"Web tools.\"\nplugins = [\"fetch\"]\n\
         [groups.files]\ndescription = \"Notes.\"\ncategories = [\"notes\"]\npermissions = [\"file-read\"]\n\
         [groups.gated]\ndescription = \"Digests.\"\ntools = [\"sha*\"]\n",
    );
    let host = host(dir.path(), |b| b.groups(["web"]).require_approval("sha256")).await;
    let errors = group_errors(&host);
    let find = |group: &str| {
        errors
            .iter()
            .find_map(|e| match e {
                LoadErrorReason::GroupPermission {
                    group: g,
                    tool,
                    permission,
                    grant,
                } if g == group => Some((tool.clone(), permission.clone(), grant.clone())),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no permission error for `{group}`: {errors:?}"))
    };
    let (tool, permission, grant) = find("web");
    assert_eq!(
        (tool.as_str(), permission.as_str()),
        ("fetch_url", "internet")
    );
    assert!(
        grant.contains("[http] allow `https://example.com"),
        "{grant}"
    );
    let (_, permission, grant) = find("files");
    assert_eq!(permission, "file-write");
    assert!(grant.contains("read-write"), "{grant}");
    let (tool, permission, _) = find("gated");
    assert_eq!(
        (tool.as_str(), permission.as_str()),
        ("sha256", "approval-gated")
    );
    let message = host.load_errors()[0].to_string();
    assert!(message.contains("groups.toml"), "{message}");
    // The failed group serves nothing; the other tools stay loaded for
    // hosts that do not select it.
    assert!(host.tool("fetch_url").is_none());
    assert!(host.tool("execute_tool_plan").is_some());
}

#[tokio::test]
async fn selected_groups_and_excludes_bound_every_path() {
    let dir = grouped_dir(
        "version = 1\n\
         [groups.web]\ndescription = \"Web tools.\"\nprovider = \"acme\"\nplugins = [\"fetch\"]\npermissions = [\"internet\"]\n\
         [groups.codec]\ndescription = \"Encoders.\"\ncategories = [\"encoding\"]\nexclude = [\"base64_d*\"]\n",
    );
    let web = host(dir.path(), |b| b.groups(["web"])).await;
    assert!(web.load_errors().is_empty(), "{:?}", web.load_errors());
    let served: Vec<String> = web.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(served, ["execute_code", "execute_tool_plan", "fetch_url"]);
    let groups = web.catalog().groups().to_vec();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[1].name, "web");
    assert_eq!(groups[1].provider.as_deref(), Some("acme"));
    // Unserved tools are unknown to calls and to plans.
    let err = web
        .call("sha256", r#"{"text":"a"}"#, &CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownTool { .. }), "{err}");
    let plan = json!({"steps": [{"id": "a", "tool": "sha256", "arguments": {"text": "a"}}]});
    let err = web
        .call_value("execute_tool_plan", plan, &CallOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("sha256"), "{err}");
    // And to scripts: the call throws, naming the tool.
    let script = json!({"code": "try { await tools.sha256({text: 'a'}) } catch (e) { return [e.kind, e.message] }"});
    let out = web
        .call_value("execute_code", script, &CallOptions::default())
        .await
        .expect("the script catches it")
        .into_json()
        .expect("json");
    assert_eq!(out["result"][0], json!("invalid_arguments"), "{out}");
    assert!(
        out["result"][1].as_str().unwrap().contains("sha256"),
        "{out}"
    );

    let codec = host(dir.path(), |b| {
        b.groups(["codec"])
            .exclude_tools(regex::Regex::new("^sha").unwrap())
    })
    .await;
    let served: Vec<String> = codec.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(
        served,
        ["base64_encode", "execute_code", "execute_tool_plan"]
    );

    let unknown = host(dir.path(), |b| b.groups(["nope"])).await;
    let errors = group_errors(&unknown);
    assert!(
        matches!(&errors[..], [LoadErrorReason::InvalidGroups(m)] if m.contains("`nope`") && m.contains("codec, web")),
        "{errors:?}"
    );
}

#[test]
fn the_cli_selects_groups_and_excludes_tools() {
    let dir = grouped_dir(
        "version = 1\n[groups.web]\ndescription = \"Web.\"\nplugins = [\"fetch\"]\npermissions = [\"internet\"]\n",
    );
    let list = |args: &[&str]| {
        let out = Command::new(corral_bin())
            .arg("--plugins")
            .arg(dir.path())
            .arg("--cache-dir")
            .arg(cache_dir())
            .args(args)
            .arg("list")
            .output()
            .expect("run");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let web = list(&["--groups", "web"]);
    assert!(
        web.contains("fetch_url") && !web.contains("sha256"),
        "{web}"
    );
    let rest = list(&["--exclude-tools", "^(notes|base64)_"]);
    assert!(
        rest.contains("sha256") && rest.contains("fetch_url"),
        "{rest}"
    );
    assert!(
        !rest.contains("notes_list") && !rest.contains("base64_encode"),
        "{rest}"
    );
}

#[tokio::test]
async fn a_one_shot_tool_runs_once_per_loop_and_always_without_a_loop_id() {
    let dir = plugin_dir(&[TEXT]);
    std::fs::write(
        dir.path().join("text.policy.toml"),
        "version = 1\n[one_shot]\nword_count = \"You already counted in this loop.\"\n",
    )
    .expect("policy");
    let host = host(dir.path(), |b| b).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let in_loop = |id: Option<&str>| {
        let mut context = CallContext::new();
        if let Some(id) = id {
            context.insert(corral::LOOP_ID_KEY, id);
        }
        CallOptions::default().with_context(context)
    };
    let call = |options: CallOptions| {
        let host = host.clone();
        async move {
            host.call("word_count", r#"{"text":"one two"}"#, &options)
                .await
                .expect("call")
        }
    };
    for _ in 0..2 {
        let out = call(in_loop(None)).await;
        assert_eq!(
            (out.attempts, out.into_json().unwrap()["words"].clone()),
            (1, json!(2))
        );
    }
    let first = call(in_loop(Some("loop-a"))).await;
    assert_eq!(first.attempts, 1);
    let second = call(in_loop(Some("loop-a"))).await;
    assert_eq!(second.text, "You already counted in this loop.");
    assert_eq!((second.attempts, second.fuel_consumed), (0, 0));
    let other = call(in_loop(Some("loop-b"))).await;
    assert_eq!(other.attempts, 1);
    // Another tool of the plugin is not one-shot.
    let slug = host
        .call("slugify", r#"{"text":"A B"}"#, &in_loop(Some("loop-a")))
        .await
        .expect("call");
    assert_eq!(slug.attempts, 1);
}

#[tokio::test]
async fn a_policy_replaces_a_description_and_still_appends_its_note() {
    let dir = plugin_dir(&[TEXT]);
    std::fs::write(
        dir.path().join("text.policy.toml"),
        "version = 1\n[presentation]\ndescriptions = { word_count = \"Counts words.\" }\n\
         notes = { word_count = \"Prefer it to counting yourself.\" }\n",
    )
    .expect("policy");
    let host = host(dir.path(), |b| b).await;
    assert_eq!(
        host.tool("word_count").unwrap().spec().description,
        "Counts words.\n\nNote: Prefer it to counting yourself."
    );
    assert_ne!(
        host.tool("slugify").unwrap().spec().description,
        "Counts words."
    );
}

#[test]
fn mcp_serves_tool_search_and_one_shot_by_meta_loop_id() {
    let dir = plugin_dir(&[TEXT, ENCODE]);
    std::fs::write(
        dir.path().join("text.policy.toml"),
        "version = 1\n[one_shot]\nword_count = \"Already counted.\"\n",
    )
    .expect("policy");
    let mut server = Stdio_::start_with(
        dir.path(),
        &["--tool-search"],
        &["--no-watch"],
        std::process::Stdio::null(),
    );
    server.initialize(json!({}));
    let list = server.request(1, "tools/list", json!({}));
    let tools = names(&list["result"]["tools"]);
    assert!(tools.contains(&"tool_search"), "{list}");
    let found = server.call(2, "tool_search", json!({"query": "category:text"}));
    let body: Value = serde_json::from_str(text(&found)).expect("json");
    assert!(names(&body["tools"]).contains(&"word_count"), "{body}");
    let call = |server: &mut Stdio_, id: u64| {
        server.request(
            id,
            "tools/call",
            json!({
                "name": "word_count",
                "arguments": {"text": "a b c"},
                "_meta": {"corral/context": {"loop_id": "conversation-7"}}
            }),
        )
    };
    let first = call(&mut server, 3);
    assert!(text(&first).contains("\"words\":3"), "{first}");
    let second = call(&mut server, 4);
    assert_eq!(text(&second), "Already counted.", "{second}");
    assert_eq!(second["result"]["_meta"]["corral/attempts"], 0, "{second}");
}

#[tokio::test]
async fn a_reload_picks_up_a_changed_groups_file() {
    let dir = grouped_dir("version = 1\n");
    let host = host(dir.path(), |b| b.groups(["web"])).await;
    assert!(host.tool("fetch_url").is_none());
    assert_eq!(group_errors(&host).len(), 1, "{:?}", host.load_errors());
    std::fs::write(
        dir.path().join(corral::GROUPS_FILE),
        "version = 1\n[groups.web]\ndescription = \"Web.\"\nplugins = [\"fetch\"]\npermissions = [\"internet\"]\n",
    )
    .expect("groups");
    let report = host.reload().await.expect("reload");
    assert_eq!(report.added, ["fetch_url"]);
    assert!(group_errors(&host).is_empty(), "{:?}", host.load_errors());
}
