//! The three consequences of the layers' order,
//! `cache(rate_limit(circuit_breaker(retry(tool))))`.

use corral::CallOptions;
use serde_json::json;

use super::{dir_with, host_over};
use crate::support::{FETCH, HOSTILE, TestServer};

#[tokio::test]
async fn a_cache_hit_bypasses_the_rate_limit() {
    // One call an hour, and a cache: the second identical call is answered
    // from the cache, not refused; a different call is refused.
    let args = json!({"text": "same"});
    let dir = dir_with(
        HOSTILE,
        &[(
            "t",
            "[resilience.tools.echo]\nrate_limit = { requests = 1, per = \"hour\", throw_on_limit = true }\n\
             cache = { ttl_ms = 600000 }",
        )],
        "",
        "echo",
        &args,
    );
    let host = host_over(dir.path()).await;
    let options = CallOptions::default();
    let first = host
        .call_value("t_echo", args.clone(), &options)
        .await
        .expect("first");
    assert!(!first.cache_hit);
    let again = host
        .call_value("t_echo", args.clone(), &options)
        .await
        .expect("cached, not limited");
    assert!(again.cache_hit);
    let other = host
        .call_value("t_echo", json!({"text": "other"}), &options)
        .await
        .unwrap_err();
    assert_eq!(other.kind(), "rate_limited", "{other}");
}

#[tokio::test]
async fn the_rate_limit_is_checked_once_before_the_retries() {
    // One call an hour, three attempts: a call that needs all three takes one
    // slot (had the limit been inside the retries, the second attempt would
    // have been refused).
    let server = TestServer::start_failing(2, "after two 503s");
    let args = json!({"url": format!("http://127.0.0.1:{}/", server.port)});
    let table = format!(
        "[http]\nallow = [\"http://127.0.0.1:{}\"]\n[resilience.tools.fetch_url]\n\
         retry = {{ max_attempts = 3, initial_delay_ms = 10, jitter = false }}\n\
         rate_limit = {{ requests = 1, per = \"hour\", throw_on_limit = true }}",
        server.port
    );
    let dir = dir_with(FETCH, &[("f", &table)], "", "fetch_url", &args);
    let host = host_over(dir.path()).await;
    let out = host
        .call_value("f_fetch_url", args.clone(), &CallOptions::default())
        .await
        .expect("one slot, three attempts");
    assert_eq!(out.attempts, 3);
    assert_eq!(server.hits(), 3);
    let next = host
        .call_value("f_fetch_url", args, &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(next.kind(), "rate_limited", "{next}");
    assert_eq!(server.hits(), 3, "a refused call never reaches the tool");
}

#[tokio::test]
async fn retries_happen_closest_to_the_tool() {
    // A breaker that opens after one failed call, around a retry of three
    // attempts: a call that fails twice and then succeeds is one successful
    // call to the breaker (had the breaker been inside, the first failed
    // attempt would have opened it and the second would have failed fast).
    let server = TestServer::start_failing(2, "recovered");
    let args = json!({"url": format!("http://127.0.0.1:{}/", server.port)});
    let table = format!(
        "[http]\nallow = [\"http://127.0.0.1:{}\"]\n[resilience.tools.fetch_url]\n\
         retry = {{ max_attempts = 3, initial_delay_ms = 10, jitter = false }}\n\
         circuit_breaker = {{ failure_threshold = 1, cool_down_ms = 600000 }}",
        server.port
    );
    let dir = dir_with(FETCH, &[("f", &table)], "", "fetch_url", &args);
    let host = host_over(dir.path()).await;
    let out = host
        .call_value("f_fetch_url", args.clone(), &CallOptions::default())
        .await
        .expect("retried inside the breaker");
    assert_eq!(out.attempts, 3);
    let again = host
        .call_value("f_fetch_url", args, &CallOptions::default())
        .await
        .expect("the circuit stayed closed");
    assert_eq!(again.attempts, 1);
}
