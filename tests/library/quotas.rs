//! Tenant quotas through the library (`corral::Quotas`' rules): each kind
//! reached, with the error that names it; whose quota a call spends (a
//! token's tenant, a client-asserted one, anonymous) and the global
//! backstop; a refill after the window. Across replicas and with Redis
//! down: `tests/all/quotas.rs`.

use std::time::{Duration, Instant};

use corral::{CallError, CallOptions, Host, QuotaRules, Tenant};
use serde_json::json;

use crate::support::{FETCH, HOSTILE, TestServer, builder, plugin_dir_with_policies};

/// A host over `policies`, with the host's quotas file `rules` (TOML).
async fn host_with(policies: &[(&str, Option<&str>)], rules: &str) -> (Host, tempfile::TempDir) {
    let dir = plugin_dir_with_policies(policies);
    let file = dir.path().join("quotas.toml.host");
    std::fs::write(&file, format!("version = 1\n{rules}")).expect("write");
    let rules = QuotaRules::from_file(&file).expect("valid quotas");
    let host = builder(dir.path())
        .quotas(rules)
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (host, dir)
}

fn as_tenant(name: &str) -> CallOptions {
    CallOptions::default().with_context([("tenant", name.to_string())].into_iter().collect())
}

fn token(name: &str) -> CallOptions {
    let mut options = CallOptions::default();
    options.tenant = Some(Tenant::authenticated(name));
    options
}

async fn echo(host: &Host, options: &CallOptions) -> Result<(), CallError> {
    host.call("echo", r#"{"text": "x"}"#, options)
        .await
        .map(|_| ())
}

/// The quota a refusal names, and its wait.
fn refused(result: Result<(), CallError>) -> (String, String, Duration) {
    match result {
        Err(CallError::QuotaExceeded {
            tenant,
            quota,
            retry_after,
            reset_at,
            ..
        }) => {
            assert!(reset_at.ends_with('Z'), "{reset_at}");
            (tenant, quota, retry_after)
        }
        other => panic!("expected a quota refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_plugins_call_quota_holds_each_tenant_to_it_and_names_itself() {
    let policy = "version = 1\n[quotas]\ncalls = { limit = 2, per = \"1h\" }\n";
    let (host, _dir) = host_with(&[(HOSTILE, Some(policy))], "").await;
    for _ in 0..2 {
        echo(&host, &as_tenant("acme"))
            .await
            .expect("within the quota");
    }
    let err = echo(&host, &as_tenant("acme")).await;
    let message = err.as_ref().unwrap_err().to_string();
    let (tenant, quota, wait) = refused(err);
    assert_eq!(tenant, "\"acme\" (client-asserted)");
    assert_eq!(
        quota,
        "calls: 2 calls per 1h (plugin `fixture_hostile`'s per-tenant quota)"
    );
    // One call comes back every half hour.
    assert!(
        wait > Duration::from_secs(29 * 60) && wait <= Duration::from_secs(30 * 60),
        "{wait:?}"
    );
    assert!(message.contains("was not called"), "{message}");
    assert!(message.contains("admitted again in"), "{message}");
    assert_eq!(
        CallError::QuotaExceeded {
            tool: String::new(),
            tenant: String::new(),
            quota: String::new(),
            retry_after: wait,
            reset_at: String::new()
        }
        .kind(),
        "quota_exceeded"
    );

    // Another tenant, a token's tenant of the same name, and anonymous
    // callers each have their own.
    echo(&host, &as_tenant("globex"))
        .await
        .expect("globex's own");
    echo(&host, &token("acme"))
        .await
        .expect("the token's acme is not the asserted one");
    echo(&host, &CallOptions::default())
        .await
        .expect("anonymous");
    echo(&host, &CallOptions::default())
        .await
        .expect("anonymous");
    let (tenant, _, _) = refused(echo(&host, &CallOptions::default()).await);
    assert_eq!(tenant, "anonymous");
    // Other plugins' tools are not bound by this plugin's quota: the
    // built-in search runs.
    assert!(host.tool("echo").is_some());
}

#[tokio::test]
async fn fuel_and_guest_time_are_charged_after_the_call_and_refuse_the_next() {
    // A bucket of 1 fuel unit: the first call is admitted (the bucket is
    // full), is charged its thousands of units, and the tenant is then in
    // debt. The same for 1 ms of guest time against a 50 ms sleep.
    let (host, _dir) = host_with(
        &[(HOSTILE, None)],
        "[tenant]\nfuel = { limit = 1, per = \"1h\" }\n",
    )
    .await;
    echo(&host, &as_tenant("a"))
        .await
        .expect("a full bucket admits");
    let (_, quota, wait) = refused(echo(&host, &as_tenant("a")).await);
    assert!(
        quota.starts_with("fuel: 1 fuel units per 1h (the host's per-tenant quota)"),
        "{quota}"
    );
    assert!(
        wait > Duration::from_secs(3_600),
        "a debt of many hours: {wait:?}"
    );
    echo(&host, &as_tenant("b"))
        .await
        .expect("b is not in a's debt");

    let (timed, _dir) = host_with(
        &[(HOSTILE, None)],
        "[tenant]\nwall_ms = { limit = 1, per = \"1h\" }\n",
    )
    .await;
    let host = timed;
    host.call("sleep", r#"{"ms": 50}"#, &as_tenant("a"))
        .await
        .expect("admitted");
    let (_, quota, wait) = refused(echo(&host, &as_tenant("a")).await);
    assert!(
        quota.starts_with("wall_ms: 1 ms of guest time per 1h"),
        "{quota}"
    );
    // 49 ms over, at an hour a millisecond.
    assert!(wait >= Duration::from_secs(48 * 3_600), "{wait:?}");
}

#[tokio::test]
async fn http_bytes_both_ways_are_charged() {
    let server = TestServer::start("a body of some length");
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://127.0.0.1:{}\"]\n",
        server.port
    );
    let (host, _dir) = host_with(
        &[(FETCH, Some(&policy))],
        "[tenant]\negress_bytes = { limit = 100, per = \"1d\" }\n",
    )
    .await;
    let fetch = |tenant: &'static str| {
        let host = host.clone();
        let url = format!("http://127.0.0.1:{}/x", server.port);
        async move {
            host.call(
                "fetch_url",
                &json!({ "url": url }).to_string(),
                &as_tenant(tenant),
            )
            .await
            .map(|_| ())
        }
    };
    fetch("a").await.expect("admitted");
    assert_eq!(server.hits(), 1);
    let (_, quota, _) = refused(fetch("a").await);
    assert!(
        quota.starts_with("egress_bytes: 100 bytes of HTTP per 1day"),
        "{quota}"
    );
    assert_eq!(server.hits(), 1, "a refused call sends nothing");
    fetch("b").await.expect("b's own");
}

#[tokio::test]
async fn the_global_quota_bounds_rotating_tenants_but_not_tokens() {
    let (host, _dir) = host_with(
        &[(HOSTILE, None)],
        "[tenant]\ncalls = { limit = 100, per = \"1h\" }\n\
         [global]\ncalls = { limit = 3, per = \"1h\" }\n",
    )
    .await;
    for i in 0..3 {
        echo(&host, &as_tenant(&format!("rotated-{i}")))
            .await
            .expect("within the global quota");
    }
    let (tenant, quota, _) = refused(echo(&host, &as_tenant("rotated-4")).await);
    assert_eq!(tenant, "\"rotated-4\" (client-asserted)");
    assert!(quota.contains("the host's global quota"), "{quota}");
    refused(echo(&host, &CallOptions::default()).await);
    echo(&host, &token("acme"))
        .await
        .expect("a token's tenant is not in the backstop");
}

#[tokio::test]
async fn a_spent_quota_comes_back_after_its_window() {
    let (host, _dir) = host_with(
        &[(HOSTILE, None)],
        "[tenant]\ncalls = { limit = 1, per = \"1s\" }\n",
    )
    .await;
    echo(&host, &as_tenant("a")).await.expect("the first");
    let (_, _, wait) = refused(echo(&host, &as_tenant("a")).await);
    assert!(wait <= Duration::from_secs(1), "{wait:?}");
    // The bucket refills on the store's clock: poll until admitted.
    let start = Instant::now();
    while echo(&host, &as_tenant("a")).await.is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never admitted again"
        );
        tokio::task::yield_now().await;
    }
    assert!(start.elapsed() >= wait.saturating_sub(Duration::from_millis(50)));
    assert!(!host.quota_status().fallback);
    assert_eq!(host.quota_status().store, "memory");
}
