//! The `corral:tool/host` imports a guest may call (`log`, `progress`,
//! `request-approval`), and the [`ApprovalHook`] through which the call path
//! answers `request-approval`: the sandbox asks the hook and never sees a
//! reviewer, a standing approval or the audit log itself.
//!
//! Guest text is data: every message is cut to [`MAX_LOG_MESSAGE_BYTES`],
//! scanned for the plugin's secrets (redacted), and its control characters
//! escaped before it reaches a log, a progress sink or a reviewer. A call writes at
//! most [`MAX_LOG_LINES`] log and progress lines; the rest are counted and
//! summed up in one "N messages dropped" line when the call ends. Progress
//! still reaches the call's progress sink, which throttles on its own (MCP
//! coalesces it).

use std::future::Future;
use std::pin::Pin;

use crate::error::CallError;
use crate::tape::{Decision as TapedDecision, Event};

use super::SandboxState;

/// Longest guest log or progress message kept, in bytes; the rest is cut.
pub const MAX_LOG_MESSAGE_BYTES: usize = 4096;

/// Most log and progress lines one call writes to the host's log: 100. Later
/// ones are dropped and counted.
pub const MAX_LOG_LINES: u32 = 100;

/// What the call path decided about a guest's `request-approval`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    /// Go ahead (WIT `continue`).
    Continue,
    /// Go ahead with these revised arguments (JSON text, already validated).
    Edit(String),
    /// Do not (WIT `exit-early`); the call fails as rejected.
    Reject(String),
    /// Nobody could decide (no reviewer, an unwritable audit log); the guest
    /// gets `exit-early` and the call fails with this error.
    Failed(CallError),
}

/// The future an [`ApprovalHook`] returns.
pub type HookFuture<'a> = Pin<Box<dyn Future<Output = HookDecision> + Send + 'a>>;

/// Decides a guest's `request-approval(description)` for one call. The call's
/// wall-clock budget is paused while it runs.
pub trait ApprovalHook: Send + Sync {
    /// Decides; `description` is the guest's text, already cut to
    /// [`MAX_LOG_MESSAGE_BYTES`].
    fn review(&self, description: String) -> HookFuture<'_>;
}

/// `message` cut to [`MAX_LOG_MESSAGE_BYTES`] on a character boundary, with
/// `…` when something was cut.
pub fn truncate(message: String) -> String {
    corral_names::text::truncate(message, MAX_LOG_MESSAGE_BYTES)
}

impl SandboxState {
    /// Whether another log line may be written for this call; counts the
    /// ones that may not.
    pub(super) fn may_log(&mut self) -> bool {
        if self.log_lines < MAX_LOG_LINES {
            self.log_lines += 1;
            true
        } else {
            self.log_dropped += 1;
            false
        }
    }
}

/// A guest log line's severity, whatever contract version sent it.
#[derive(Debug, Clone, Copy)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Self::Trace => "trace",
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        }
    }
}

/// What the guest's `request-approval` returns, whatever contract version
/// asked.
pub enum Decision {
    Continue,
    Edit(String),
    ExitEarly(String),
}

impl SandboxState {
    /// `host.log`: cut, escaped, within the per-call line budget.
    pub fn guest_log(&mut self, level: Level, message: String) {
        if !self.may_log() {
            return;
        }
        let message = truncate(self.leaks.string("log", message));
        self.tape_output(Event::Log {
            level: level.as_str().to_owned(),
            message: message.clone(),
        });
        let message = corral_names::text::escape(&message);
        let (plugin, tool) = (&*self.plugin, &*self.tool);
        match level {
            Level::Trace => tracing::trace!(plugin, tool, "{message}"),
            Level::Debug => tracing::debug!(plugin, tool, "{message}"),
            Level::Info => tracing::info!(plugin, tool, "{message}"),
            Level::Warn => tracing::warn!(plugin, tool, "{message}"),
            Level::Error => tracing::error!(plugin, tool, "{message}"),
        }
    }

    /// `host.progress`: to the call's sink, and to the log within budget.
    pub fn guest_progress(&mut self, message: String) {
        let message = truncate(self.leaks.string("progress", message));
        if self.may_log() {
            self.tape_output(Event::Progress {
                message: message.clone(),
            });
            tracing::info!(
                plugin = &*self.plugin,
                tool = &*self.tool,
                "progress: {}",
                corral_names::text::escape(&message)
            );
        }
        if let Some(sink) = &self.progress {
            sink(&self.tool, &message);
        }
    }

    /// `host.request-approval`: asks the call's hook with the wall-clock
    /// budget paused; records a rejection or configuration error for the
    /// classification of the call.
    pub async fn guest_request_approval(&mut self, description: String) -> Decision {
        let description = truncate(self.leaks.string("approval", description));
        let decision = match self.taped_decision(&description) {
            Some(decision) => decision,
            None => self.decide(&description).await,
        };
        if let Some(tape) = self.tape.as_ref().filter(|t| !t.is_replay()) {
            tape.push(Event::Approval {
                description,
                decision: taped(&decision),
            });
        }
        match decision {
            HookDecision::Continue => Decision::Continue,
            HookDecision::Edit(revised) => Decision::Edit(revised),
            HookDecision::Reject(reason) => {
                self.rejected = Some(reason.clone());
                Decision::ExitEarly(reason)
            }
            HookDecision::Failed(err) => {
                let reason = err.to_string();
                self.config_error = Some(err);
                Decision::ExitEarly(reason)
            }
        }
    }

    /// A log or progress line: recorded, or kept for a replay's comparison.
    fn tape_output(&self, event: Event) {
        match &self.tape {
            Some(tape) if tape.is_replay() => tape.produced(event),
            Some(tape) => {
                tape.push(event);
            }
            None => {}
        }
    }

    /// A replay's recorded decision for `description`: `Some` whenever the
    /// run replays (a departure gets `exit-early`).
    fn taped_decision(&self, description: &str) -> Option<HookDecision> {
        let tape = self.tape.as_ref().filter(|t| t.is_replay())?;
        let got = Event::Approval {
            description: description.to_owned(),
            decision: TapedDecision::Continue,
        };
        let answer = tape.answer(
            &got,
            |event| matches!(event, Event::Approval { description: d, .. } if d == description),
        );
        Some(match answer {
            Some(Event::Approval { decision, .. }) => match decision {
                TapedDecision::Continue => HookDecision::Continue,
                TapedDecision::Edit { arguments } => HookDecision::Edit(arguments),
                TapedDecision::Reject { reason } => HookDecision::Reject(reason),
                TapedDecision::Failed { message } => {
                    HookDecision::Failed(CallError::Configuration {
                        tool: self.tool.to_string(),
                        message,
                    })
                }
            },
            _ => HookDecision::Reject("the replay departed from its recording here".into()),
        })
    }

    /// Asks the call's hook, with the wall-clock budget paused.
    async fn decide(&mut self, description: &str) -> HookDecision {
        let description = description.to_owned();
        match self.approval.clone() {
            None => HookDecision::Failed(CallError::Configuration {
                tool: self.tool.to_string(),
                message: "it asked for approval where no review is possible (during \
                          `describe`); ask only inside `call`"
                    .into(),
            }),
            Some(hook) => {
                self.budget.pause();
                let decision = hook.review(description).await;
                self.budget.resume();
                decision
            }
        }
    }
}

/// A decision as a tape keeps it.
fn taped(decision: &HookDecision) -> TapedDecision {
    match decision {
        HookDecision::Continue => TapedDecision::Continue,
        HookDecision::Edit(arguments) => TapedDecision::Edit {
            arguments: arguments.clone(),
        },
        HookDecision::Reject(reason) => TapedDecision::Reject {
            reason: reason.clone(),
        },
        HookDecision::Failed(err) => TapedDecision::Failed {
            message: err.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_a_char_boundary() {
        let long = "é".repeat(MAX_LOG_MESSAGE_BYTES);
        let cut = truncate(long);
        assert!(cut.len() <= MAX_LOG_MESSAGE_BYTES + "…".len());
        assert!(cut.ends_with('…'));
    }
}
