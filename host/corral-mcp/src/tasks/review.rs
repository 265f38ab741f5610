//! Approvals inside a task: the reviewer of a task whose client declared
//! `elicitation`. A gated call sets the task `input_required` with the
//! approval form (the same form as every MCP approval, `approval::form`)
//! under a fresh key, and waits for that key's answer from `tasks/update`
//! on any replica, up to the review's deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rmcp::model::{ElicitResult, InputRequests, TaskPayload};
use tokio::sync::{Mutex, watch};

use corral::{Host, ReviewError, ReviewFuture, ReviewRequest, Reviewer};

use super::{Stored, Tasks, save, set};
use crate::approval::form;

/// Asks the task's client, through `tasks/get` and `tasks/update`.
pub(crate) struct TaskReviewer {
    tasks: Arc<Tasks>,
    id: String,
    record: Arc<Mutex<Stored>>,
    wake: watch::Receiver<u64>,
    host: Host,
    asked: AtomicU32,
}

impl std::fmt::Debug for TaskReviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskReviewer")
            .field("task", &self.id)
            .finish_non_exhaustive()
    }
}

impl TaskReviewer {
    pub(crate) fn new(
        tasks: Arc<Tasks>,
        id: String,
        record: Arc<Mutex<Stored>>,
        wake: watch::Receiver<u64>,
        host: Host,
    ) -> Self {
        Self {
            tasks,
            id,
            record,
            wake,
            host,
            asked: AtomicU32::new(0),
        }
    }

    /// The answer under `key`, once `tasks/update` gave one.
    async fn answer(&self, key: &str) -> Option<ElicitResult> {
        let value = wait_for_answer(&self.tasks, &self.id, &self.wake, key).await;
        // An answer that is not an elicitation result is no consent.
        serde_json::from_value(value).ok()
    }
}

/// The answer `tasks/update` gave task `id` under `key`, as JSON (`null`
/// when it is not JSON), once there is one, here or from another replica.
pub(super) async fn wait_for_answer(
    tasks: &Tasks,
    id: &str,
    wake: &watch::Receiver<u64>,
    key: &str,
) -> serde_json::Value {
    let store_key = Tasks::input_key(id, key);
    let mut wake = wake.clone();
    loop {
        if let Ok(Some(bytes)) = tasks.store.get(&store_key).await {
            return serde_json::from_slice(&bytes).unwrap_or_default();
        }
        tokio::select! {
            _ = wake.changed() => {}
            () = tokio::time::sleep(super::REMOTE_POLL) => {}
        }
    }
}

/// Adds `requests` to the task's outstanding questions.
pub(super) fn ask(stored: &mut Stored, requests: InputRequests) {
    if let TaskPayload::InputRequired { input_requests } = &mut stored.task.payload {
        input_requests.extend(requests);
    } else {
        set(
            stored,
            TaskPayload::InputRequired {
                input_requests: requests,
            },
        );
    }
}

/// Takes the question `key` out; with none left the task works again.
pub(super) fn answered(stored: &mut Stored, key: &str) {
    if let TaskPayload::InputRequired { input_requests } = &mut stored.task.payload {
        input_requests.remove(key);
        if input_requests.is_empty() {
            set(stored, TaskPayload::Working);
        }
    }
}

impl Reviewer for TaskReviewer {
    fn name(&self) -> &str {
        "mcp-task"
    }

    fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a> {
        Box::pin(async move {
            let failed = |message: String| ReviewError {
                reviewer: "mcp-task".into(),
                message,
            };
            let parameters = form::parameters(&self.host, &request.tool);
            let (message, requested_schema) =
                form::question(request, &parameters).map_err(failed)?;
            let n = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
            let key = format!("{}-{n}", crate::approval::INPUT_KEY);
            let requests = form::input_requests(key.clone(), message, requested_schema);
            // Several questions may wait at once (a script's parallel
            // calls): each adds its key, and takes it out once answered.
            save(&self.tasks, &self.id, &self.record, |s| ask(s, requests)).await;
            let answer = tokio::time::timeout(request.timeout, self.answer(&key)).await;
            save(&self.tasks, &self.id, &self.record, |s| answered(s, &key)).await;
            match answer {
                Err(_) => Err(failed(format!(
                    "no answer to the task's approval question within {} s",
                    request.timeout.as_secs()
                ))),
                Ok(None) => Ok(corral::ApprovalDecision::ExitEarly(
                    "the answer was not an elicitation result; denied".into(),
                )),
                Ok(Some(answer)) => Ok(form::decision(
                    request,
                    &parameters,
                    &answer.action,
                    answer.content.as_ref(),
                )),
            }
        })
    }
}
