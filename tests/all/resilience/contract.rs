//! WIT 0.3.0 beside 0.2.0 and 0.1.0, output contracts, the dependency graph, health
//! transitions, the manifest and the audit of every execution.

use corral::{AuditLog, CallOptions, HealthStatus, Host, LoadErrorReason};
use serde_json::{Value, json};

use crate::support::{
    CYCLE, FETCH, HOSTILE, SAMPLES, TestServer, V1_PLUGIN, V2_PLUGIN, assert_still_serves, cache,
    plugin_dir, plugin_dir_with_policies, pool,
};

#[tokio::test]
async fn plugins_of_every_contract_version_load_side_by_side() {
    let dir = plugin_dir(&[HOSTILE, V1_PLUGIN, V2_PLUGIN]);
    let host = crate::support::host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let v1 = host.tool("v1_tool").expect("0.1.0 tool");
    let v2 = host.tool("v2_tool").expect("0.2.0 tool");
    let v3 = host.tool("echo").expect("0.3.0 tool (the SDK's)");
    assert_eq!(v1.plugin().expect("plugin").wit_version(), "0.1.0");
    assert_eq!(v2.plugin().expect("plugin").wit_version(), "0.2.0");
    assert_eq!(v3.plugin().expect("plugin").wit_version(), "0.3.0");
    assert_eq!(v1.spec().metadata.priority, 50);
    assert!(v1.spec().output_schema.is_none());
    assert!(v2.spec().output_schema.is_some());
    for (tool, text) in [("v1_tool", "{}"), ("v2_tool", r#"{"v": 2}"#)] {
        let out = host
            .call(tool, "{}", &CallOptions::default())
            .await
            .expect(tool);
        assert_eq!(out.text, text);
        assert!(out.parts.is_empty(), "one string is the whole output");
    }
    // The SDK's one JSON part is plain text too.
    let out = host
        .call("echo", r#"{"text": "hi"}"#, &CallOptions::default())
        .await
        .expect("echo");
    assert_eq!(out.json().expect("json")["echo"], "hi");
    assert!(out.parts.is_empty());
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_result_that_breaks_its_output_schema_fails_the_call() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = crate::support::host(dir.path()).await;
    assert!(
        host.tool("lie")
            .expect("lie")
            .spec()
            .output_schema
            .is_some()
    );
    let err = host
        .call("lie", "{}", &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "output_invalid", "{err}");
    let text = err.to_string();
    assert!(
        text.contains("tool `lie`") && text.contains("`/n`"),
        "{text}"
    );
    // The sample that declares a correct schema passes it.
    let server = TestServer::start("fine");
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n",
        server.port
    );
    let dir = plugin_dir_with_policies(&[(FETCH, Some(&policy))]);
    let host = crate::support::host(dir.path()).await;
    let url = format!("http://127.0.0.1:{}/", server.port);
    let out = crate::support::call(&host, "fetch_url", json!({ "url": url }))
        .await
        .expect("ok");
    assert_eq!(out["body"], "fine");
}

#[tokio::test]
async fn a_dependency_cycle_keeps_the_plugin_out_and_the_graph_orders_the_rest() {
    let dir = plugin_dir(&[HOSTILE, CYCLE]);
    let host = crate::support::host(dir.path()).await;
    let errors = host.load_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    match &errors[0].reason {
        LoadErrorReason::DependencyCycle { cycle } => {
            assert_eq!(cycle, &["loop_a", "loop_b", "loop_a"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(errors[0].to_string().contains("loop_a -> loop_b -> loop_a"));
    let graph = host.tool_graph();
    assert_eq!(graph.transitive_dependencies("gated"), ["echo"]);
    let order = graph.topological_order().expect("acyclic");
    let at = |t: &str| order.iter().position(|o| o == t).expect("listed");
    assert!(at("echo") < at("gated"));
    assert!(graph.to_dot().contains("\"gated\" -> \"echo\""));
}

#[tokio::test]
async fn health_goes_down_and_recovers() {
    // A window of four calls; the server fails the first four requests.
    let server = TestServer::start_failing(4, "back");
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n\
         [resilience.tools.fetch_url]\nretry = {{ max_attempts = 1 }}\nhealth = {{ window = 4 }}\n",
        server.port
    );
    let dir = plugin_dir_with_policies(&[(FETCH, Some(&policy))]);
    let host = crate::support::host(dir.path()).await;
    let mut changes = host.subscribe_health();
    let status = |host: &Host| host.health_of("fetch_url").expect("tool").status;
    assert_eq!(status(&host), HealthStatus::Unknown);
    let url = json!({"url": format!("http://127.0.0.1:{}/", server.port)});
    for _ in 0..4 {
        crate::support::call(&host, "fetch_url", url.clone())
            .await
            .unwrap_err();
    }
    let down = host.health_of("fetch_url").expect("tool");
    assert_eq!(down.status, HealthStatus::Down, "{down:?}");
    assert!(
        down.reason
            .expect("reason")
            .contains("0 % of the last 4 calls")
    );
    assert_eq!(host.health().status, HealthStatus::Down);
    assert!(changes.has_changed().expect("open"));
    changes.borrow_and_update();
    // Three successes: 3 of 4, 75 % < 80 %, still DOWN; a fourth: UP.
    for _ in 0..3 {
        crate::support::call(&host, "fetch_url", url.clone())
            .await
            .expect("ok");
    }
    assert_eq!(status(&host), HealthStatus::Down);
    crate::support::call(&host, "fetch_url", url.clone())
        .await
        .expect("ok");
    assert_eq!(status(&host), HealthStatus::Up);
    assert!(
        changes.has_changed().expect("open"),
        "recovery is announced"
    );
    // Invalid arguments are the caller's fault: health does not move.
    crate::support::call(&host, "fetch_url", json!({"url": 1}))
        .await
        .unwrap_err();
    assert_eq!(host.health_of("fetch_url").expect("tool").calls, 4);
}

#[tokio::test]
async fn the_manifest_validates_against_its_schema() {
    let mut guests: Vec<&str> = SAMPLES.to_vec();
    guests.push(HOSTILE);
    guests.push(V1_PLUGIN);
    let dir = plugin_dir(&guests);
    let host = crate::support::host(dir.path()).await;
    let manifest = host.manifest();
    let schema: Value = serde_json::from_str(corral::MANIFEST_SCHEMA).expect("schema JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let problems: Vec<String> = validator
        .iter_errors(&manifest)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    let tools = manifest["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "sorted by name");
    let fetch = tools
        .iter()
        .find(|t| t["name"] == "fetch_url")
        .expect("fetch");
    assert_eq!(fetch["provider"]["witVersion"], "0.3.0");
    assert!(fetch["outputSchema"].is_object());
    assert_eq!(fetch["resilience"]["retry"]["max_attempts"], 3);
    let v1 = tools.iter().find(|t| t["name"] == "v1_tool").expect("v1");
    assert_eq!(v1["provider"]["witVersion"], "0.1.0");
    // A broken manifest fails the schema (the test can fail).
    let mut broken = manifest.clone();
    broken["tools"][0]["metadata"]["priority"] = json!(101);
    assert!(!validator.is_valid(&broken));
}

#[tokio::test]
async fn every_execution_is_audited_with_masked_arguments() {
    let policy = "version = 1\n[resilience.tools.echo]\n\
                  audit = { level = \"all\", record_arguments = true, mask_fields = [\"text\"] }\n";
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(policy))]);
    let log_dir = tempfile::tempdir().expect("dir");
    let log_path = log_dir.path().join("audit.jsonl");
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .audit_log(AuditLog::open(&log_path).expect("log"))
        .build()
        .await
        .expect("host");
    let mut context = corral::CallContext::new();
    context.insert("tenant", "acme");
    host.call(
        "echo",
        r#"{"text": "the secret"}"#,
        &CallOptions::default().with_context(context),
    )
    .await
    .expect("echo");
    // Not audited: `counter` keeps the default level (gated only).
    host.call("counter", "{}", &CallOptions::default())
        .await
        .expect("counter");
    let text = std::fs::read_to_string(&log_path).expect("log");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let record = &lines[0];
    assert_eq!(record["event"], "call");
    assert_eq!(record["tool"], "echo");
    assert_eq!(record["outcome"], "ok");
    assert_eq!(record["attempts"], 1);
    assert_eq!(record["arguments"], json!({"text": "***"}));
    assert!(!text.contains("the secret"), "{text}");
    assert_eq!(record["arguments_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(
        record["plugin_sha256"],
        crate::support::guest_sha256(HOSTILE)
    );
    assert!(record["fuel"].as_u64().expect("fuel") > 0);
    assert!(record["duration_ms"].as_f64().is_some());
    // The context key reached only what the plugin may see (none by default).
    assert_eq!(record["context"], json!({}));
}
