//! Tenant quotas over MCP (streamable HTTP, 2026-07-28 requests): a bearer
//! token of `--tokens` is its tenant, whatever context key the client
//! sends; a refusal is an `isError` result with `quota_exceeded` and when
//! to come back in `_meta`; a token that is not listed gets `401`;
//! `/metrics` (which names tenants) takes the operator's token only; `/readyz`
//! says where quota buckets are kept. Across replicas and with Redis down:
//! tests/replicas/quotas_phase.py.

use serde_json::{Value, json};

use super::http::{HttpServer, message_of};
use crate::support::{HOSTILE, plugin_dir_with_policies};

const POLICY: &str = "version = 1\n[quotas]\ncalls = { limit = 2, per = \"1h\" }\n";

/// `echo` as `token`, asserting the context tenant `asserted`.
fn echo(server: &HttpServer, token: &str, asserted: &str) -> (u16, Value) {
    let mut meta = super::stateless_meta(json!({}));
    meta["corral/context"] = json!({ "tenant": asserted });
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": meta}});
    let bearer = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
        ("Authorization", bearer.as_str()),
    ];
    let (status, body) = server.send("POST", "/mcp", &headers, &message.to_string());
    if status != 200 {
        return (status, Value::Null);
    }
    (status, message_of(&body)["result"].clone())
}

#[test]
fn a_tokens_tenant_has_its_own_quota_whatever_it_asserts() {
    let dir = plugin_dir_with_policies(&[(HOSTILE, Some(POLICY))]);
    let tokens = dir.path().join("tokens.toml");
    std::fs::write(
        &tokens,
        "version = 1\n[[token]]\ntenant = \"acme\"\ntoken = \"t-acme\"\n\
         [[token]]\ntenant = \"globex\"\ntoken = \"t-globex\"\n",
    )
    .expect("tokens");
    let quotas = dir.path().join("quotas.toml");
    std::fs::write(&quotas, "version = 1\n").expect("quotas");
    let operator = dir.path().join("operator.token");
    std::fs::write(&operator, "t-operator").expect("operator token");
    let server = HttpServer::start(
        dir.path(),
        &[
            "--tokens",
            &tokens.display().to_string(),
            "--token-file",
            &operator.display().to_string(),
            "--quotas",
            &quotas.display().to_string(),
        ],
    );

    // acme spends its two calls, asserting a different tenant each time:
    // the token decides.
    for asserted in ["one", "two"] {
        let (status, result) = echo(&server, "t-acme", asserted);
        assert_eq!(status, 200);
        assert_eq!(result["isError"], false, "{result}");
    }
    let (_, refused) = echo(&server, "t-acme", "three");
    assert_eq!(refused["isError"], true, "{refused}");
    let meta = &refused["_meta"];
    assert_eq!(meta["corral/errorKind"], "quota_exceeded", "{refused}");
    let after = meta["corral/retryAfterMs"].as_u64().expect("retryAfterMs");
    assert!(
        after > 29 * 60 * 1_000 && after <= 30 * 60 * 1_000,
        "{after}"
    );
    assert!(
        meta["corral/quotaResetAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{meta}"
    );
    let text = refused["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("tenant \"acme\" is over its quota of calls: 2 calls per 1h"),
        "{text}"
    );

    // globex is another tenant, even asserting `acme`.
    let (_, result) = echo(&server, "t-globex", "acme");
    assert_eq!(result["isError"], false, "{result}");
    // A token that is not listed is refused before any call.
    assert_eq!(echo(&server, "t-nobody", "acme").0, 401);

    // The top tenants by use, by name; never a label per asserted key. Only
    // the operator's token reads them: they name other tenants.
    let (status, _) = server.send("GET", "/metrics", &[("Authorization", "Bearer t-acme")], "");
    assert_eq!(status, 403);
    let (status, metrics) = server.send(
        "GET",
        "/metrics",
        &[("Authorization", "Bearer t-operator")],
        "",
    );
    assert_eq!(status, 200);
    assert!(
        metrics.contains("corral_tenant_used{tenant=\"acme\",kind=\"calls\"} 2\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("corral_tenant_used{tenant=\"globex\",kind=\"calls\"} 1\n"),
        "{metrics}"
    );
    assert!(!metrics.contains("tenant=\"one\""), "{metrics}");

    let (status, body) = server.send("GET", "/readyz", &[], "");
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        ready["quotas"],
        json!({"store": "memory", "fallback": false}),
        "{ready}"
    );
}
