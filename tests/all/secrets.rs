//! `corral secret`: the secret store from the command line. A value goes in
//! on stdin and never comes out: `list` prints names only, in text and JSON,
//! and the store file is private (0600).

use std::io::Write as _;
use std::process::{Command, Stdio};

fn secret(store: &std::path::Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut corral = Command::new(env!("CARGO_BIN_EXE_corral"));
    corral.arg("--secrets").arg(store).arg("secret").args(args);
    with_stdin(&mut corral, stdin)
}

/// Runs `command` with `stdin` written to it; answers its output.
pub(crate) fn with_stdin(command: &mut Command, stdin: &str) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {command:?}: {e}"));
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

use crate::support::EchoServer;

/// A plugin directory with the Spin fixture, whose policy allows the echo
/// servers on `server` and `other` and injects `EXAMPLE_KEY` into requests
/// to `server`.
pub(crate) fn spin_dir(server: u16, other: u16) -> tempfile::TempDir {
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
            server, other
        ),
    )
    .expect("policy");
    dir
}

#[tokio::test]
async fn the_host_injects_a_credential_the_guest_never_sees_and_redacts_its_echo() {
    let server = EchoServer::start();
    let other = EchoServer::start();
    let dir = spin_dir(server.port, other.port);
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

/// A plugin directory with the Spin fixture whose policy allows `server` and
/// `other`, and injects `EXAMPLE_KEY` into requests to `server`; a store
/// holding `secret`; and an audit log. Answers the host, the directory and
/// store guards, and the audit log's path.
async fn spin_host(
    server: &EchoServer,
    other: &EchoServer,
    secret: &str,
) -> (corral::Host, Vec<tempfile::TempDir>, std::path::PathBuf) {
    let dir = spin_dir(server.port, other.port);
    let store_dir = tempfile::tempdir().expect("store");
    let store = corral::SecretStore::at(store_dir.path().join("secrets.toml"));
    store.set("EXAMPLE_KEY", secret).expect("set");
    let audit = store_dir.path().join("audit.jsonl");
    let host = corral::Host::builder()
        .plugin_dir(dir.path())
        .pool(crate::support::pool())
        .cache(crate::support::cache())
        .secrets(store)
        .audit_log(corral::AuditLog::open(&audit).expect("audit"))
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (host, vec![dir, store_dir], audit)
}

/// The audit log's records with a `secrets_redacted` count, as (tool, count).
fn redacted_calls(audit: &std::path::Path) -> Vec<(String, u64)> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("json"))
        .filter_map(|record| {
            let count = record.get("secrets_redacted")?.as_u64()?;
            Some((record["tool"].as_str()?.to_string(), count))
        })
        .collect()
}

#[tokio::test]
async fn the_guest_reads_no_echoed_secret_and_cannot_send_one_elsewhere() {
    let server = EchoServer::start();
    let other = EchoServer::start();
    let secret = "sk-test-0123456789abcdef";
    let (host, _dirs, audit) = spin_host(&server, &other, secret).await;
    let exchange = |url: String, headers: serde_json::Value, body: serde_json::Value| {
        let host = &host;
        async move {
            host.call_value(
                "web_exchange",
                serde_json::json!({ "url": url, "headers": headers, "body": body }),
                &corral::CallOptions::default(),
            )
            .await
        }
    };

    // The server echoes the injected header in a response header and in its
    // body; the guest reads both with the secret already redacted (the body
    // comes back reversed, a form no output scan looks for).
    let out = exchange(
        format!("http://127.0.0.1:{}/echo", server.port),
        serde_json::json!([]),
        serde_json::Value::Null,
    )
    .await
    .expect("exchange");
    let heads = server.heads.lock().expect("lock").clone();
    assert!(heads[0].contains(secret), "the server got the credential");
    let json = out.json().expect("json");
    let body: String = json["body-reversed"]
        .as_str()
        .expect("body")
        .chars()
        .rev()
        .collect();
    assert!(
        body.contains("Bearer [secret EXAMPLE_KEY redacted]"),
        "{body}"
    );
    assert!(!body.contains("0123456789"), "{body}");
    let echoed = json["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .find(|pair| pair[0] == "x-echo-authorization")
        .expect("echo header")[1]
        .clone();
    assert_eq!(echoed, "Bearer [secret EXAMPLE_KEY redacted]");
    assert!(!out.text.contains("0123456789"), "{}", out.text);

    // A secret the guest holds anyway (here, passed in) does not leave in a
    // header or body to any destination ...
    exchange(
        format!("http://127.0.0.1:{}/leak", other.port),
        serde_json::json!([["X-Leak", secret]]),
        serde_json::json!(format!("key={secret}&hex={}", hex::encode(secret))),
    )
    .await
    .expect("exchange");
    let heads = other.heads.lock().expect("lock").clone();
    assert_eq!(heads.len(), 1);
    assert!(!heads[0].contains("0123456789"), "{heads:?}");
    assert!(
        heads[0].contains("x-leak: [secret EXAMPLE_KEY redacted]"),
        "{heads:?}"
    );
    assert!(
        heads[0].ends_with("key=[secret EXAMPLE_KEY redacted]&hex=[secret EXAMPLE_KEY redacted]"),
        "{heads:?}"
    );
    // A compressed echo would match no form: the host asks for none, and
    // refuses a compressed answer.
    exchange(
        format!("http://127.0.0.1:{}/plain", server.port),
        serde_json::json!([["Accept-Encoding", "gzip"]]),
        serde_json::Value::Null,
    )
    .await
    .expect("exchange");
    let last = server
        .heads
        .lock()
        .expect("lock")
        .last()
        .cloned()
        .expect("head");
    assert!(
        last.contains("accept-encoding: identity") && !last.contains("gzip"),
        "{last}"
    );
    let err = exchange(
        format!("http://127.0.0.1:{}/gzip", server.port),
        serde_json::json!([]),
        serde_json::Value::Null,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("ContentCoding"), "{err}");

    // ... nor in a URL, as it is or percent-encoded: the request is refused.
    for query in [
        secret.to_string(),
        "sk%2dtest%2d0123456789abcdef".to_string(),
    ] {
        let err = exchange(
            format!("http://127.0.0.1:{}/leak?k={query}", other.port),
            serde_json::json!([]),
            serde_json::Value::Null,
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("HttpRequestDenied"), "{err}");
    }
    assert_eq!(
        other.heads.lock().expect("lock").len(),
        1,
        "nothing more sent"
    );

    // Each of those calls is flagged in the audit log, though the tool's
    // audit level records no ordinary call.
    let flagged = redacted_calls(&audit);
    // The echo, the leak, the plain echo, the two URLs (the gzip answer was
    // refused before anything was read).
    assert_eq!(flagged.len(), 5, "{flagged:?}");
    assert!(
        flagged
            .iter()
            .all(|(tool, n)| tool == "web_exchange" && *n >= 1)
    );
    assert_eq!(flagged[1].1, 3, "header, body and hex body: {flagged:?}");
}

/// Records the descriptions it is asked to review, and approves.
#[derive(Debug, Default)]
struct Recorder(std::sync::Mutex<Vec<String>>);

impl corral::Reviewer for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn review<'a>(&'a self, request: &'a corral::ReviewRequest) -> corral::ReviewFuture<'a> {
        self.0
            .lock()
            .expect("lock")
            .push(request.description.clone());
        Box::pin(async { Ok(corral::ApprovalDecision::Continue) })
    }
}

/// The hostile fixture, whose policy injects `EXAMPLE_KEY` (the value
/// [`SECRET`]) into requests to api.example.com, served with `reviewer` and
/// an audit log. Answers the host, the directory guards and the log's path.
async fn hostile_with_a_secret(
    reviewer: std::sync::Arc<Recorder>,
) -> (corral::Host, Vec<tempfile::TempDir>, std::path::PathBuf) {
    let dir = crate::support::plugin_dir(&[crate::support::HOSTILE]);
    std::fs::write(
        dir.path().join("fixture_hostile.policy.toml"),
        "version = 1\n[http]\nallow = [\"https://api.example.com\"]\n\
         [[http.credentials]]\nhost = \"https://api.example.com\"\nheader = \"X-Key\"\n\
         value = \"{secret:EXAMPLE_KEY}\"\n",
    )
    .expect("policy");
    let store_dir = tempfile::tempdir().expect("store");
    let store = corral::SecretStore::at(store_dir.path().join("secrets.toml"));
    store.set("EXAMPLE_KEY", SECRET).expect("set");
    let audit = store_dir.path().join("audit.jsonl");
    let host = corral::Host::builder()
        .plugin_dir(dir.path())
        .pool(crate::support::pool())
        .cache(crate::support::cache())
        .secrets(store)
        .reviewer_arc(reviewer)
        .audit_log(corral::AuditLog::open(&audit).expect("audit"))
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (host, vec![dir, store_dir], audit)
}

/// The secret of [`hostile_with_a_secret`].
const SECRET: &str = "sk-test-0123456789abcdef";

#[tokio::test]
async fn approval_text_and_output_of_a_plugin_with_secrets_are_scanned() {
    let reviewer = std::sync::Arc::new(Recorder::default());
    let (host, _dirs, _) = hostile_with_a_secret(reviewer.clone()).await;
    let secret = SECRET;
    let message = format!("send {secret} to the world");
    let out = host
        .call_value(
            "echo",
            serde_json::json!({ "text": message }),
            &corral::CallOptions::default(),
        )
        .await
        .expect("echo");
    assert_eq!(
        out.into_json().expect("json")["echo"],
        "send [secret EXAMPLE_KEY redacted] to the world"
    );
    host.call_value(
        "ask",
        serde_json::json!({ "message": message }),
        &corral::CallOptions::default(),
    )
    .await
    .expect("ask");
    let seen = reviewer.0.lock().expect("lock").clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("send [secret EXAMPLE_KEY redacted] to the world"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_script_cannot_reassemble_a_secret_from_its_tools_outputs() {
    let (host, _dirs, audit) = hostile_with_a_secret(std::sync::Arc::default()).await;
    // Each half passes the echo tool's own scan; the whole, joined by the
    // script, is caught by the scan of what the script hands back.
    let join = "const a = (await tools.echo({text: 'sk-test-0123'})).echo;\n\
                const b = (await tools.echo({text: '456789abcdef'})).echo;\n";
    let options = corral::CallOptions::default();
    let run = |body: &str| {
        host.call_value(
            corral::CODE_TOOL,
            serde_json::json!({ "code": format!("{join}{body}") }),
            &options,
        )
    };
    let out = run(
        "console.log('key:', a + b);\ntry { await tools[a + b]({}) } catch (e) {}\n\
         return {key: a + b, [a + b]: 1};",
    )
    .await
    .expect("script")
    .into_json()
    .expect("json");
    let redacted = "[secret EXAMPLE_KEY redacted]";
    assert_eq!(out["result"]["key"], redacted, "{out}");
    assert_eq!(out["result"][redacted], 1, "{out}");
    assert_eq!(out["logs"][0]["text"], format!("key: {redacted}"), "{out}");
    // A tool name is the script's text too.
    assert_eq!(out["calls"][1]["tool"], redacted, "{out}");
    assert!(!out.to_string().contains("456789abcdef"), "{out}");
    let err = run("throw new Error(a + b);").await.expect_err("thrown");
    assert!(err.to_string().contains(redacted), "{err}");
    assert!(!err.to_string().contains("456789abcdef"), "{err}");
    let runs: Vec<_> = redacted_calls(&audit)
        .into_iter()
        .filter(|(tool, _)| tool == corral::CODE_TOOL)
        .collect();
    assert_eq!(
        runs,
        [
            (corral::CODE_TOOL.to_string(), 4),
            (corral::CODE_TOOL.to_string(), 1)
        ]
    );
}
