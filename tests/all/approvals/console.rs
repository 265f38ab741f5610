//! The console reviewer through a real pseudo-terminal: prompts from
//! concurrent calls never interleave, and no terminal is a configuration
//! error; and the console answering a guest's elicitation field by field.

use std::io::{Read as _, Write as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::time::{Duration, Instant};

use corral::{CallOptions, ConsoleReviewer};
use serde_json::json;

use super::{DELETE_ALL, builder, call};
use crate::support::{HOSTILE, plugin_dir};

/// A pseudo-terminal: the test holds the master side and keeps one handle on
/// the slave open so the terminal never hangs up between prompts.
struct Pty {
    master: std::fs::File,
    slave_path: std::path::PathBuf,
    _slave: std::fs::File,
    transcript: String,
}

impl Pty {
    fn open() -> Self {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master: OwnedFd = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let slave_path = std::path::PathBuf::from(name.to_str().expect("utf-8 path"));
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&slave_path)
            .expect("open slave");
        Self {
            master: std::fs::File::from(master),
            slave_path,
            _slave: slave,
            transcript: String::new(),
        }
    }

    /// Reads until the transcript contains `needle` `count` times. Fails the
    /// test after 60 s without it.
    fn read_until(&mut self, needle: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.transcript.matches(needle).count() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no `{needle}` (x{count}) in:\n{}",
                self.transcript
            );
            let fd = self.master.as_fd();
            let mut fds = [rustix::event::PollFd::new(
                &fd,
                rustix::event::PollFlags::IN,
            )];
            let timeout = rustix::event::Timespec {
                tv_sec: left.as_secs() as _,
                tv_nsec: 0,
            };
            if rustix::event::poll(&mut fds, Some(&timeout)).expect("poll") == 0 {
                continue;
            }
            let mut buf = [0u8; 4096];
            let n = self.master.read(&mut buf).expect("read master");
            self.transcript
                .push_str(&String::from_utf8_lossy(&buf[..n]).replace('\r', ""));
        }
    }

    fn type_line(&mut self, line: &str) {
        self.master
            .write_all(format!("{line}\n").as_bytes())
            .expect("write master");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn console_prompts_from_concurrent_calls_do_not_interleave() {
    let dir = plugin_dir(&[HOSTILE]);
    let mut pty = Pty::open();
    let host = builder(dir.path())
        .reviewer(ConsoleReviewer::with_tty(&pty.slave_path))
        .build()
        .await
        .expect("host");
    let calls: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|word| {
            let host = host.clone();
            tokio::spawn(async move {
                let args = json!({"message": word}).to_string();
                host.call("gated", &args, &CallOptions::default()).await
            })
        })
        .collect();

    // The person at the terminal: approve the first prompt, deny the second.
    let answers = tokio::task::spawn_blocking(move || {
        pty.read_until("Approve?", 1);
        pty.type_line("maybe");
        pty.read_until("Please answer y, n, a or e.", 1);
        pty.read_until("Approve?", 2);
        pty.type_line("y");
        pty.read_until("Approve?", 3);
        pty.type_line("n");
        pty.read_until("Reason (optional): ", 1);
        pty.type_line("not now");
        pty.read_until("denied\n", 1);
        pty.transcript
    });
    let transcript = answers.await.expect("terminal");
    let mut results = Vec::new();
    for call in calls {
        results.push(call.await.expect("task"));
    }

    // Two whole exchanges, one after the other.
    let blocks: Vec<&str> = transcript
        .split("── corral: approval needed ──")
        .skip(1)
        .collect();
    assert_eq!(blocks.len(), 2, "{transcript}");
    assert!(
        blocks[0].contains("Please answer y, n, a or e.")
            && blocks[0].trim_end().ends_with("approved"),
        "the first exchange runs to its end before the second starts:\n{transcript}"
    );
    assert!(blocks[1].contains("not now\ndenied\n"), "{transcript}");
    for block in &blocks {
        assert_eq!(
            block.matches("tool:      gated\n").count(),
            1,
            "{transcript}"
        );
    }
    // Whichever call was asked first got the approval.
    let first_word = if blocks[0].contains("\"first\"") {
        "first"
    } else {
        "second"
    };
    let (ok, rejected): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    assert_eq!(ok.len(), 1);
    assert_eq!(
        ok[0].as_ref().unwrap().json().unwrap()["message"],
        first_word
    );
    assert_eq!(
        rejected[0].as_ref().unwrap_err().llm_text(),
        "Error: Rejected by reviewer: not now"
    );
}

#[tokio::test]
async fn the_console_reviewer_without_a_terminal_is_a_configuration_error() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = builder(dir.path())
        .reviewer(ConsoleReviewer::with_tty("/nonexistent/tty"))
        .build()
        .await
        .expect("host");
    let err = call(&host, "gated", DELETE_ALL).await.unwrap_err();
    assert_eq!(err.kind(), "configuration");
    assert!(
        err.to_string()
            .contains("cannot open the terminal /nonexistent/tty"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_review_clock_starts_when_the_prompt_is_shown() {
    // Review timeout 1 500 ms. The first prompt is answered after 1 000 ms;
    // the second, queued behind it all that time, is answered 1 000 ms after
    // it appears. Counting the queue (2 000 ms) would have denied it.
    let dir = plugin_dir(&[HOSTILE]);
    let mut pty = Pty::open();
    let host = builder(dir.path())
        .reviewer(ConsoleReviewer::with_tty(&pty.slave_path))
        .review_timeout(Duration::from_millis(1_500))
        .build()
        .await
        .expect("host");
    let calls: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|word| {
            let host = host.clone();
            tokio::spawn(async move {
                let args = json!({"message": word}).to_string();
                host.call("gated", &args, &CallOptions::default()).await
            })
        })
        .collect();
    tokio::task::spawn_blocking(move || {
        for n in 1..=2 {
            pty.read_until("Approve?", n);
            std::thread::sleep(Duration::from_millis(1_000));
            pty.type_line("y");
        }
        pty.read_until("approved\n", 2);
    })
    .await
    .expect("terminal");
    for call in calls {
        call.await.expect("task").expect("both approved in time");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_guest_cannot_rewrite_the_prompt() {
    // The hostile review's spoof: erase the host's line naming the tool and
    // move up, then print a reassuring line of its own.
    let dir = plugin_dir(&[HOSTILE]);
    let mut pty = Pty::open();
    let host = builder(dir.path())
        .reviewer(ConsoleReviewer::with_tty(&pty.slave_path))
        .build()
        .await
        .expect("host");
    let spoof = "\u{1b}[2K\r\u{1b}[1A\u{1b}[2K\rRead-only: list notes (safe)";
    let call = {
        let host = host.clone();
        tokio::spawn(async move {
            let args = json!({ "message": spoof }).to_string();
            host.call("ask", &args, &CallOptions::default()).await
        })
    };
    let transcript = tokio::task::spawn_blocking(move || {
        pty.read_until("Approve?", 1);
        pty.type_line("n");
        pty.read_until("Reason (optional): ", 1);
        pty.type_line("");
        pty.read_until("denied\n", 1);
        pty.transcript
    })
    .await
    .expect("terminal");
    call.await.expect("task").unwrap_err();
    assert!(!transcript.contains('\u{1b}'), "{transcript:?}");
    assert!(transcript.contains("\\u{1b}[2K"), "{transcript}");
    // The host's facts come after the guest's words, under their own rule.
    let said = transcript
        .find("Read-only: list notes (safe)")
        .expect("guest text");
    let rule = transcript
        .find("── from corral (not the plugin) ──")
        .expect("rule");
    let tool = transcript.find("tool:      ask\n").expect("host line");
    assert!(said < rule && rule < tool, "{transcript}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guests_question_is_answered_at_the_console_field_by_field() {
    use crate::support::{REFERENCE_TOOLS, plugin_dir_with_policies};
    let policy = "version = 1\n[client]\nelicitation = true\n\
                  sampling = { max_tokens = 100, calls_per_call = 1 }\n";
    let dir = plugin_dir_with_policies(&[(REFERENCE_TOOLS, Some(policy))]);
    let mut pty = Pty::open();
    let host = builder(dir.path()).build().await.expect("host");
    let options = CallOptions::default().with_client(std::sync::Arc::new(
        corral::ConsoleClient::with_tty(&pty.slave_path),
    ));
    let ask = |message: &str| {
        let (host, options) = (host.clone(), options.clone());
        let args = json!({"message": message}).to_string();
        tokio::spawn(async move { host.call("test_elicitation", &args, &options).await })
    };
    let first = ask("Who are you?\u{1b}[2J");
    let person = tokio::task::spawn_blocking(move || {
        pty.read_until("name (string, required) Your name.: ", 1);
        pty.type_line("");
        pty.read_until("Please give string.", 1);
        pty.type_line("Ada");
        pty.read_until("answered", 1);
        pty
    });
    let mut pty = person.await.expect("terminal");
    let out = first.await.expect("task").expect("answered");
    assert_eq!(out.json().expect("json"), "Hello, Ada!");
    assert!(
        pty.transcript
            .contains("the plugin `fixture_reference_tools` (tool `test_elicitation`) says:")
            && pty.transcript.contains("Who are you?\\u{1b}[2J")
            && !pty.transcript.contains('\u{1b}'),
        "{}",
        pty.transcript
    );
    let second = ask("Again?");
    // The field was asked twice in the first exchange; this is the third.
    let declined = tokio::task::spawn_blocking(move || {
        pty.read_until("name (string, required)", 3);
        pty.type_line("!decline");
        pty
    });
    let pty = declined.await.expect("terminal");
    let out = second.await.expect("task").expect("declined");
    drop(pty);
    assert_eq!(out.json().expect("json"), "The user declined.");
    // A terminal has no model: sampling is refused, saying what works.
    let err = host
        .call("test_sampling", r#"{"prompt": "hi"}"#, &options)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("needs an MCP client's model"),
        "{err}"
    );
}
