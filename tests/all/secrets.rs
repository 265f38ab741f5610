//! `corral secret`: the secret store from the command line. A value goes in
//! on stdin and never comes out: `list` prints names only, in text and JSON,
//! and the store file is private (0600).

use std::io::Write as _;
use std::process::{Command, Stdio};

fn secret(store: &std::path::Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
        .arg("--secrets")
        .arg(store)
        .arg("secret")
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

/// A one-thread HTTP/1.1 server on 127.0.0.1 that answers every request
/// with the request's own head (so a tool's output echoes the headers it
/// sent), and keeps the heads it saw.
struct EchoServer {
    port: u16,
    heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl EchoServer {
    fn start() -> Self {
        use std::io::{BufRead as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
                let mut head = String::new();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    head.push_str(&line);
                    line.clear();
                }
                seen.lock().expect("lock").push(head.clone());
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{head}",
                    head.len()
                );
            }
        });
        Self { port, heads }
    }
}

#[tokio::test]
async fn the_host_injects_a_credential_the_guest_never_sees_and_redacts_its_echo() {
    let server = EchoServer::start();
    let other = EchoServer::start();
    let dir = crate::support::plugin_dir(&[]);
    std::fs::copy(
        crate::support::guest(crate::support::ANY_SPIN),
        dir.path().join("spin.wasm"),
    )
    .expect("copy");
    std::fs::write(
        dir.path().join("spin.policy.toml"),
        format!(
            "version = 1\n[http]\nallow = [\"http://127.0.0.1:{0}\", \"http://127.0.0.1:{1}\"]\n\
             [[http.credentials]]\nhost = \"http://127.0.0.1:{0}\"\nheader = \"Authorization\"\n\
             value = \"Bearer {{secret:EXAMPLE_KEY}}\"\n",
            server.port, other.port
        ),
    )
    .expect("policy");
    let secret = "sk-test-0123456789abcdef";
    let store_dir = tempfile::tempdir().expect("store");
    let store = corral::SecretStore::at(store_dir.path().join("secrets.toml"));
    let builder = || {
        corral::Host::builder()
            .plugin_dir(dir.path())
            .pool(crate::support::pool())
            .cache(crate::support::cache())
            .secrets(store.clone())
    };

    // No secret in the store: the plugin does not load, saying which.
    let host = builder().build().await.expect("host");
    let error = host.load_errors()[0].to_string();
    assert!(error.contains("corral secret set EXAMPLE_KEY"), "{error}");

    store.set("EXAMPLE_KEY", secret).expect("set");
    let host = builder().build().await.expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let url = format!("http://127.0.0.1:{}/x", server.port);
    let out = host
        .call_value(
            "web_fetch",
            serde_json::json!({ "url": url }),
            &corral::CallOptions::default(),
        )
        .await
        .expect("fetch");
    // The server saw the header the host set ...
    let heads = server.heads.lock().expect("lock").clone();
    assert_eq!(heads.len(), 1);
    assert!(
        heads[0]
            .to_ascii_lowercase()
            .contains(&format!("authorization: bearer {secret}")),
        "{heads:?}"
    );
    // ... and echoed it, but what the tool returned has it redacted.
    assert!(!out.text.contains(secret), "{}", out.text);
    assert!(
        out.text.contains("[secret EXAMPLE_KEY redacted]"),
        "{}",
        out.text
    );

    // A header of the same name the guest sets is replaced, not sent.
    let url = format!("http://127.0.0.1:{}/y", server.port);
    host.call_value(
        "web_fetch_with",
        serde_json::json!({ "url": url, "headers": [["Authorization", "Bearer guest-made"]] }),
        &corral::CallOptions::default(),
    )
    .await
    .expect("fetch");
    let heads = server.heads.lock().expect("lock").clone();
    assert!(!heads[1].contains("guest-made"), "{heads:?}");
    assert!(heads[1].contains(secret), "{heads:?}");

    // Another allowed destination gets no credential.
    let url = format!("http://127.0.0.1:{}/x", other.port);
    host.call_value(
        "web_fetch",
        serde_json::json!({ "url": url }),
        &corral::CallOptions::default(),
    )
    .await
    .expect("fetch");
    let heads = other.heads.lock().expect("lock").clone();
    assert!(
        !heads[0].to_ascii_lowercase().contains("authorization"),
        "{heads:?}"
    );
}
