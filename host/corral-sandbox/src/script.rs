//! What a script's tool calls get (code mode), as data: a tool's output or
//! failure as the script sees it, and the journal of a script run, what the
//! run saw from outside, so that the same script run again sees the same.
//! Plain data, shared by the sandbox (the runner's imports), the errors
//! (a call waiting for approval carries a journal) and the call layer.
//!
//! A script is a deterministic function of its code, its random seed, its
//! start time and the answers to its tool calls: the runner reaches nothing
//! else (no WASI, no real clock). A journal keeps the seed and start time
//! and, for every tool call the script made, its position in the run, its
//! tool, the sha256 of its arguments and the answer the script got. MCP
//! 2026-07-28's input-required flow uses it: a gated call inside a script
//! stops the run, the journal rides in the (encrypted) `requestState`, and
//! the client's retry runs the script again from the start, with every
//! journaled call answered from the journal and never run twice.
//!
//! This module holds the data; the call layer records and replays it.

use serde::{Deserialize, Serialize};

/// A tool's output as the script gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutput {
    /// JSON text; the script gets it parsed.
    Json(String),
    /// Plain text; the script gets the string.
    Text(String),
}

/// A tool call that failed, as the script's `ToolError` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// `invalid_arguments`, `execution_failed`, `denied` or `limit`.
    pub kind: &'static str,
    /// The error's machine-readable code, when it has one.
    pub code: Option<String>,
    /// What went wrong: text the host wrote or a tool's error, escaped.
    pub message: String,
}

/// The message of a re-run that did not make the calls its journal holds:
/// "the script did not repeat its calls; it is not deterministic".
pub const NOT_DETERMINISTIC: &str = "the script did not repeat its calls; it is not deterministic";

/// What one run of a script saw: its seed, its start time, and each tool
/// call's answer, in the order the calls were made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Journal {
    /// Lowercase hex sha256 of the script's text: a journal replays only the
    /// script it was written for.
    pub code_sha256: String,
    /// The run's random seed (`Math.random`).
    pub seed: u64,
    /// The run's start time, in milliseconds since the Unix epoch (`Date`).
    pub start_ms: u64,
    /// The calls that were answered, by position in the run (a call still
    /// waiting for approval has none).
    pub calls: Vec<JournalEntry>,
}

impl Journal {
    /// An empty journal of a run of the script with digest `code_sha256`.
    pub fn new(code_sha256: impl Into<String>, seed: u64, start_ms: u64) -> Self {
        Self {
            code_sha256: code_sha256.into(),
            seed,
            start_ms,
            calls: Vec::new(),
        }
    }

    /// Its size as JSON, in bytes: what the cap on journals counts.
    pub fn json_bytes(&self) -> usize {
        serde_json::to_vec(self).map_or(usize::MAX, |bytes| bytes.len())
    }
}

/// One answered tool call of a script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JournalEntry {
    /// Its position among the script's calls, from 0 (the calls of a
    /// `tools.parallel` wave in their order in the wave).
    pub index: u32,
    /// The tool the script called.
    pub tool: String,
    /// Lowercase hex sha256 of the arguments as the script passed them
    /// (JSON text).
    pub arguments_sha256: String,
    /// How long the call took, in milliseconds.
    pub ms: u64,
    /// The answer the script got.
    pub answer: JournalAnswer,
}

impl JournalEntry {
    /// The entry of call `index` of `tool` with arguments of digest
    /// `arguments_sha256`, answered with `answer` after `ms` milliseconds.
    pub fn new(
        index: u32,
        tool: impl Into<String>,
        arguments_sha256: impl Into<String>,
        ms: u64,
        answer: &Result<ToolOutput, ToolFailure>,
    ) -> Self {
        Self {
            index,
            tool: tool.into(),
            arguments_sha256: arguments_sha256.into(),
            ms,
            answer: JournalAnswer::of(answer),
        }
    }
}

/// A call's answer as a journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "as", rename_all = "snake_case")]
pub enum JournalAnswer {
    /// JSON text.
    Json {
        /// The text.
        text: String,
    },
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A failure the script got as a `ToolError`.
    Failed {
        /// `invalid_arguments`, `execution_failed`, `denied` or `limit`.
        kind: String,
        /// Its code, if any.
        code: Option<String>,
        /// Its message.
        message: String,
    },
}

impl JournalAnswer {
    /// `result` as a journal keeps it.
    pub fn of(result: &Result<ToolOutput, ToolFailure>) -> Self {
        match result {
            Ok(ToolOutput::Json(text)) => Self::Json { text: text.clone() },
            Ok(ToolOutput::Text(text)) => Self::Text { text: text.clone() },
            Err(failure) => Self::Failed {
                kind: failure.kind.to_string(),
                code: failure.code.clone(),
                message: failure.message.clone(),
            },
        }
    }

    /// The answer to give the script again. A kind this version does not
    /// know reads as `execution_failed`.
    pub fn result(&self) -> Result<ToolOutput, ToolFailure> {
        match self {
            Self::Json { text } => Ok(ToolOutput::Json(text.clone())),
            Self::Text { text } => Ok(ToolOutput::Text(text.clone())),
            Self::Failed {
                kind,
                code,
                message,
            } => Err(ToolFailure {
                kind: match kind.as_str() {
                    "invalid_arguments" => "invalid_arguments",
                    "denied" => "denied",
                    "limit" => "limit",
                    _ => "execution_failed",
                },
                code: code.clone(),
                message: message.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_comes_back_as_it_was_given() {
        let answers = [
            Ok(ToolOutput::Json("{\"a\":1}".into())),
            Ok(ToolOutput::Text("plain".into())),
            Err(ToolFailure {
                kind: "denied",
                code: Some("rejected".into()),
                message: "no".into(),
            }),
            Err(ToolFailure {
                kind: "limit",
                code: None,
                message: "too many".into(),
            }),
        ];
        let mut journal = Journal::new("ab", 7, 1_700_000_000_000);
        for (index, answer) in (0u32..).zip(&answers) {
            journal
                .calls
                .push(JournalEntry::new(index, "t", "cd", 1, answer));
        }
        let text = serde_json::to_string(&journal).expect("json");
        assert_eq!(text.len(), journal.json_bytes());
        let back: Journal = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, journal);
        let replayed: Vec<_> = back.calls.iter().map(|e| e.answer.result()).collect();
        assert_eq!(replayed, answers);
    }
}
