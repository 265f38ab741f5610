//! Code mode's journal: a call inside a script that waits for approval on a
//! retry stops the run, and the retry replays the journal the stop carried
//! (MCP 2026-07-28's input-required flow, through the library).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use corral::{
    ApprovalDecision, CODE_TOOL, CallError, CallOptions, CodeLimits, Host, Journal,
    NOT_DETERMINISTIC, ReviewFuture, ReviewRequest, Reviewer,
};
use serde_json::{Value, json};

use crate::support::{ENCODE, TEXT, builder, failure, plugin_dir};

/// Answers from a queue, then defers: one round of a client that answers
/// one question per retry.
#[derive(Debug, Default)]
struct Rounds {
    answers: Mutex<VecDeque<ApprovalDecision>>,
    seen: Mutex<Vec<ReviewRequest>>,
}

impl Rounds {
    fn answering(answers: impl IntoIterator<Item = ApprovalDecision>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers.into_iter().collect()),
            seen: Mutex::default(),
        })
    }

    /// Which of the script's calls were reviewed, by position.
    fn reviewed(&self) -> Vec<Option<u32>> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .map(|r| r.script.as_ref().and_then(|s| s.call))
            .collect()
    }
}

impl Reviewer for Rounds {
    fn name(&self) -> &str {
        "rounds"
    }

    fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a> {
        self.seen.lock().unwrap().push(request.clone());
        let answer = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(ApprovalDecision::Defer);
        Box::pin(async move { Ok(answer) })
    }
}

async fn gated_host(limits: CodeLimits) -> (tempfile::TempDir, Host) {
    let dir = plugin_dir(&[ENCODE, TEXT]);
    let host = builder(dir.path())
        .require_approval("sha256")
        .code_limits(limits)
        .build()
        .await
        .expect("host");
    (dir, host)
}

const SCRIPT: &str = "const r = Math.random();\n\
    const t = Date.now();\n\
    const slug = await tools.slugify({text: 'Hello World'});\n\
    const a = await tools.sha256({text: 'a'});\n\
    let b;\n\
    try { b = (await tools.sha256({text: 'b'})).bytes; } catch (e) { b = e.kind; }\n\
    return {r, t, slug, a: a.bytes, b};";

/// One round: the script run with `journal` (if any), reviewed by `rounds`.
async fn round(
    host: &Host,
    code: &str,
    journal: Option<Journal>,
    rounds: &Arc<Rounds>,
) -> Result<Value, CallError> {
    let mut options = CallOptions::default().with_reviewer(rounds.clone());
    if let Some(journal) = journal {
        options = options.with_journal(journal);
    }
    host.call_value(CODE_TOOL, json!({ "code": code }), &options)
        .await
        .map(|out| out.json().cloned().expect("execute_code answers JSON"))
}

/// The journal of a run that stopped at a call waiting for approval, and
/// the position of that call.
fn stopped(result: Result<Value, CallError>) -> (Journal, Option<u32>) {
    match failure(result) {
        CallError::ApprovalPending {
            tool,
            request,
            journal: Some(journal),
        } => {
            assert_eq!(tool, "sha256");
            (*journal, request.script.and_then(|s| s.call))
        }
        other => panic!("expected a stop for approval, got {other:?}"),
    }
}

#[tokio::test]
async fn a_gated_call_stops_the_script_and_the_retry_replays_what_came_before() {
    let (_dir, host) = gated_host(CodeLimits::default()).await;
    // Round 1: the first gated call (the script's second) waits.
    let first = Rounds::answering([]);
    let (journal1, at) = stopped(round(&host, SCRIPT, None, &first).await);
    assert_eq!(at, Some(1));
    assert_eq!(journal1.calls.len(), 1, "the slugify call is journaled");
    assert_eq!(journal1.calls[0].tool, "slugify");
    // Round 2: that call is approved and runs; the next one waits.
    let second = Rounds::answering([ApprovalDecision::Continue]);
    let (journal2, at) = stopped(round(&host, SCRIPT, Some(journal1.clone()), &second).await);
    assert_eq!(at, Some(2));
    assert_eq!(second.reviewed(), [Some(1), Some(2)]);
    assert_eq!(
        (journal2.seed, journal2.start_ms),
        (journal1.seed, journal1.start_ms)
    );
    let tools: Vec<&str> = journal2.calls.iter().map(|e| e.tool.as_str()).collect();
    assert_eq!(tools, ["slugify", "sha256"]);
    // Round 3: it is declined; the script catches the denial and returns.
    // Nothing journaled is reviewed or run again.
    let third = Rounds::answering([ApprovalDecision::ExitEarly("not b".into())]);
    let out = round(&host, SCRIPT, Some(journal2.clone()), &third)
        .await
        .expect("the script finishes");
    assert_eq!(third.reviewed(), [Some(2)]);
    assert_eq!(out["result"]["a"], json!(1));
    assert_eq!(out["result"]["b"], json!("denied"));
    assert_eq!(out["result"]["slug"], json!({"slug": "hello-world"}));
    let journaled: Vec<bool> = out["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c.get("journaled") == Some(&json!(true)))
        .collect();
    assert_eq!(journaled, [true, true, false]);
    // Math.random and Date.now saw what the first run saw: the same again
    // from the same journal, and the clock starts at the journal's time.
    let again = round(
        &host,
        SCRIPT,
        Some(journal2),
        &Rounds::answering([ApprovalDecision::Continue]),
    )
    .await
    .expect("again");
    assert_eq!(again["result"]["r"], out["result"]["r"]);
    assert_eq!(again["result"]["t"], out["result"]["t"]);
    let t = out["result"]["t"].as_u64().expect("t");
    assert!(
        (journal1.start_ms..journal1.start_ms + 10).contains(&t),
        "{t}"
    );
}

#[tokio::test]
async fn a_re_run_that_makes_other_calls_fails_as_not_deterministic() {
    let (_dir, host) = gated_host(CodeLimits::default()).await;
    let (journal, _) = stopped(round(&host, SCRIPT, None, &Rounds::answering([])).await);
    // The journal says the first call had other arguments.
    let mut forged = journal.clone();
    forged.calls[0].arguments_sha256 = "00".repeat(32);
    let err = failure(round(&host, SCRIPT, Some(forged), &Rounds::answering([])).await);
    assert!(
        matches!(&err, CallError::ToolFailed { message, .. } if message.starts_with(NOT_DETERMINISTIC)),
        "{err:?}"
    );
    // The journal holds a call the re-run never makes.
    let mut longer = journal.clone();
    let mut extra = longer.calls[0].clone();
    extra.index = 7;
    longer.calls.push(extra);
    let done = Rounds::answering([ApprovalDecision::Continue, ApprovalDecision::Continue]);
    let err = failure(round(&host, SCRIPT, Some(longer), &done).await);
    assert!(err.to_string().contains(NOT_DETERMINISTIC), "{err}");
    // Another script with this journal is refused before it runs.
    let other = format!("{SCRIPT}\n// edited");
    let err = failure(round(&host, &other, Some(journal), &Rounds::answering([])).await);
    assert!(
        matches!(&err, CallError::InvalidArguments { problems, .. } if problems[0].contains("another script")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_journal_over_its_cap_fails_the_stop_saying_so() {
    let (_dir, host) = gated_host(CodeLimits::default().with_max_journal_bytes(2_000)).await;
    let code = "await tools.slugify({text: 'x'.repeat(3000)});\n\
                return (await tools.sha256({text: 'a'})).bytes;";
    let err = failure(round(&host, code, None, &Rounds::answering([])).await);
    let text = err.to_string();
    assert!(
        matches!(err, CallError::ToolFailed { .. }) && text.contains("max_journal_bytes"),
        "{text}"
    );
    // Without a gated call waiting, the same script is not limited by it.
    let out = round(
        &host,
        code,
        None,
        &Rounds::answering([ApprovalDecision::Continue]),
    )
    .await
    .expect("approved in line");
    assert_eq!(out["result"], json!(1));
}

const WAVE: &str = "const [s, a] = await tools.parallel([['slugify', {text: 'B c'}], ['sha256', {text: 'a'}]]);\n\
                    return [a.bytes, s.slug];";

#[tokio::test]
async fn a_gated_call_in_a_wave_stops_after_the_wave_and_a_mismatch_beats_it() {
    let (_dir, host) = gated_host(CodeLimits::default()).await;
    // The gated call (position 1) waits; the call before it in its wave
    // had started, ran, and is journaled.
    let (journal, at) = stopped(round(&host, WAVE, None, &Rounds::answering([])).await);
    assert_eq!(at, Some(1));
    let journaled: Vec<(u32, &str)> = journal
        .calls
        .iter()
        .map(|e| (e.index, e.tool.as_str()))
        .collect();
    assert_eq!(journaled, [(0, "slugify")]);
    let out = round(
        &host,
        WAVE,
        Some(journal.clone()),
        &Rounds::answering([ApprovalDecision::Continue]),
    )
    .await
    .expect("approved");
    assert_eq!(out["result"], json!([1, "b-c"]));
    // A re-run whose wave strays from its journal fails as not
    // deterministic, even though a call of the same wave waits again.
    let mut forged = journal;
    forged.calls[0].arguments_sha256 = "00".repeat(32);
    let err = failure(round(&host, WAVE, Some(forged), &Rounds::answering([])).await);
    assert!(err.to_string().contains(NOT_DETERMINISTIC), "{err}");
    // A gated call first in its wave stops the calls after it from
    // starting: nothing else runs before the answer.
    let first = "const [a, s] = await tools.parallel([['sha256', {text: 'a'}], ['slugify', {text: 'B c'}]]);\n\
                 return [a.bytes, s.slug];";
    let (journal, at) = stopped(round(&host, first, None, &Rounds::answering([])).await);
    assert_eq!((at, journal.calls.len()), (Some(0), 0));
}

#[tokio::test]
async fn a_run_cut_off_with_a_call_in_flight_does_not_wait_for_approval() {
    let dir = plugin_dir(&[ENCODE, crate::support::HOSTILE]);
    let host = builder(dir.path())
        .require_approval("sha256")
        .build()
        .await
        .expect("host");
    // `sleep` starts, then the gated call waits; `sleep` is still running
    // when the script's deadline ends the run. It may have acted and is in
    // no journal, so the run fails on its deadline instead of asking.
    let code = "await tools.parallel([['sleep', {ms: 5000}], ['sha256', {text: 'a'}]]);";
    let options = CallOptions::default().with_reviewer(Rounds::answering([]));
    let err = host
        .call_value(
            CODE_TOOL,
            json!({ "code": code, "timeout_ms": 500 }),
            &options,
        )
        .await
        .expect_err("cut off");
    assert!(matches!(err, CallError::Timeout { .. }), "{err:?}");
}
