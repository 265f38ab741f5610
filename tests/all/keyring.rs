//! The secret store in the OS keyring (`--secrets keyring:NAME`): the
//! kernel's keyutils keyring, set, listed, used for a request and deleted by
//! separate `corral` processes of one session keyring.

use std::process::Command;

use super::secrets::{spin_dir, with_stdin};
use crate::support::EchoServer;

/// Runs `corral ARGS` inside the kernel session keyring `session` (joined
/// by name, as a login's `pam_keyinit` gives every process of a login one
/// session keyring), with `stdin`.
/// (`keyctl` comes from the Debian package keyutils, scripts/system-deps.sh.)
fn in_session(session: &str, args: &[&str], stdin: &str) -> std::process::Output {
    let mut keyctl = Command::new("keyctl");
    keyctl
        .args(["session", session, env!("CARGO_BIN_EXE_corral")])
        .arg("--cache-dir")
        .arg(crate::support::cache_dir())
        .args(args);
    with_stdin(&mut keyctl, stdin)
}

#[test]
fn a_secret_set_in_the_os_keyring_reaches_the_request_and_never_the_guest() {
    // The kernel keyring (keyutils): `secret set`, `list` and the call run
    // as separate processes of one session, as from one login shell.
    let session = format!("corral_test_{}", std::process::id());
    let store = format!("keyring:{session}");
    let value = "sk-keyring-0123456789abcdef";
    let out = in_session(
        &session,
        &["--secrets", &store, "secret", "set", "EXAMPLE_KEY"],
        value,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("set in keyring corral/{session}")),
        "{stderr}"
    );
    let out = in_session(
        &session,
        &["--secrets", &store, "secret", "list", "--json"],
        "",
    );
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        listed,
        serde_json::json!({ "store": format!("keyring corral/{session}"), "names": ["EXAMPLE_KEY"] })
    );

    let server = EchoServer::start();
    let other = EchoServer::start();
    let dir = spin_dir(server.port, other.port);
    let plugins = dir.path().display().to_string();
    let input = format!(r#"{{"url": "http://127.0.0.1:{}/x"}}"#, server.port);
    let out = in_session(
        &session,
        &[
            "--secrets",
            &store,
            "--plugins",
            &plugins,
            "call",
            "web_fetch",
            &input,
        ],
        "",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let heads = server.heads.lock().expect("lock").clone();
    assert!(
        heads[0]
            .to_ascii_lowercase()
            .contains(&format!("authorization: bearer {value}")),
        "{heads:?}"
    );
    assert!(!stdout.contains(value), "{stdout}");

    let out = in_session(
        &session,
        &["--secrets", &store, "secret", "delete", "EXAMPLE_KEY"],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = in_session(&session, &["--secrets", &store, "secret", "list"], "");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
}
