//! Plugins that cannot load are reported with their file and reason, and every
//! other plugin in the directory still loads and serves.

use std::path::Path;

use corral::LoadErrorReason::Component;
use corral::{CallOptions, ComponentError, LoadError, LoadErrorReason};

use crate::support::{
    BAD_NAME, BAD_SCHEMA, COMMAND, DUP_A, DUP_B, ENCODE, HOSTILE, TEXT, TRAP_DESCRIBE,
    assert_still_serves, guest, host, plugin_dir,
};

/// Loads `HOSTILE` plus whatever `add` puts in the directory, asserts exactly
/// one load error for `file`, that the hostile plugin still serves, and returns
/// the error.
async fn single_failure(extra: &[&str], add: impl FnOnce(&Path), file: &str) -> LoadError {
    let mut guests = vec![HOSTILE];
    guests.extend_from_slice(extra);
    let dir = plugin_dir(&guests);
    add(dir.path());
    let host = host(dir.path()).await;
    let errors = host.load_errors();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].path, dir.path().join(file));
    assert!(
        errors[0]
            .to_string()
            .starts_with(&dir.path().join(file).display().to_string()),
        "the message names the file: {}",
        errors[0]
    );
    assert_still_serves(&host).await;
    errors[0].clone()
}

#[tokio::test]
async fn truncated_component() {
    let err = single_failure(
        &[],
        |dir| {
            let bytes = std::fs::read(guest(TEXT)).expect("read");
            std::fs::write(dir.join("truncated.wasm"), &bytes[..bytes.len() / 2]).expect("write");
        },
        "truncated.wasm",
    )
    .await;
    assert!(
        matches!(err.reason, Component(ComponentError::InvalidComponent(_))),
        "{err}"
    );
    assert!(
        err.to_string().contains("may be truncated or corrupt"),
        "{err}"
    );
}

#[tokio::test]
async fn not_wasm_at_all() {
    let err = single_failure(
        &[],
        |dir| std::fs::write(dir.join("notes.wasm"), "just text").expect("write"),
        "notes.wasm",
    )
    .await;
    assert_eq!(err.reason, Component(ComponentError::NotWasm));
}

#[tokio::test]
async fn core_module_instead_of_a_component() {
    let err = single_failure(
        &[],
        // The smallest valid core module: magic and version 1.
        |dir| std::fs::write(dir.join("core.wasm"), b"\0asm\x01\0\0\0").expect("write"),
        "core.wasm",
    )
    .await;
    assert_eq!(err.reason, Component(ComponentError::CoreModule));
    assert!(err.to_string().contains("not a component"), "{err}");
}

#[tokio::test]
async fn component_of_another_world() {
    let err = single_failure(&[COMMAND], |_| {}, COMMAND).await;
    assert!(
        matches!(err.reason, LoadErrorReason::WrongWorld(_)),
        "{err}"
    );
    assert!(err.to_string().contains("corral:tool/tool@0.3.0"), "{err}");
    assert!(err.to_string().contains("wit/v0.1.0"), "{err}");
}

#[tokio::test]
async fn trap_in_describe() {
    let err = single_failure(&[TRAP_DESCRIBE], |_| {}, TRAP_DESCRIBE).await;
    assert!(
        matches!(err.reason, LoadErrorReason::DescribeFailed(_)),
        "{err}"
    );
    assert!(
        err.to_string().contains("describe exploded on purpose"),
        "{err}"
    );
}

#[tokio::test]
async fn invalid_tool_name() {
    let err = single_failure(&[BAD_NAME], |_| {}, BAD_NAME).await;
    assert!(
        matches!(&err.reason, LoadErrorReason::InvalidSpec { tool, .. } if tool == "bad-name!"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("use only letters, digits and underscores"),
        "{err}"
    );
}

#[tokio::test]
async fn invalid_schema() {
    let err = single_failure(&[BAD_SCHEMA], |_| {}, BAD_SCHEMA).await;
    assert!(
        matches!(&err.reason, LoadErrorReason::InvalidSpec { tool, .. } if tool == "bad_schema"),
        "{err}"
    );
    assert!(err.to_string().contains("not a valid JSON Schema"), "{err}");
}

#[tokio::test]
async fn duplicate_names_name_both_files() {
    let dir = plugin_dir(&[HOSTILE, DUP_A, DUP_B]);
    let host = host(dir.path()).await;
    let errors = host.load_errors();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    // File-name order decides: dup_a keeps the name, dup_b is refused.
    assert_eq!(errors[0].path, dir.path().join(DUP_B));
    assert_eq!(
        errors[0].reason,
        LoadErrorReason::DuplicateTool {
            tool: "dup_tool".into(),
            other: dir.path().join(DUP_A),
        }
    );
    let text = errors[0].to_string();
    assert!(text.contains(DUP_A) && text.contains(DUP_B), "{text}");
    assert!(
        text.contains("`[presentation]` `rename`"),
        "suggests the fix: {text}"
    );
    let out = host
        .call("dup_tool", "{}", &CallOptions::default())
        .await
        .expect("the first plugin serves the name");
    assert_eq!(out.into_json().expect("json")["from"], "fixture-dup-a");
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn all_failures_at_once_leave_the_good_plugins_serving() {
    let dir = plugin_dir(&[
        HOSTILE,
        TEXT,
        TRAP_DESCRIBE,
        BAD_NAME,
        BAD_SCHEMA,
        COMMAND,
        DUP_A,
        DUP_B,
    ]);
    std::fs::write(dir.path().join("core.wasm"), b"\0asm\x01\0\0\0").expect("write");
    let host = host(dir.path()).await;
    let failed: Vec<String> = host
        .load_errors()
        .iter()
        .map(|e| {
            e.path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        failed,
        [
            "core.wasm",
            COMMAND,
            BAD_NAME,
            BAD_SCHEMA,
            DUP_B,
            TRAP_DESCRIBE
        ]
    );
    assert!(host.tool("word_count").is_some());
    assert!(host.tool("dup_tool").is_some());
    assert_still_serves(&host).await;
}

#[tokio::test]
async fn a_missing_plugin_directory_is_a_host_error() {
    let err = corral::Host::builder()
        .plugin_dir("/definitely/not/here")
        .pool(crate::support::pool())
        .build()
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("/definitely/not/here") && text.contains("existing directory"),
        "{text}"
    );
    assert!(
        !text.contains("--"),
        "a library error names no CLI flag: {text}"
    );
}

#[tokio::test]
async fn the_cache_is_used_and_a_corrupt_entry_is_recompiled() {
    let cache_dir = tempfile::tempdir().expect("temp dir");
    let dir = plugin_dir(&[HOSTILE]);
    let build = || {
        corral::Host::builder()
            .plugin_dir(dir.path())
            .pool(crate::support::pool())
            .cache(corral::ComponentCache::in_dir(cache_dir.path()))
            .build()
    };
    let first = build().await.expect("host");
    assert_still_serves(&first).await;
    let entries: Vec<_> = std::fs::read_dir(cache_dir.path())
        .expect("cache dir exists")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let sha = first
        .tool("echo")
        .and_then(|t| t.plugin().map(|p| p.sha256().to_string()))
        .expect("echo comes from a plugin");
    let name = entries[0]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with(&sha) && name.ends_with(".cwasm"), "{name}");

    let second = build().await.expect("host from cache");
    assert_still_serves(&second).await;

    // Garbage, a truncated entry, one flipped bit: each is caught by the
    // entry's checksum before `deserialize`, recompiled and rewritten whole.
    let whole = std::fs::read(&entries[0]).expect("entry");
    let mut flipped = whole.clone();
    flipped[whole.len() / 2] ^= 0x10;
    for corrupt in [
        b"garbage".to_vec(),
        whole[..whole.len() - 1].to_vec(),
        flipped,
    ] {
        std::fs::write(&entries[0], &corrupt).expect("corrupt the entry");
        let host = build().await.expect("host despite a corrupt cache entry");
        assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
        assert_still_serves(&host).await;
        assert_eq!(
            std::fs::read(&entries[0]).expect("entry").len(),
            whole.len(),
            "the entry is rewritten whole"
        );
    }
}

/// Entries named `*.wasm` that are not plugins (a named pipe, a directory,
/// a symlink loop, a file whose name carries terminal escapes) are each
/// reported with the reason instead of skipped, the pipe is never waited
/// on, and `corral list` shows every name escaped; the other plugins serve.
#[cfg(unix)]
#[tokio::test]
async fn odd_entries_are_reported_with_their_reason_and_names_escaped() {
    let dir = plugin_dir(&[HOSTILE]);
    let fifo = dir.path().join("fifo.wasm");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    std::fs::create_dir(dir.path().join("dir.wasm")).expect("dir");
    std::os::unix::fs::symlink("loop.wasm", dir.path().join("loop.wasm")).expect("symlink");
    let evil = dir.path().join("ev\u{1b}[2Jil.wasm");
    std::fs::write(&evil, "x").expect("write");
    // A newline in a name would start a line of its own on the terminal.
    let forged = dir.path().join("a\nnot loaded: forged.wasm");
    std::fs::write(&forged, "x").expect("write");

    let host = host(dir.path()).await;
    let mut errors: Vec<_> = host
        .load_errors()
        .iter()
        .map(|e| {
            (
                e.path.file_name().expect("name").to_owned(),
                e.reason.clone(),
            )
        })
        .collect();
    errors.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<_> = errors.iter().map(|(n, _)| n.to_string_lossy()).collect();
    assert_eq!(
        names,
        [
            "a\nnot loaded: forged.wasm",
            "dir.wasm",
            "ev\u{1b}[2Jil.wasm",
            "fifo.wasm",
            "loop.wasm"
        ],
        "{errors:?}"
    );
    assert_eq!(errors[0].1, Component(ComponentError::NotWasm));
    assert_eq!(
        errors[1].1,
        Component(ComponentError::NotAFile("a directory"))
    );
    assert_eq!(errors[2].1, Component(ComponentError::NotWasm));
    assert_eq!(
        errors[3].1,
        Component(ComponentError::NotAFile("a named pipe (FIFO)"))
    );
    assert!(
        matches!(errors[4].1, Component(ComponentError::Io(_))),
        "{errors:?}"
    );
    assert_still_serves(&host).await;

    let out = crate::cli::corral(dir.path(), &["list"]);
    assert!(out.status.success(), "{out:?}");
    for stream in [&out.stdout, &out.stderr] {
        assert!(
            !stream.contains(&0x1b),
            "a raw escape reached the terminal: {}",
            String::from_utf8_lossy(stream)
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let not_loaded: Vec<_> = stderr
        .lines()
        .filter(|l| l.starts_with("not loaded: "))
        .collect();
    assert_eq!(not_loaded.len(), 5, "{stderr}");
    // Every error line, in the log too, is one line: the forged name's
    // newline is shown escaped, never as a line of its own.
    assert!(
        !stderr
            .lines()
            .any(|l| l.starts_with("not loaded: forged.wasm")),
        "{stderr}"
    );
    assert_eq!(
        stderr
            .matches("a\\nnot loaded: forged.wasm: not a WebAssembly file")
            .count(),
        2,
        "the log line and the closing line: {stderr}"
    );
    assert!(
        not_loaded
            .iter()
            .any(|l| l.contains("fifo.wasm: is a named pipe (FIFO), not a regular file")),
        "{stderr}"
    );
    assert!(
        not_loaded.iter().any(|l| l.contains("ev\\u{1b}[2Jil.wasm")),
        "{stderr}"
    );
}

/// A plugin that loads under a name with a newline in it: the log names it
/// escaped on one line, never starting a line of its own.
#[test]
fn a_plugin_named_with_a_newline_is_logged_on_one_line() {
    let dir = plugin_dir(&[HOSTILE]);
    let file = std::fs::read_dir(dir.path())
        .expect("dir")
        .next()
        .expect("the plugin")
        .expect("entry")
        .path();
    std::fs::rename(&file, dir.path().join("ok\nforged: line.wasm")).expect("rename");
    let out = crate::cli::corral(dir.path(), &["-vv", "list"]);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("component ready"), "{stderr}");
    assert!(stderr.contains("ok\\nforged: line.wasm"), "{stderr}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("forged: line")),
        "{stderr}"
    );
}

/// A file that opens but cannot be read (`/proc/self/mem` answers EIO at
/// offset 0, even to root, who may read a file of mode 000) is reported
/// with the system's reason; the other plugins serve.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_file_that_cannot_be_read_is_reported_with_the_reason() {
    let err = single_failure(
        &[],
        |dir| {
            std::os::unix::fs::symlink("/proc/self/mem", dir.join("unreadable.wasm"))
                .expect("symlink");
        },
        "unreadable.wasm",
    )
    .await;
    assert!(
        matches!(err.reason, Component(ComponentError::Io(_))),
        "{err}"
    );
    assert!(err.to_string().contains("Input/output error"), "{err}");
}

/// A cache directory that cannot take a write, on a real file system: a
/// tmpfs of 64 KiB (full long before a compiled entry fits, so writes fail
/// with ENOSPC part-way) and one mounted read-only (EROFS), each mounted in
/// a user and mount namespace of its own (`unshare -rm`; root inside it,
/// nobody's outside it). The plugins compile and serve from memory, the
/// host warns once for all of them, and no partial entry or temporary
/// file is left. (`RLIMIT_FSIZE` is no stand-in for a full disk: wasmtime's
/// copy-on-write memory images are memfds, which it limits too.)
#[cfg(target_os = "linux")]
#[test]
fn a_full_or_read_only_cache_directory_serves_from_memory_and_warns_once() {
    const SCRIPT: &str = r#"cache=$1; listing=$2; options=$3; shift 3
mount -t tmpfs -o "$options" tmpfs "$cache" || exit 97
"$@"; status=$?
ls -A "$cache" > "$listing"
exit $status"#;
    let dir = plugin_dir(&[HOSTILE, ENCODE]);
    for (options, reason) in [
        ("size=64k,mode=700", "No space left on device"),
        ("ro,mode=700", "Read-only file system"),
    ] {
        let scratch = tempfile::tempdir().expect("scratch");
        let (cache, listing) = (scratch.path().join("cache"), scratch.path().join("listing"));
        std::fs::create_dir(&cache).expect("mount point");
        let out = std::process::Command::new("unshare")
            .args(["-rm", "sh", "-c", SCRIPT, "sh"])
            .args([&cache, &listing])
            .arg(options)
            .arg(env!("CARGO_BIN_EXE_corral"))
            .arg("--plugins")
            .arg(dir.path())
            .arg("--cache-dir")
            .arg(&cache)
            // -v: warnings on stderr (the default shows errors only).
            .args(["list", "--json", "-v"])
            .env_remove("RUST_LOG")
            .output()
            .expect("run unshare (util-linux)");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(
            out.status.code(),
            Some(97),
            "this test mounts a tmpfs in a user namespace of its own: \
             `unshare -rm` must be allowed here ({stderr})"
        );
        assert!(out.status.success(), "{options}: {stderr}");
        let tools = crate::cli::stdout_json(&out);
        assert_eq!(
            tools["load_errors"],
            serde_json::json!([]),
            "{options}: {tools}"
        );
        let names = tools.to_string();
        assert!(
            names.contains("\"echo\"") && names.contains("\"sha256\""),
            "{options}: both plugins serve from memory: {names}"
        );
        assert_eq!(
            stderr
                .matches("cannot write to the component cache")
                .count(),
            1,
            "{options}: one warning for both plugins: {stderr}"
        );
        assert!(
            stderr.contains(reason),
            "{options}: the reason is shown: {stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(&listing).expect("listing"),
            "",
            "{options}: nothing partial is left in the cache"
        );
    }
}
