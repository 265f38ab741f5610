//! What a script's result lists besides its value: its tool calls (runs
//! of consecutive calls of one tool with one outcome merged into one entry)
//! and its console lines.

use serde::Serialize;

use corral_sandbox::ConsoleLevel;

/// One inner call, or a run of consecutive calls of one tool with one
/// outcome, as the result's `calls` list shows it: a loop of 50 calls is
/// one entry, not 50 (each entry costs a model about 13 tokens).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CallRecord {
    /// The tool called.
    pub tool: String,
    /// Whether it returned (false: it failed, or was refused before it ran).
    pub ok: bool,
    /// How long it took (the run's calls in all), in milliseconds.
    pub ms: u64,
    /// How many consecutive calls the entry stands for; absent when 1.
    #[serde(skip_serializing_if = "is_one")]
    pub count: u32,
    /// Answered from the journal of an earlier run of the script (an MCP
    /// retry), not run again; absent when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub journaled: bool,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `records` with each run of consecutive calls of one tool, with one
/// outcome and journaled or not alike, merged into one entry.
pub(super) fn merged(records: Vec<CallRecord>) -> Vec<CallRecord> {
    let mut out: Vec<CallRecord> = Vec::with_capacity(records.len());
    for record in records {
        match out.last_mut() {
            Some(last)
                if last.tool == record.tool
                    && last.ok == record.ok
                    && last.journaled == record.journaled =>
            {
                last.count = last.count.saturating_add(record.count);
                last.ms = last.ms.saturating_add(record.ms);
            }
            _ => out.push(record),
        }
    }
    out
}

/// One console line.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ConsoleLine {
    /// `debug`, `info`, `warn` or `error`.
    pub level: ConsoleLevel,
    /// The line, cut, scanned for secrets and escaped by the sandbox.
    pub text: String,
}
