//! A hostile component outside corral's world (`any_hostile`) is contained
//! exactly as the `hostile` plugin of corral's world is: fuel, the epoch
//! deadline, the memory cap, the stack, the output cap, WASI denied by
//! default, a fresh instance per call, and its error text capped and
//! neutralised. After each, the same host still serves.

use std::net::TcpListener;

use corral::{CallError, CallOptions, Host, Limits};
use serde_json::{Value, json};

use crate::support::{ANY_HOSTILE, cache, plugin_dir, pool};

async fn serve(limits: Limits) -> (tempfile::TempDir, Host) {
    let dir = plugin_dir(&[ANY_HOSTILE]);
    let host = Host::builder()
        .plugin_dir(dir.path())
        .limits(limits)
        .pool(pool())
        .cache(cache())
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (dir, host)
}

async fn call(host: &Host, tool: &str, arguments: Value) -> Result<Value, CallError> {
    host.call_value(tool, arguments, &CallOptions::default())
        .await
        .map(|out| out.into_json().unwrap_or(Value::Null))
}

/// A benign call answers right after the hostile one.
async fn still_serves(host: &Host) {
    let ok = call(host, "attack_allocate", json!({ "mib": 1 })).await;
    assert_eq!(ok.expect("a benign call"), json!(1));
}

#[tokio::test]
async fn spinning_runs_out_of_fuel_or_hits_the_deadline() {
    let (_dir, host) = serve(Limits::default().with_fuel(50_000_000)).await;
    let err = call(&host, "attack_spin", json!({})).await.unwrap_err();
    assert!(
        matches!(
            err,
            CallError::OutOfFuel {
                budget: 50_000_000,
                ..
            }
        ),
        "{err:?}"
    );
    still_serves(&host).await;

    let (_dir, host) = serve(
        Limits::default()
            .with_fuel(u64::MAX / 2)
            .with_timeout_ms(300),
    )
    .await;
    let err = call(&host, "attack_spin", json!({})).await.unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Timeout {
                timeout_ms: 300,
                ..
            }
        ),
        "{err:?}"
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn sleeping_in_wasi_is_stopped_at_the_deadline() {
    let (_dir, host) = serve(Limits::default().with_timeout_ms(300)).await;
    let err = call(&host, "attack_sleep", json!({ "ms": 3_600_000 }))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err:?}");
    still_serves(&host).await;
}

#[tokio::test]
async fn memory_stack_and_traps_are_contained() {
    let (_dir, host) = serve(Limits::default().with_memory_bytes(32 << 20)).await;
    let err = call(&host, "attack_allocate", json!({ "mib": 100 }))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CallError::MemoryLimit { limit_bytes, .. } if limit_bytes == 32 << 20),
        "{err:?}"
    );
    let err = call(&host, "attack_recurse", json!({})).await.unwrap_err();
    assert!(matches!(err, CallError::StackOverflow { .. }), "{err:?}");
    let err = call(&host, "attack_trap", json!({ "message": "kaboom 17" }))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Trapped { .. }), "{err:?}");
    assert!(err.to_string().contains("kaboom 17"), "{err}");
    still_serves(&host).await;
}

#[tokio::test]
async fn a_result_over_the_output_cap_is_refused() {
    let (_dir, host) = serve(
        Limits::default()
            .with_memory_bytes(256 << 20)
            .with_output_bytes(1 << 20),
    )
    .await;
    let err = call(&host, "attack_big_result", json!({ "bytes": 4 << 20 }))
        .await
        .unwrap_err();
    // Its exact size, counted while written and never kept whole.
    assert!(
        matches!(err, CallError::OutputTooLarge { bytes, limit_bytes, .. }
            if limit_bytes == 1 << 20 && bytes == (4 << 20) + 2),
        "{err:?}"
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn files_environment_and_sockets_are_denied_by_default() {
    let (dir, host) = serve(Limits::default()).await;
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET").expect("write");
    for path in ["/etc/passwd", secret.to_str().expect("utf-8"), "."] {
        let err = call(&host, "attack_read_file", json!({ "path": path }))
            .await
            .unwrap_err();
        let CallError::ToolFailed { message, .. } = &err else {
            panic!("{path}: expected the err arm of its result, got {err:?}");
        };
        assert!(
            message.contains(&format!("cannot read {path}")),
            "{message}"
        );
        assert!(!message.contains("TOP-SECRET"));
    }
    let seen = call(&host, "attack_read_env", json!({}))
        .await
        .expect("env");
    assert_eq!(seen, json!([[], []]), "no variable and no argument cross");

    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr").to_string();
    let err = call(&host, "attack_open_socket", json!({ "addr": addr }))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err:?}");
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing reached the listener"
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn error_text_is_capped_and_neutralised() {
    let (_dir, host) = serve(Limits::default()).await;
    let err = call(
        &host,
        "attack_fail_with",
        json!({ "text": "\u{1b}[2J\u{202e}spoof\u{7}", "times": 100_000 }),
    )
    .await
    .unwrap_err();
    let CallError::ToolFailed { message, .. } = &err else {
        panic!("expected the err arm of its result, got {err:?}");
    };
    assert!(message.len() <= 8 << 10, "capped: {} bytes", message.len());
    for raw in ['\u{1b}', '\u{202e}', '\u{7}'] {
        assert!(!message.contains(raw), "{raw:?} reached the message");
        assert!(!err.to_string().contains(raw));
    }
    still_serves(&host).await;
}

#[tokio::test]
async fn every_call_gets_a_fresh_instance() {
    let (_dir, host) = serve(Limits::default()).await;
    for _ in 0..3 {
        assert_eq!(
            call(&host, "attack_count", json!({})).await.expect("count"),
            json!(1)
        );
    }
}

#[tokio::test]
async fn a_huge_list_result_is_refused_before_the_host_lifts_it() {
    // With a 64 KiB output cap the host lifts at most 4 MiB of values
    // (`Limits::transfer_bytes`): a list of a million bytes (40 MB of host
    // values) is refused before it is lifted, a list that fits that but not
    // the output cap is refused by the cap, and a small one answers.
    let (_dir, host) = serve(Limits::default().with_output_bytes(64 << 10)).await;
    let err = call(&host, "attack_big_bytes", json!({ "bytes": 1_000_000 }))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Trapped { message, .. }
            if message.contains("more data across the component boundary")),
        "{err:?}"
    );
    let err = call(&host, "attack_big_bytes", json!({ "bytes": 100_000 }))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::OutputTooLarge { .. }), "{err:?}");
    let ok = call(&host, "attack_big_bytes", json!({ "bytes": 3 }))
        .await
        .expect("a small list");
    assert_eq!(ok, json!("BwcH"), "base64 of three 7s");
    still_serves(&host).await;
}
