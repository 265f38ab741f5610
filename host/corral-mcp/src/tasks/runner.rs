//! The background run of one task: the call, the lease that says this
//! replica still runs it, cancel requests from any replica, the guest's
//! progress as the task's `statusMessage`, and the final record.

use std::sync::Arc;

use rmcp::model::TaskPayload;
use serde_json::Value;
use tokio::sync::{Mutex, watch};

use corral::{CallOptions, Host};

use super::{Stored, Tasks, save, set};

/// The longest `statusMessage` taken from a guest's progress: 200 characters.
const MAX_STATUS_CHARS: usize = 200;

/// What a task runs: a call of `name` as the `tools/call` asked it.
pub(crate) struct Job {
    /// The host whose tool runs.
    pub host: Host,
    /// The tool's name as the client called it.
    pub name: String,
    /// The arguments, as the client sent them (the host's call validates
    /// them).
    pub arguments: Value,
    /// Context and limits of the call; the reviewer and progress sink are
    /// the runner's.
    pub options: CallOptions,
    /// The client declared `elicitation`: approvals are asked through the
    /// task's `inputRequests`; otherwise the host's reviewer decides.
    pub ask_client: bool,
    /// The client holds no session and the tool may ask it (`[client]`):
    /// the guest's requests go through the task's `inputRequests` too, as
    /// far as `capabilities` (the client's) allow.
    pub client_requests: Option<rmcp::model::ClientCapabilities>,
    /// The input-required round whose retry became this task (mode
    /// `after_input`): it answers what the client answered before the task,
    /// and hands the rest to the task's `inputRequests`.
    pub round: Option<Arc<crate::approval::RoundClient>>,
}

/// Resolves when a cancel of task `id` was asked, here or on another replica.
async fn cancel_requested(tasks: &Tasks, id: &str, mut wake: watch::Receiver<u64>) {
    let key = Tasks::cancel_key(id);
    loop {
        if matches!(tasks.store.get(&key).await, Ok(Some(_))) {
            return;
        }
        tokio::select! {
            _ = wake.changed() => {}
            () = tokio::time::sleep(super::REMOTE_POLL) => {}
        }
    }
}

/// Renews the lease of task `id` every third of it, and makes each new
/// progress message its `statusMessage`, until aborted.
async fn keep(
    tasks: Arc<Tasks>,
    id: String,
    record: Arc<Mutex<Stored>>,
    mut progress: watch::Receiver<String>,
) {
    let mut renew = tokio::time::interval(tasks.settings.lease / 3);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    renew.tick().await;
    // The sink lives as long as the call's options, which outlive this
    // task; should it close anyway, only the lease is kept.
    let mut progressing = true;
    loop {
        tokio::select! {
            changed = progress.changed(), if progressing => {
                if changed.is_err() {
                    progressing = false;
                    continue;
                }
                let message = progress.borrow_and_update().clone();
                save(&tasks, &id, &record, |s| s.task.task.status_message = Some(message)).await;
            }
            _ = renew.tick() => save(&tasks, &id, &record, |_| {}).await,
        }
    }
}

/// Runs `job` as task `id` to its end, then frees its slot.
pub(crate) async fn run(
    tasks: Arc<Tasks>,
    id: String,
    stored: Stored,
    job: Job,
    wake: watch::Sender<u64>,
) {
    let tenant = stored.tenant.clone();
    let record = Arc::new(Mutex::new(stored));
    let Job {
        host,
        name,
        arguments,
        mut options,
        ask_client,
        client_requests,
        round,
    } = job;
    let (progress_tx, progress_rx) = watch::channel(String::new());
    options.progress = Some(Arc::new(move |_tool: &str, message: &str| {
        let text: String = corral::untrusted_text::escape_line(message)
            .chars()
            .take(MAX_STATUS_CHARS)
            .collect();
        progress_tx.send_replace(text);
    }));
    if ask_client {
        options.reviewer = Some(Arc::new(super::review::TaskReviewer::new(
            tasks.clone(),
            id.clone(),
            record.clone(),
            wake.subscribe(),
            host.clone(),
        )));
    }
    if let Some(capabilities) = client_requests {
        let task_client = Arc::new(super::client::TaskClient::new(
            tasks.clone(),
            id.clone(),
            record.clone(),
            wake.subscribe(),
            capabilities,
        ));
        options.client = Some(match round {
            Some(round) => {
                round.then(task_client);
                round
            }
            None => task_client,
        });
    }
    // The lease and the status message are kept by a task of their own:
    // a save waits for the record's lock, which a review inside the call
    // may hold across its own write, so it must never wait where the call
    // is not polled.
    let keeper = tokio::spawn(keep(tasks.clone(), id.clone(), record.clone(), progress_rx));
    // The call (and with it the sandbox and any waiting review) is gone
    // at the end of this block, before the final record is written.
    let payload = {
        let call = host.call_value(&name, arguments, &options);
        let cancel = cancel_requested(&tasks, &id, wake.subscribe());
        tokio::select! {
            mut result = call => {
                if let Ok(out) = &mut result {
                    crate::resources::keep(tasks.store().as_ref(), || tenant.clone(), &name, &mut out.parts)
                        .await;
                }
                crate::present::task_end(result)
            }
            () = cancel => {
                tracing::info!(tool = name, task = id, "task cancelled; sandbox torn down");
                metrics::counter!("corral_calls_cancelled_total", "tool" => name.clone())
                    .increment(1);
                TaskPayload::Cancelled
            }
        }
    };
    keeper.abort();
    let _ = keeper.await;
    drop(options);
    save(&tasks, &id, &record, |s| set(s, payload)).await;
    tasks.finished(&id, &tenant).await;
}
