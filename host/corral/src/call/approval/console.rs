//! A reviewer, and an answerer of a guest's elicitations
//! ([`ConsoleClient`]), that ask the person at the terminal.
//!
//! It talks to the controlling terminal (`/dev/tty`), not to stdin/stdout, so
//! it still works when those carry a protocol (MCP over stdio) or a pipe.
//! Prompts from concurrent calls are serialized by a process-wide lock held for
//! the whole exchange (AgentEnsemble's console approval lock), so two prompts
//! never interleave. The lock is held by the thread doing the terminal I/O, not
//! by the waiting future, so even a call that stops waiting (its review timed
//! out) cannot let another prompt start before this one has finished.
//!
//! The exchange (see [`ReviewRequest::render`]): what the plugin says comes
//! first, quoted line by line, then the facts corral itself knows, visibly
//! apart, so a guest cannot write a line that passes for the host's; every
//! guest character that could move the cursor or recolor the screen is shown
//! as an escape (`\u{1b}`).
//!
//! ```text
//! ── corral: approval needed ──
//! the plugin says:
//!   │ Delete a note by name.
//! ── from corral (not the plugin) ──
//! tool:      notes_delete
//! plugin:    notes (sha256 3f1a…)
//! gate:      declared: the tool requires approval for every call
//! arguments: {
//!              "name": "todo"
//!            }
//! Approve? [y]es / [n]o / [a]lways for this build / [e]dit arguments (deny in 120 s):
//! ```
//!
//! The review's timeout starts when the prompt is shown, not while it waits
//! behind another prompt.
//!
//! `y` continues, `a` continues and records a standing approval bound to the
//! plugin's sha256, `n` asks for an optional reason and denies, `e` reads one
//! line of revised JSON arguments. Anything else asks again. When the review's
//! timeout passes, or the terminal closes, the answer is deny.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::fd::AsFd as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use rustix::event::{PollFd, PollFlags, Timespec};

use super::{ApprovalDecision, ReviewError, ReviewFuture, ReviewRequest, Reviewer};

/// Serializes console prompts across the whole process.
static CONSOLE: Mutex<()> = Mutex::new(());

/// The terminal reviewer. Default terminal: `/dev/tty`.
#[derive(Debug, Clone)]
pub struct ConsoleReviewer {
    tty: PathBuf,
}

impl Default for ConsoleReviewer {
    fn default() -> Self {
        Self::new()
    }
}

impl ConsoleReviewer {
    /// Prompts on the controlling terminal, `/dev/tty`.
    pub fn new() -> Self {
        Self::with_tty("/dev/tty")
    }

    /// Prompts on the terminal device at `path` (e.g. a pseudo-terminal's
    /// `/dev/pts/N`).
    pub fn with_tty(path: impl Into<PathBuf>) -> Self {
        Self { tty: path.into() }
    }
}

impl Reviewer for ConsoleReviewer {
    fn name(&self) -> &str {
        "console"
    }

    /// The console applies the review timeout itself, from when its prompt
    /// is shown: time spent waiting behind another prompt does not count.
    fn times_itself(&self) -> bool {
        true
    }

    fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a> {
        let tty = self.tty.clone();
        let request = request.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let _turn = CONSOLE
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                // The clock starts now that this prompt has the terminal.
                let deadline = Instant::now() + request.timeout;
                prompt(&tty, &request, deadline)
            })
            .await
            .map_err(|err| ReviewError {
                reviewer: "console".into(),
                message: format!("the prompt thread failed: {err}"),
            })?
        })
    }
}

/// One line read from the terminal, or why there is none.
enum Line {
    Text(String),
    Closed,
    TimedOut,
}

struct Terminal {
    file: File,
    deadline: Instant,
}

impl Terminal {
    fn say(&mut self, text: &str) -> std::io::Result<()> {
        self.file.write_all(text.as_bytes())?;
        self.file.flush()
    }

    /// Reads one line, giving up at the deadline. The terminal is in canonical
    /// mode, so a read returns at most one line.
    fn line(&mut self) -> std::io::Result<Line> {
        let mut bytes = Vec::new();
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Line::TimedOut);
            }
            let ready = {
                let fd = self.file.as_fd();
                let mut fds = [PollFd::new(&fd, PollFlags::IN)];
                let timeout = Timespec {
                    tv_sec: left.as_secs() as _,
                    tv_nsec: left.subsec_nanos() as _,
                };
                match rustix::event::poll(&mut fds, Some(&timeout)) {
                    Ok(n) => n > 0,
                    Err(rustix::io::Errno::INTR) => false,
                    Err(err) => return Err(err.into()),
                }
            };
            if !ready {
                continue;
            }
            let mut buf = [0u8; 1024];
            let n = match self.file.read(&mut buf) {
                Ok(n) => n,
                // A hung-up pseudo-terminal reads as EIO.
                Err(err) if err.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error()) => 0,
                Err(err) => return Err(err),
            };
            if n == 0 {
                return Ok(Line::Closed);
            }
            bytes.extend_from_slice(&buf[..n]);
            if let Some(end) = bytes.iter().position(|&b| b == b'\n') {
                bytes.truncate(end);
                let text = String::from_utf8_lossy(&bytes).trim().to_string();
                return Ok(Line::Text(text));
            }
        }
    }
}

fn prompt(
    tty: &std::path::Path,
    request: &ReviewRequest,
    deadline: Instant,
) -> Result<ApprovalDecision, ReviewError> {
    let failed = |message: String| ReviewError {
        reviewer: "console".into(),
        message,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(tty)
        .map_err(|err| {
            failed(format!(
                "cannot open the terminal {}: {err}; run from a terminal, or choose \
                 a reviewer that needs none (a rules file, say)",
                tty.display()
            ))
        })?;
    let mut term = Terminal { file, deadline };
    let io = |err: std::io::Error| failed(format!("terminal {}: {err}", tty.display()));
    let seconds = deadline
        .saturating_duration_since(Instant::now())
        .as_secs_f64()
        .ceil();
    term.say(&format!(
        "\n── corral: approval needed ──\n{}\n",
        request.render()
    ))
    .map_err(io)?;
    let timed_out = || {
        ApprovalDecision::ExitEarly(format!(
            "no answer at the console within {seconds} s; denied by default"
        ))
    };
    let closed = || ApprovalDecision::ExitEarly("the terminal closed; denied".into());
    loop {
        term.say(&format!(
            "Approve? [y]es / [n]o / [a]lways for this build / [e]dit arguments \
             (deny in {seconds} s): "
        ))
        .map_err(io)?;
        let answer = match term.line().map_err(io)? {
            Line::Text(text) => text.to_ascii_lowercase(),
            Line::Closed => return Ok(closed()),
            Line::TimedOut => {
                term.say("\n(no answer in time: denied)\n").map_err(io)?;
                return Ok(timed_out());
            }
        };
        match answer.as_str() {
            "y" | "yes" => {
                term.say("approved\n").map_err(io)?;
                return Ok(ApprovalDecision::Continue);
            }
            "a" | "always" => {
                term.say("approved; not asking again for this build of the plugin\n")
                    .map_err(io)?;
                return Ok(ApprovalDecision::ContinueAlways);
            }
            "n" | "no" => {
                term.say("Reason (optional): ").map_err(io)?;
                let reason = match term.line().map_err(io)? {
                    Line::Text(text) if !text.is_empty() => text,
                    Line::Text(_) | Line::Closed | Line::TimedOut => "denied at the console".into(),
                };
                term.say("denied\n").map_err(io)?;
                return Ok(ApprovalDecision::ExitEarly(reason));
            }
            "e" | "edit" => {
                term.say("Revised arguments (one line of JSON): ")
                    .map_err(io)?;
                return Ok(match term.line().map_err(io)? {
                    Line::Text(text) => {
                        term.say("edited\n").map_err(io)?;
                        ApprovalDecision::Edit(text)
                    }
                    Line::Closed => closed(),
                    Line::TimedOut => timed_out(),
                });
            }
            _ => term.say("Please answer y, n, a or e.\n").map_err(io)?,
        }
    }
}

/// Answers a guest's `elicit` at the terminal (`corral call --elicit
/// console`), with the same terminal rules and lock as
/// [`ConsoleReviewer`]: the plugin's message quoted line by line and
/// escaped, then one prompt per field of its form (typed: integer, number,
/// boolean, string, or one of an enum's values; an empty line skips a field
/// that is not required). `!decline` or `!cancel` at any prompt answers so;
/// a closed terminal, or no answer within the request's timeout, cancels.
/// Sampling and roots are refused as `unsupported`: a terminal has no
/// model and no workspace roots.
#[derive(Debug, Clone)]
pub struct ConsoleClient {
    tty: PathBuf,
}

impl Default for ConsoleClient {
    fn default() -> Self {
        Self::new()
    }
}

impl ConsoleClient {
    /// Prompts on the controlling terminal, `/dev/tty`.
    pub fn new() -> Self {
        Self::with_tty("/dev/tty")
    }

    /// Prompts on the terminal device at `path`.
    pub fn with_tty(path: impl Into<PathBuf>) -> Self {
        Self { tty: path.into() }
    }
}

impl crate::call::client::ClientRequests for ConsoleClient {
    fn ask<'a>(
        &'a self,
        asking: &'a crate::call::client::Asking,
        request: corral_sandbox::ClientRequest,
    ) -> corral_sandbox::ClientFuture<'a> {
        use corral_sandbox::{ClientAnswer, ClientRefusal, ClientRequest};
        Box::pin(async move {
            let (message, schema) = match request {
                ClientRequest::Elicit {
                    message, schema, ..
                } => (message, schema),
                ClientRequest::Sample { .. } => {
                    return Err(ClientRefusal::Unsupported(
                        "sampling needs an MCP client's model, which `corral call` has not; \
                         serve the tool (`corral serve`) to a client that samples"
                            .into(),
                    ));
                }
                _ => {
                    return Err(ClientRefusal::Unsupported(
                        "a terminal has no workspace roots; serve the tool to an MCP client \
                         that has them"
                            .into(),
                    ));
                }
            };
            let tty = self.tty.clone();
            let asking = asking.clone();
            tokio::task::spawn_blocking(move || {
                let _turn = CONSOLE
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                let deadline = Instant::now() + asking.timeout;
                elicit(&tty, &asking, &message, &schema, deadline)
            })
            .await
            .map_err(|err| ClientRefusal::Failed(format!("the prompt thread failed: {err}")))?
            .map(ClientAnswer::Elicited)
        })
    }
}

/// The exchange of one elicitation at the terminal.
fn elicit(
    tty: &std::path::Path,
    asking: &crate::call::client::Asking,
    message: &str,
    schema: &serde_json::Value,
    deadline: Instant,
) -> Result<corral_sandbox::Elicitation, corral_sandbox::ClientRefusal> {
    use corral_sandbox::{ClientRefusal, Elicitation};
    use serde_json::Value;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(tty)
        .map_err(|err| {
            ClientRefusal::Unsupported(format!(
                "cannot open the terminal {}: {err}; run from a terminal",
                tty.display()
            ))
        })?;
    let mut term = Terminal { file, deadline };
    let io =
        |err: std::io::Error| ClientRefusal::Failed(format!("terminal {}: {err}", tty.display()));
    let quoted: Vec<String> = corral_names::text::escape(message)
        .lines()
        .map(|line| format!("  │ {line}"))
        .collect();
    term.say(&format!(
        "\n── corral: a tool asks for input ──\nthe plugin `{}` (tool `{}`) says:\n{}\n\
         (answer each field; `!decline` or `!cancel` at any prompt)\n",
        asking.plugin,
        asking.tool,
        quoted.join("\n")
    ))
    .map_err(io)?;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut answers = serde_json::Map::new();
    let empty = serde_json::Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    for (name, property) in properties {
        let kind = property["type"].as_str().unwrap_or("string");
        let needed = required.contains(&name.as_str());
        let choices: Vec<&str> = property["enum"]
            .as_array()
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let about = property["description"]
            .as_str()
            .map(|d| format!(" {}", corral_names::text::escape(d)))
            .unwrap_or_default();
        let hint = if choices.is_empty() {
            kind.to_string()
        } else {
            format!("one of {}", choices.join(", "))
        };
        loop {
            term.say(&format!(
                "{} ({hint}{}){about}: ",
                corral_names::text::escape(name),
                if needed { ", required" } else { "" }
            ))
            .map_err(io)?;
            let text = match term.line().map_err(io)? {
                Line::Text(text) => text,
                Line::Closed | Line::TimedOut => return Ok(Elicitation::Cancel),
            };
            match text.as_str() {
                "!decline" => return Ok(Elicitation::Decline),
                "!cancel" => return Ok(Elicitation::Cancel),
                "" if !needed => break,
                _ => {}
            }
            let value = match kind {
                "integer" => text.parse::<i64>().ok().map(Value::from),
                "number" => text.parse::<f64>().ok().map(Value::from),
                "boolean" => match text.to_ascii_lowercase().as_str() {
                    "y" | "yes" | "true" => Some(Value::Bool(true)),
                    "n" | "no" | "false" => Some(Value::Bool(false)),
                    _ => None,
                },
                _ if !choices.is_empty() && !choices.contains(&text.as_str()) => None,
                _ if text.is_empty() => None,
                _ => Some(Value::String(text)),
            };
            match value {
                Some(value) => {
                    answers.insert(name.clone(), value);
                    break;
                }
                None => term.say(&format!("Please give {hint}.\n")).map_err(io)?,
            }
        }
    }
    term.say("answered\n").map_err(io)?;
    Ok(Elicitation::Accept(Value::Object(answers)))
}
