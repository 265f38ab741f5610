//! The [`ToolCalls`] hook of one script: each `tools.<name>(args)` the
//! runner makes becomes a call through the [`Caller`], so it takes the whole
//! call path of a direct call (validation, limits, gates with the outer
//! call's reviewer, resilience layers, the audit record) with the outer
//! call's context. It counts the calls and the bytes they return against
//! [`CodeLimits`], keeps the console lines, and records each call for the
//! result's `calls` list.
//!
//! It also keeps the run's [`Journal`]: each answered call by its position
//! in the run. Given the journal of an earlier run of the same script (a
//! retry in MCP 2026-07-28's input-required flow), it answers the calls the
//! journal holds from it, never running them again, and halts the run when
//! a call differs from its entry ([`NOT_DETERMINISTIC`]). A call that waits
//! for approval on such a retry halts the run too: the script cannot go on
//! without the answer, and the retry will replay everything before it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::StreamExt as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::listing::{CallRecord, ConsoleLine, merged};
use super::{CODE_TOOL, CodeLimits};
use crate::call::CallOptions;
use crate::call::compose::Caller;
use crate::model::names::PLAN_TOOL;
use corral_sandbox::{
    CallError, ConsoleLevel, Journal, JournalEntry, NOT_DETERMINISTIC, ReviewPause, ScriptOrigin,
    ToolCalls, ToolFailure, ToolFuture, ToolOutput,
};

/// Why a run was halted.
#[derive(Debug)]
pub(crate) enum Halt {
    /// A call waits for approval on a retry of the whole script: its
    /// [`CallError::ApprovalPending`].
    Pending(CallError),
    /// A re-run made a call other than its journal's: what differed.
    NotDeterministic(String),
}

struct Tally {
    /// Position of the next call in the run.
    next: u32,
    calls: u32,
    bytes: usize,
    records: Vec<CallRecord>,
    console: Vec<ConsoleLine>,
    fuel: u64,
    /// This run's journal so far.
    journal: Journal,
    /// An earlier run's entries not yet replayed, by position.
    replay: BTreeMap<u32, JournalEntry>,
    /// The pending call of the lowest position, or the first mismatch.
    halt: Option<(u32, Halt)>,
    /// The tools called (live or from the journal), for the leak scan.
    tools: std::collections::BTreeSet<String>,
    /// Live calls started and not yet recorded: a run cut off (its
    /// deadline) with calls in flight cannot stop for approval, since those
    /// calls may have acted and are in no journal.
    in_flight: u32,
    /// Roughly how many bytes the journal holds; past the cap its entries
    /// are dropped (`overflowed`), as a stop for approval would fail anyway.
    journal_bytes: usize,
    overflowed: bool,
}

/// What one run of the runner calls its tools through.
pub(crate) struct ScriptCalls {
    caller: Arc<dyn Caller>,
    options: CallOptions,
    limits: CodeLimits,
    concurrency: usize,
    tally: Mutex<Tally>,
}

/// What the hook gathered once the run is over.
pub(crate) struct Gathered {
    pub records: Vec<CallRecord>,
    pub console: Vec<ConsoleLine>,
    /// Fuel the inner calls consumed, in all.
    pub fuel: u64,
    /// This run's journal.
    pub journal: Journal,
    /// How many entries of the earlier run's journal were never replayed.
    pub unreplayed: usize,
    /// Why the run was halted, if it was.
    pub halt: Option<Halt>,
    /// The tools the script called.
    pub tools: std::collections::BTreeSet<String>,
    /// Live calls that were still running when the run ended.
    pub in_flight: u32,
    /// The journal grew past its cap and was dropped.
    pub overflowed: bool,
}

impl ScriptCalls {
    /// Inner calls go through `caller` with `outer`'s context and reviewer
    /// (not its limit override: each tool keeps its own limits, and the
    /// script's deadline bounds them all), marked as coming from `script`
    /// for their reviewers, at most `concurrency` of a `tools.parallel`
    /// wave at once. The run's journal starts as `journal` (its seed and
    /// start time); `replay` answers the calls an earlier run journaled.
    pub(crate) fn new(
        caller: Arc<dyn Caller>,
        outer: &CallOptions,
        script: ScriptOrigin,
        limits: CodeLimits,
        concurrency: usize,
        journal: Journal,
        replay: Option<&Journal>,
    ) -> Self {
        let mut options = outer.clone();
        options.limits = None;
        options.script = Some(script);
        options.journal = None;
        let replay = replay
            .map(|j| j.calls.iter().map(|e| (e.index, e.clone())).collect())
            .unwrap_or_default();
        Self {
            caller,
            options,
            limits,
            concurrency: concurrency.max(1),
            tally: Mutex::new(Tally {
                next: 0,
                calls: 0,
                bytes: 0,
                records: Vec::new(),
                console: Vec::new(),
                fuel: 0,
                journal,
                replay,
                halt: None,
                tools: std::collections::BTreeSet::new(),
                in_flight: 0,
                journal_bytes: 0,
                overflowed: false,
            }),
        }
    }

    /// The records, console lines and fuel, in the order they happened.
    pub(crate) fn gathered(&self) -> Gathered {
        let mut tally = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        let mut journal = Journal::new(String::new(), 0, 0);
        std::mem::swap(&mut journal, &mut tally.journal);
        journal.calls.sort_by_key(|e| e.index);
        Gathered {
            records: merged(std::mem::take(&mut tally.records)),
            console: std::mem::take(&mut tally.console),
            fuel: tally.fuel,
            journal,
            unreplayed: tally.replay.len(),
            halt: tally.halt.take().map(|(_, halt)| halt),
            tools: std::mem::take(&mut tally.tools),
            in_flight: tally.in_flight,
            overflowed: tally.overflowed,
        }
    }

    /// Takes positions for `count` calls, in order.
    fn positions(&self, count: usize) -> u32 {
        let mut tally = self.tally();
        let first = tally.next;
        tally.next = tally
            .next
            .saturating_add(u32::try_from(count).unwrap_or(u32::MAX));
        first
    }

    /// Halts the run for `halt` at position `index`. A mismatch with the
    /// journal always wins (the run must fail, whatever else waits); among
    /// calls waiting for approval, the one of the lowest position is asked.
    fn halt(tally: &mut Tally, index: u32, halt: Halt) {
        let replace = match (&tally.halt, &halt) {
            (None, _) => true,
            (Some((_, Halt::NotDeterministic(_))), _) => false,
            (Some(_), Halt::NotDeterministic(_)) => true,
            (Some((at, Halt::Pending(_))), Halt::Pending(_)) => index < *at,
        };
        if replace {
            tally.halt = Some((index, halt));
        }
    }

    /// Keeps `entry` in the run's journal, unless the journal went past the
    /// cap (then nothing more is kept).
    fn journal(&self, tally: &mut Tally, entry: JournalEntry) {
        if tally.overflowed {
            return;
        }
        // The entry's JSON: its text fields plus about 100 bytes of keys.
        let size = match &entry.answer {
            corral_sandbox::JournalAnswer::Json { text }
            | corral_sandbox::JournalAnswer::Text { text } => text.len(),
            corral_sandbox::JournalAnswer::Failed { message, .. } => message.len(),
        } + entry.tool.len()
            + 100;
        tally.journal_bytes = tally.journal_bytes.saturating_add(size);
        if tally.journal_bytes > self.limits.max_journal_bytes {
            tally.overflowed = true;
            tally.journal.calls = Vec::new();
        } else {
            tally.journal.calls.push(entry);
        }
    }

    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one call from the cap, or says why not.
    /// Every call but one over the cap counts (so a replayed run, which
    /// counts each journaled call, counts as the first run did).
    fn admit(&self, name: &str) -> Result<(), ToolFailure> {
        let mut tally = self.tally();
        if tally.calls >= self.limits.max_calls {
            return Err(ToolFailure {
                kind: "limit",
                code: Some("too_many_calls".into()),
                message: format!(
                    "the script made more than {} tool calls (`max_calls`); do the work in fewer \
                     calls, or split it into several scripts",
                    self.limits.max_calls
                ),
            });
        }
        tally.calls += 1;
        if name == CODE_TOOL || name == PLAN_TOOL {
            return Err(ToolFailure {
                kind: "denied",
                code: None,
                message: format!(
                    "a script cannot call `{name}`: call the tools it would run directly \
                     (and use tools.parallel for a wave)"
                ),
            });
        }
        Ok(())
    }

    /// Call number `index` of the run: answered from the earlier run's
    /// journal when it holds it, else made through the call path.
    async fn one(
        &self,
        index: u32,
        name: String,
        arguments: String,
        pause: ReviewPause,
    ) -> Result<ToolOutput, ToolFailure> {
        let arguments_sha256 = hex::encode(Sha256::digest(arguments.as_bytes()));
        let journaled = self.tally().replay.remove(&index);
        if let Some(entry) = journaled {
            return self.replayed(index, &name, &arguments_sha256, entry);
        }
        {
            let mut tally = self.tally();
            if tally.halt.is_some() {
                // The run stops after this wave: calls not yet started are
                // not made (the retry makes them).
                return Err(ToolFailure {
                    kind: "execution_failed",
                    code: Some("halted".into()),
                    message: "the script's run is stopping".into(),
                });
            }
            tally.in_flight += 1;
        }
        let started = Instant::now();
        let result = self.live(index, &name, arguments, pause).await;
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut tally = self.tally();
        tally.in_flight -= 1;
        let result = match result {
            Err(Live::Pending(err)) => {
                // Not journaled: the retry makes this call, with the answer.
                let failure = failure(&err);
                Self::halt(&mut tally, index, Halt::Pending(err));
                return Err(failure);
            }
            // Over the call cap: refused before anything ran, and refused
            // again alike on a re-run, so neither listed nor journaled
            // (a loop catching it cannot grow either list).
            Err(Live::Failed(failure)) if failure.code.as_deref() == Some("too_many_calls") => {
                return Err(failure);
            }
            Err(Live::Failed(failure)) => Err(failure),
            Ok(out) => {
                tally.fuel = tally.fuel.saturating_add(out.fuel_consumed);
                let bytes = tally.bytes.saturating_add(out.text.len());
                if bytes > self.limits.max_call_bytes {
                    Err(ToolFailure {
                        kind: "limit",
                        code: Some("too_much_output".into()),
                        message: format!(
                            "the script's tool calls returned more than {} bytes in all \
                             (`max_call_bytes`); ask the tools for less (a filter, a page)",
                            self.limits.max_call_bytes
                        ),
                    })
                } else {
                    tally.bytes = bytes;
                    Ok(if out.json().is_some() {
                        ToolOutput::Json(out.text)
                    } else {
                        ToolOutput::Text(out.text)
                    })
                }
            }
        };
        tally.records.push(CallRecord {
            tool: name.clone(),
            ok: result.is_ok(),
            ms,
            count: 1,
            journaled: false,
        });
        tally.tools.insert(name.clone());
        let entry = JournalEntry::new(index, name, arguments_sha256, ms, &result);
        self.journal(&mut tally, entry);
        result
    }

    /// Call `index` answered from the earlier run's `entry`, which must be
    /// a call of the same tool with the same arguments; otherwise the run
    /// halts as not deterministic.
    fn replayed(
        &self,
        index: u32,
        name: &str,
        arguments_sha256: &str,
        entry: JournalEntry,
    ) -> Result<ToolOutput, ToolFailure> {
        let mut tally = self.tally();
        if entry.tool != name || entry.arguments_sha256 != arguments_sha256 {
            let differs = if entry.tool == name {
                format!(
                    "other arguments (sha256 {arguments_sha256}, the journal has {})",
                    entry.arguments_sha256
                )
            } else {
                format!(
                    "`{}`, the journal has `{}`",
                    corral_names::text::escape(name),
                    corral_names::text::escape(&entry.tool)
                )
            };
            let message = format!(
                "{NOT_DETERMINISTIC}: its call {} this time was {differs}. A script run for a \
                 client that answers approvals by retrying (MCP 2026-07-28) must make the same \
                 calls every run; Math.random and Date are already fixed per run",
                index + 1
            );
            Self::halt(&mut tally, index, Halt::NotDeterministic(message.clone()));
            return Err(ToolFailure {
                kind: "execution_failed",
                code: Some("not_deterministic".into()),
                message,
            });
        }
        tally.calls = tally.calls.saturating_add(1);
        let result = entry.answer.result();
        if let Ok(ToolOutput::Json(text) | ToolOutput::Text(text)) = &result {
            tally.bytes = tally.bytes.saturating_add(text.len());
        }
        tally.records.push(CallRecord {
            tool: entry.tool.clone(),
            ok: result.is_ok(),
            ms: entry.ms,
            count: 1,
            journaled: true,
        });
        tally.tools.insert(entry.tool.clone());
        self.journal(&mut tally, entry);
        result
    }

    /// Call `index` through the call path.
    async fn live(
        &self,
        index: u32,
        name: &str,
        arguments: String,
        pause: ReviewPause,
    ) -> Result<crate::CallOutput, Live> {
        self.admit(name).map_err(Live::Failed)?;
        let value = serde_json::from_str::<Value>(&arguments).map_err(|err| {
            Live::Failed(ToolFailure {
                kind: "invalid_arguments",
                code: None,
                message: format!("the arguments of `{name}` are not JSON: {err}"),
            })
        })?;
        let mut options = self.options.clone();
        options.script = options.script.map(|s| s.with_call(index));
        options.review_pause = Some(pause);
        match self.caller.call_value(name, value, &options).await {
            Ok(out) => Ok(out),
            Err(err @ CallError::ApprovalPending { .. }) => Err(Live::Pending(err)),
            Err(err) => Err(Live::Failed(failure(&err))),
        }
    }
}

/// How a live call ended other than with an output.
enum Live {
    /// It waits for approval on a retry.
    Pending(CallError),
    /// It failed, as the script sees it.
    Failed(ToolFailure),
}

/// A failed inner call as the script's `ToolError` sees it: one of four
/// kinds, the finer kind (or the tool's own code) as its `code`.
fn failure(err: &CallError) -> ToolFailure {
    let kind = match err {
        CallError::UnknownTool { .. } | CallError::InvalidArguments { .. } => "invalid_arguments",
        CallError::Rejected { .. } | CallError::ApprovalPending { .. } => "denied",
        CallError::OutOfFuel { .. }
        | CallError::Timeout { .. }
        | CallError::MemoryLimit { .. }
        | CallError::StackOverflow { .. }
        | CallError::OutputTooLarge { .. }
        | CallError::RateLimited { .. }
        | CallError::QuotaExceeded { .. }
        | CallError::CircuitOpen { .. }
        | CallError::InvalidLimits { .. } => "limit",
        _ => "execution_failed",
    };
    ToolFailure {
        kind,
        code: Some(
            err.code()
                .map_or_else(|| err.kind().to_string(), |c| c.to_string()),
        ),
        message: err.to_string(),
    }
}

impl ToolCalls for ScriptCalls {
    fn call(
        &self,
        name: String,
        arguments: String,
        pause: ReviewPause,
    ) -> ToolFuture<'_, Result<ToolOutput, ToolFailure>> {
        let index = self.positions(1);
        Box::pin(self.one(index, name, arguments, pause))
    }

    fn parallel(
        &self,
        calls: Vec<(String, String)>,
        pause: ReviewPause,
    ) -> ToolFuture<'_, Vec<Result<ToolOutput, ToolFailure>>> {
        // Positions in the wave's order, whatever order the calls end in.
        let first = self.positions(calls.len());
        Box::pin(async move {
            futures_util::stream::iter((first..).zip(calls))
                .map(|(index, (name, arguments))| self.one(index, name, arguments, pause.clone()))
                .buffered(self.concurrency)
                .collect()
                .await
        })
    }

    fn console(&self, level: ConsoleLevel, text: String) {
        self.tally().console.push(ConsoleLine { level, text });
    }

    fn halted(&self) -> bool {
        self.tally().halt.is_some()
    }
}
