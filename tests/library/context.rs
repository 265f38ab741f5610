//! Out-of-band context: per-plugin allow and deny lists (nothing crosses by
//! default), the host/call merge, plans, and context never in a schema.

use std::path::Path;

use corral::{CallContext, CallOptions, ContextPolicy, Host, HostBuilder};
use serde_json::{Value, json};

use crate::support::{HOSTILE, SAMPLES, cache, plugin_dir, pool};

const PLUGIN: &str = "fixture_hostile";

fn builder(dir: &Path) -> HostBuilder {
    Host::builder().plugin_dir(dir).pool(pool()).cache(cache())
}

fn call_context() -> CallContext {
    [
        ("tenant", "acme"),
        ("user_id", "u-17"),
        ("api_key", "secret"),
    ]
    .into_iter()
    .collect()
}

/// What `context_echo` saw.
async fn seen(host: &Host, context: CallContext) -> Value {
    let options = CallOptions::default().with_context(context);
    host.call("context_echo", "{}", &options)
        .await
        .expect("call")
        .into_json()
        .expect("json")["context"]
        .clone()
}

#[tokio::test]
async fn no_key_crosses_unless_allowed() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path()).build().await.expect("host");
    assert_eq!(seen(&host, call_context()).await, json!({}));
    assert_eq!(host.context_policy(PLUGIN), ContextPolicy::default());
}

#[tokio::test]
async fn an_allow_list_admits_only_its_keys() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .context_policy(PLUGIN, ContextPolicy::allow(["tenant", "user_id"]))
        .build()
        .await
        .expect("host");
    assert_eq!(
        seen(&host, call_context()).await,
        json!({"tenant": "acme", "user_id": "u-17"})
    );
}

#[tokio::test]
async fn a_deny_list_withholds_its_keys() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .context_policy(PLUGIN, ContextPolicy::deny(["api_key"]))
        .build()
        .await
        .expect("host");
    assert_eq!(
        seen(&host, call_context()).await,
        json!({"tenant": "acme", "user_id": "u-17"})
    );
}

#[tokio::test]
async fn call_context_wins_over_host_context() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .context([("tenant", "acme"), ("region", "eu")].into_iter().collect())
        .context_policy(PLUGIN, ContextPolicy::PassThrough)
        .build()
        .await
        .expect("host");
    assert_eq!(
        seen(&host, CallContext::new()).await,
        json!({"tenant": "acme", "region": "eu"})
    );
    assert_eq!(
        seen(&host, [("tenant", "override")].into_iter().collect()).await,
        json!({"tenant": "override", "region": "eu"})
    );
}

#[tokio::test]
async fn plan_steps_get_the_context_through_their_plugin_policy() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .context_policy(PLUGIN, ContextPolicy::allow(["tenant"]))
        .build()
        .await
        .expect("host");
    let plan = json!({"steps": [{"id": "c", "tool": "context_echo", "arguments": {}}]});
    let options = CallOptions::default().with_context(call_context());
    let out = host
        .call("execute_tool_plan", &plan.to_string(), &options)
        .await
        .expect("plan")
        .into_json()
        .expect("json");
    assert_eq!(
        out["steps"][0]["output"]["context"],
        json!({"tenant": "acme"})
    );
}

#[tokio::test]
async fn context_never_appears_in_any_schema() {
    let dir = plugin_dir(&[SAMPLES, &[HOSTILE]].concat());
    let host = builder(dir.path())
        .context(call_context())
        .default_context_policy(ContextPolicy::PassThrough)
        .build()
        .await
        .expect("host");
    let specs = serde_json::to_string(&host.specs()).expect("specs");
    for needle in ["tenant", "acme", "user_id", "api_key", "secret"] {
        assert!(!specs.contains(needle), "`{needle}` leaked into a spec");
    }
    // The guest still receives it.
    assert_eq!(seen(&host, CallContext::new()).await["tenant"], "acme");
}
