//! `corral secret`: the secret store from the command line. A value goes in
//! on stdin and never comes out: `list` prints names only, in text and JSON,
//! and the store file is private (0600).

use std::io::Write as _;
use std::process::{Command, Stdio};

fn secret(store: &std::path::Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
        .arg("secret")
        .arg("--store")
        .arg(store)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run corral");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write");
    child.wait_with_output().expect("wait")
}

#[test]
fn secrets_go_in_on_stdin_and_never_come_out() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("dir");
    let store = dir.path().join("secrets.toml");
    let value = "sk-test-0123456789abcdef";
    let out = secret(&store, &["set", "EXAMPLE_KEY"], &format!("{value}\n"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains(value));
    let mode = std::fs::metadata(&store)
        .expect("store")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        std::fs::read_to_string(&store)
            .expect("read")
            .contains(&format!("EXAMPLE_KEY = \"{value}\"")),
        "the newline from stdin is not part of the value"
    );

    for args in [&["list"][..], &["list", "--json"][..]] {
        let out = secret(&store, args, "");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success());
        assert!(text.contains("EXAMPLE_KEY"), "{text}");
        assert!(!text.contains(value), "a value was printed: {text}");
    }

    let out = secret(&store, &["set", "bad name"], "x");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("letters, digits and `_`"));
    let out = secret(&store, &["set", "EMPTY"], "");
    assert_eq!(out.status.code(), Some(2), "an empty value is refused");

    assert!(
        secret(&store, &["delete", "EXAMPLE_KEY"], "")
            .status
            .success()
    );
    assert_eq!(
        secret(&store, &["delete", "EXAMPLE_KEY"], "").status.code(),
        Some(1)
    );
    let out = secret(&store, &["list"], "");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
}
