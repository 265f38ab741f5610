//! The `corral` binary: output formats and exit codes (0 success, 1 the tool
//! failed, 2 corral failed).

use std::process::Output;

use serde_json::Value;

use crate::support::{HOSTILE, SAMPLES, plugin_dir};

/// The `corral` binary cargo built for these tests.
fn corral_bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_corral"))
}

pub(crate) fn corral(plugins: &std::path::Path, args: &[&str]) -> Output {
    let cache = crate::support::cache_dir();
    std::process::Command::new(corral_bin())
        .arg("--plugins")
        .arg(plugins)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run corral")
}

pub(crate) fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn list_json_shows_tools_and_load_errors() {
    let dir = plugin_dir(SAMPLES);
    std::fs::write(dir.path().join("broken.wasm"), "nope").expect("write");
    let out = corral(dir.path(), &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let json = stdout_json(&out);
    let names: Vec<&str> = json["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert!(
        names.len() >= 8 && names.contains(&"word_count"),
        "{names:?}"
    );
    assert_eq!(
        json["load_errors"][0]["error"],
        "not a WebAssembly file (no `\\0asm` header); remove it from the plugin directory"
    );
}

#[test]
fn list_prints_a_table() {
    let dir = plugin_dir(SAMPLES);
    let out = corral(dir.path(), &["list"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("TOOL"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("word_count") && l.contains("text")),
        "{text}"
    );
}

#[test]
fn describe_json_has_the_schema_plugin_hash_and_limits() {
    let dir = plugin_dir(SAMPLES);
    std::fs::write(
        dir.path().join("text.policy.toml"),
        "version = 1\n[limits]\ntimeout_ms = 1234\n",
    )
    .expect("policy");
    let out = corral(dir.path(), &["describe", "slugify", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let json = stdout_json(&out);
    assert_eq!(json["parameters"]["required"], serde_json::json!(["text"]));
    assert_eq!(json["plugin"]["name"], "text");
    assert_eq!(json["plugin"]["sha256"].as_str().expect("sha").len(), 64);
    assert_eq!(json["metadata"]["idempotent"], true);
    // The limits the catalog computed at load: the policy's deadline over
    // the host's other defaults, in the numbers and in the grants' words.
    let limits = &json["plugin"]["limits"];
    assert_eq!(limits["timeout_ms"], 1234, "{json}");
    assert_eq!(limits["fuel"], corral::Limits::default().fuel, "{json}");
    let grants = json["plugin"]["grants"].to_string();
    assert!(grants.contains("1234 ms"), "{grants}");
}

#[test]
fn call_success_failure_and_corral_failure_have_distinct_exit_codes() {
    let dir = plugin_dir(&[SAMPLES, &[HOSTILE]].concat());
    let ok = corral(
        dir.path(),
        &["call", "sha256", r#"{"text":"abc"}"#, "--json"],
    );
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let json = stdout_json(&ok);
    assert_eq!(json["ok"], true);
    assert_eq!(json["output"]["bytes"], 3);
    assert!(json["fuel_consumed"].as_u64().expect("fuel") > 0);

    let failed = corral(dir.path(), &["call", "sha256", r#"{"text":1}"#, "--json"]);
    assert_eq!(failed.status.code(), Some(1));
    let json = stdout_json(&failed);
    assert_eq!(json["ok"], false);
    assert_eq!(json["error"]["kind"], "invalid_arguments");
    assert!(
        json["llm_text"]
            .as_str()
            .expect("text")
            .starts_with("Error: invalid arguments for `sha256`")
    );

    let limited = corral(dir.path(), &["call", "spin", "--fuel", "1000000"]);
    assert_eq!(limited.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&limited.stderr).contains("ran out of fuel after 1000000 units")
    );

    let unknown = corral(dir.path(), &["call", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown tool `nope`"));

    let missing = corral(std::path::Path::new("/no/such/dir"), &["list"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/no/such/dir"));
}

#[test]
fn arguments_come_from_a_file_or_stdin_and_context_from_flags() {
    let dir = plugin_dir(&[HOSTILE]);
    let file = dir.path().join("args.json");
    std::fs::write(&file, r#"{"text":"from a file"}"#).expect("write");
    let out = corral(
        dir.path(),
        &["call", "echo", &format!("@{}", file.display())],
    );
    assert_eq!(stdout_json(&out)["echo"], "from a file");

    let mut child = std::process::Command::new(corral_bin())
        .args(["--plugins"])
        .arg(dir.path())
        .args(["call", "echo", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(br#"{"text":"from stdin"}"#)
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(stdout_json(&out)["echo"], "from stdin");

    let out = corral(
        dir.path(),
        &[
            "call",
            "context_echo",
            "--context",
            "tenant=acme",
            "--context",
            "api_key=secret",
            "--context-allow",
            "fixture_hostile=tenant,user",
        ],
    );
    assert_eq!(
        stdout_json(&out)["context"],
        serde_json::json!({"tenant": "acme"}),
        "only allowed keys cross"
    );
    let out = corral(
        dir.path(),
        &["call", "context_echo", "--context", "tenant=acme"],
    );
    assert_eq!(
        stdout_json(&out)["context"],
        serde_json::json!({}),
        "nothing crosses by default"
    );
}

#[test]
fn plan_runs_the_example_with_waves_references_and_a_skip() {
    let dir = plugin_dir(SAMPLES);
    let example = crate::support::repository_root().join("examples/plans/report.json");
    let example = example.to_str().expect("utf-8 path");
    let dry = corral(dir.path(), &["plan", example, "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0));
    let text = String::from_utf8_lossy(&dry.stdout);
    assert_eq!(text.lines().count(), 3, "three waves: {text}");
    assert!(
        text.starts_with("wave 0: words (word_count), digest (sha256), broken"),
        "{text}"
    );

    let out = corral(dir.path(), &["plan", example, "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a skipped step makes the exit code 1"
    );
    let json = stdout_json(&out);
    assert_eq!(json["status"], "partial");
    let steps = json["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 4, "only output_steps are reported");
    assert_eq!(steps[0]["output"]["result"], 71.0 / 11.0);
    assert_eq!(
        steps[3]["error"]["message"],
        "Skipped because dependency 'broken' failed"
    );

    let dot = corral(dir.path(), &["plan", example, "--dot"]);
    assert!(String::from_utf8_lossy(&dot.stdout).contains("\"words\" -> \"ratio\";"));
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_gated_tool_needs_a_reviewer_and_follows_its_decision() {
    let dir = plugin_dir(SAMPLES);
    let args = r#"{"name": "draft-1"}"#;
    let out = corral(dir.path(), &["call", "notes_delete", args]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // Said once: the CLI's own error line, not also the call log's ERROR line.
    assert_eq!(
        stderr(&out)
            .matches("needs approval (declared gate) but no reviewer is configured")
            .count(),
        1,
        "{}",
        stderr(&out)
    );
    // The CLI, not the library, names the flag that fixes it.
    assert!(
        stderr(&out).contains("pass --approve auto|deny|console|rules:FILE"),
        "{}",
        stderr(&out)
    );

    let out = corral(
        dir.path(),
        &["call", "notes_delete", args, "--approve", "deny"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim(),
        "Error: Rejected by reviewer: denied by policy (deny-all reviewer)"
    );
}

#[test]
fn rules_decide_and_the_audit_log_records_it() {
    let dir = plugin_dir(SAMPLES);
    let rules = crate::support::repository_root().join("examples/approvals/rules.toml");
    let rules = rules.to_str().expect("utf-8 path");
    let state = tempfile::tempdir().expect("temp dir");
    let audit = state.path().join("audit.jsonl");
    let approve = format!("rules:{rules}");
    let run = |name: &str| {
        corral(
            dir.path(),
            &[
                "call",
                "notes_delete",
                &format!(r#"{{"name": "{name}"}}"#),
                "--approve",
                &approve,
                "--audit-log",
                audit.to_str().expect("utf-8"),
                "--json",
            ],
        )
    };
    // Allowed by the rules; the guest then has no directory (none granted).
    let out = run("draft-1");
    let json = stdout_json(&out);
    assert_eq!(json["error"]["kind"], "tool_failed", "{json}");
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no notes directory"),
        "{json}"
    );
    let out = run("taxes");
    let json = stdout_json(&out);
    assert_eq!(json["error"]["kind"], "rejected");
    assert_eq!(
        json["llm_text"],
        "Error: Rejected by reviewer: only notes named draft-* may be deleted without a \
         person's approval"
    );

    let log = std::fs::read_to_string(&audit).expect("audit log");
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert_eq!(lines[0]["decision"], "continue");
    assert_eq!(lines[1]["decision"], "exit_early");
    assert!(
        lines
            .iter()
            .all(|l| l["reviewer"] == "rules" && l["plugin"] == "notes")
    );
}

#[test]
fn a_broken_rules_file_is_named_with_its_line() {
    let dir = plugin_dir(SAMPLES);
    let state = tempfile::tempdir().expect("temp dir");
    let rules = state.path().join("rules.toml");
    std::fs::write(&rules, "version = 1\ndefault = \"sometimes\"\n").expect("write");
    let out = corral(
        dir.path(),
        &[
            "call",
            "sha256",
            r#"{"text": "x"}"#,
            "--approve",
            &format!("rules:{}", rules.display()),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("rules.toml are invalid"), "{err}");
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn policy_check_says_what_each_plugin_gets_and_names_broken_files() {
    let data = tempfile::tempdir().expect("data");
    let policy = format!(
        "version = 1\n[[filesystem]]\nhost = {:?}\nguest = \"/notes\"\naccess = \"read-write\"\n",
        data.path().display().to_string()
    );
    let dir = crate::support::plugin_dir_with_policies(&[
        (crate::support::NOTES, Some(&policy)),
        (crate::support::TEXT, None),
    ]);
    let out = corral(dir.path(), &["policy", "check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "files: read and write {} (the guest sees it as /notes)",
            data.path().canonicalize().unwrap().display()
        )),
        "{text}"
    );
    assert!(
        text.contains("text.wasm (no policy file)\n  nothing beyond the defaults"),
        "{text}"
    );

    std::fs::write(
        dir.path().join("text.policy.toml"),
        "version = 1\n[limits]\nfuel = -1\n",
    )
    .expect("write");
    let out = corral(dir.path(), &["policy", "check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let json = stdout_json(&out);
    let error = json["errors"][0]["error"].as_str().expect("error");
    assert!(error.contains("text.policy.toml:3:"), "{error}");
    assert_eq!(json["plugins"][0]["plugin"], "notes");
}

#[test]
fn list_reports_a_description_with_escape_codes_as_a_load_error() {
    let dir = plugin_dir(&[HOSTILE, crate::support::ESCAPE_DESCRIBE]);
    let out = corral(dir.path(), &["list"]);
    assert_eq!(out.status.code(), Some(0));
    let both = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        !both.contains('\u{1b}') && !both.contains('\u{7}'),
        "{both:?}"
    );
    assert!(
        stderr(&out).contains("tool `innocent`: the description contains U+001B (ESC)"),
        "{}",
        stderr(&out)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("innocent"));
}

#[test]
fn a_closed_pipe_ends_quietly() {
    // 2 MB of output into `head -c 10`: the write fails with EPIPE.
    let dir = plugin_dir(&[HOSTILE]);
    let script = format!(
        "set -o pipefail; '{}' --plugins '{}' --cache-dir '{}' --output-kib 4096 \
         call big_result '{{\"bytes\": 2000000}}' | head -c 10 >/dev/null",
        corral_bin().display(),
        dir.path().display(),
        crate::support::cache_dir().display()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .env_remove("RUST_LOG")
        .output()
        .expect("bash");
    let err = stderr(&out);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn json_errors_carry_the_tools_code() {
    let dir = plugin_dir(&[HOSTILE]);
    let out = corral(
        dir.path(),
        &["call", "fail", r#"{"message": "x"}"#, "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let json = stdout_json(&out);
    assert_eq!(json["error"]["kind"], "tool_failed", "{json}");
    assert_eq!(json["error"]["code"], 42, "{json}");
}

#[test]
fn health_graph_and_manifest_commands() {
    let dir = plugin_dir(&[HOSTILE]);
    let out = corral(dir.path(), &["health", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let health = stdout_json(&out);
    assert_eq!(
        health["status"], "UNKNOWN",
        "a fresh process has made no calls"
    );
    assert!(
        health["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["tool"] == "echo")
    );

    let out = corral(dir.path(), &["graph", "--dot"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dot = String::from_utf8_lossy(&out.stdout);
    assert!(
        dot.starts_with("digraph tools {") && dot.contains("\"gated\" -> \"echo\";"),
        "{dot}"
    );

    let out = corral(dir.path(), &["manifest"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let manifest = stdout_json(&out);
    assert_eq!(manifest["schemaVersion"], "1.0");
    let gated = manifest["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "gated")
        .expect("gated");
    assert_eq!(gated["security"]["requiresApproval"], true);
    assert_eq!(gated["dependsOn"], serde_json::json!(["echo"]));
}
