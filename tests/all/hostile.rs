//! Every hostile fixture tool is contained: the call fails with its specific
//! error class and message, nothing leaks out, and a benign call succeeds right
//! after on the same host.

use std::net::TcpListener;

use corral::{CallError, CallOptions, Limits};

use crate::support::{HOSTILE, assert_still_serves, host, host_with, plugin_dir};

#[tokio::test]
async fn spinning_guest_runs_out_of_fuel() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host_with(dir.path(), Limits::default().with_fuel(50_000_000)).await;
    let err = host
        .call("spin", "{}", &CallOptions::default())
        .await
        .unwrap_err();
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
    assert!(
        err.to_string()
            .contains("ran out of fuel after 50000000 units"),
        "{err}"
    );
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn spinning_guest_with_ample_fuel_hits_the_epoch_deadline() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host_with(
        dir.path(),
        Limits::default()
            .with_fuel(u64::MAX / 2)
            .with_timeout_ms(300),
    )
    .await;
    let started = std::time::Instant::now();
    let err = host
        .call("spin", "{}", &CallOptions::default())
        .await
        .unwrap_err();
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
    assert!(
        err.to_string().contains("exceeded its deadline of 300 ms"),
        "{err}"
    );
    assert!(
        started.elapsed().as_secs() < 10,
        "stopped promptly, not after minutes"
    );
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn guest_sleeping_in_wasi_is_stopped_at_the_deadline() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host_with(dir.path(), Limits::default().with_timeout_ms(300)).await;
    let started = std::time::Instant::now();
    let err = host
        .call("sleep", r#"{"ms": 3600000}"#, &CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err:?}");
    assert!(
        started.elapsed().as_secs() < 10,
        "an hour-long sleep was cut short"
    );
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn allocating_past_the_memory_cap_is_a_memory_error() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host_with(dir.path(), Limits::default().with_memory_bytes(32 << 20)).await;
    let err = host
        .call("allocate", r#"{"mib": 100}"#, &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, CallError::MemoryLimit { limit_bytes, .. } if limit_bytes == 32 << 20),
        "{err:?}"
    );
    assert!(err.to_string().contains("memory cap of 32 MiB"), "{err}");
    // Below the cap the same tool works.
    let ok = host
        .call("allocate", r#"{"mib": 8}"#, &CallOptions::default())
        .await
        .expect("8 MiB fits in 32 MiB");
    assert_eq!(ok.into_json().expect("json")["allocated_mib"], 8);
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn runaway_recursion_is_a_stack_overflow() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let err = host
        .call("recurse", "{}", &CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::StackOverflow { .. }), "{err:?}");
    assert!(err.to_string().contains("overflowed its stack"), "{err}");
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn host_files_are_invisible() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    // A file that certainly exists on the host, and its directory.
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET").expect("write");
    for path in ["/etc/passwd", secret.to_str().expect("utf-8"), ".", "/"] {
        let err = host
            .call(
                "read_file",
                &serde_json::json!({ "path": path }).to_string(),
                &CallOptions::default(),
            )
            .await
            .unwrap_err();
        let CallError::ToolFailed { message, .. } = &err else {
            panic!("{path}: expected the guest's own read error, got {err:?}");
        };
        assert!(
            message.starts_with(&format!("cannot read {path}")),
            "{message}"
        );
        assert!(!message.contains("root:") && !message.contains("TOP-SECRET"));
    }
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn environment_and_arguments_are_empty() {
    let host_vars: Vec<(String, String)> = std::env::vars().collect();
    assert!(
        !host_vars.is_empty(),
        "the host process has variables (PATH, HOME, ...)"
    );
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let out = host
        .call("read_env", "{}", &CallOptions::default())
        .await
        .expect("reading the environment is allowed, it is just empty");
    let json = out.json().expect("json");
    assert_eq!(
        json["vars"],
        serde_json::json!({}),
        "no variable crosses: {json}"
    );
    assert_eq!(json["args"], serde_json::json!([]));
    for (_, value) in host_vars.iter().filter(|(_, v)| v.len() > 8) {
        assert!(!out.text.contains(value.as_str()), "a host value leaked");
    }
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn sockets_are_denied() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr").to_string();
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let err = host
        .call(
            "open_socket",
            &serde_json::json!({ "addr": addr }).to_string(),
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    let CallError::ToolFailed { message, .. } = &err else {
        panic!("expected the guest's connect error, got {err:?}");
    };
    assert!(
        message.starts_with(&format!("cannot connect to {addr}")),
        "{message}"
    );
    // Nothing ever reached the listener.
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn printing_100_mb_is_truncated_not_fatal() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host_with(dir.path(), Limits::default().with_timeout_ms(60_000)).await;
    let out = host
        .call("print_stdout", r#"{"mib": 100}"#, &CallOptions::default())
        .await
        .expect("printing is never a reason to fail");
    assert_eq!(out.into_json().expect("json")["printed_mib"], 100);
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_100_mb_result_is_refused() {
    let dir = plugin_dir(&[HOSTILE]);
    // Enough memory, fuel and time to build the result, so that the output cap
    // is what stops it.
    let host = host_with(
        dir.path(),
        Limits::default()
            .with_memory_bytes(512 << 20)
            .with_fuel(u64::MAX / 2)
            .with_timeout_ms(120_000),
    )
    .await;
    let err = host
        .call(
            "big_result",
            r#"{"bytes": 100000000}"#,
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, CallError::OutputTooLarge { bytes: 100_000_002, limit_bytes, .. }
            if limit_bytes == Limits::DEFAULT_OUTPUT_BYTES),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("more than the output cap"),
        "{err}"
    );
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_100_mb_result_under_the_default_memory_cap_hits_the_cap() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let err = host
        .call(
            "big_result",
            r#"{"bytes": 100000000}"#,
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::MemoryLimit { .. }), "{err:?}");
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_panic_is_a_trap_with_the_panic_message() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    let err = host
        .call(
            "panic",
            r#"{"message": "kaboom 17"}"#,
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Trapped { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("tool `panic` crashed"), "{text}");
    assert!(
        text.contains("kaboom 17"),
        "the panic message is reported: {text}"
    );
    assert_eq!(err.llm_text(), format!("Error: {text}"));
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn every_call_gets_a_fresh_instance() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    for _ in 0..3 {
        let out = host
            .call("counter", "{}", &CallOptions::default())
            .await
            .expect("call");
        assert_eq!(
            out.into_json().expect("json")["calls"],
            1,
            "no state survives a call"
        );
    }
}

/// The pooling allocator keeps dirty pages resident and resets them between
/// instances (`keep_resident_bytes`, `PAGEMAP_SCAN`): nothing one call wrote
/// anywhere in linear memory, including pages it grew, is readable by the next.
#[tokio::test]
async fn no_bytes_of_one_call_reach_the_next() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host(dir.path()).await;
    for round in 0..4 {
        let out = host
            .call("residue", "{}", &CallOptions::default())
            .await
            .expect("call");
        let json = out.into_json().expect("json");
        assert_eq!(json["before"], 0, "round {round}: residue found: {json}");
        assert_eq!(
            json["after"], 65536,
            "round {round}: the scan sees what this call wrote: {json}"
        );
    }
}

#[tokio::test]
async fn call_limits_too_small_to_instantiate_fail_the_call_not_the_load() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = host_with(dir.path(), Limits::default().with_memory_bytes(64 << 10)).await;
    assert!(
        host.load_errors().is_empty(),
        "describe runs under its own limits"
    );
    let err = host
        .call("echo", r#"{"text": "x"}"#, &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CallError::MemoryLimit {
                limit_bytes: 65536,
                ..
            }
        ),
        "{err:?}"
    );
}
