//! A guest's requests to its client inside a task (WIT 0.3.0 `elicit`,
//! `sample`, `roots`, `ask`), for a client that takes tasks but holds no
//! session (2026-07-28): each request becomes an entry of the task's
//! `inputRequests` (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`, under the request's key), all of one `ask` at once, and
//! waits in place for its
//! answer from `tasks/update` on any replica. No re-run: the guest is still
//! there. A kind of request the client did not declare is `unsupported`.
//!
//! rmcp marks sampling and roots deprecated (SEP-2577); corral serves them
//! while clients and the conformance requirements still use them.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::model::{ClientCapabilities, InputRequest, InputRequests};
use serde_json::Value;
use tokio::sync::{Mutex, watch};

use corral::{
    Asking, ClientAnswer, ClientFuture, ClientFutures, ClientRefusal, ClientRequest, ClientRequests,
};

use super::review::{answered, ask, wait_for_answer};
use super::{Stored, Tasks, save};

/// Asks the task's client through `tasks/get` and `tasks/update`.
pub(crate) struct TaskClient {
    tasks: Arc<Tasks>,
    id: String,
    record: Arc<Mutex<Stored>>,
    wake: watch::Receiver<u64>,
    capabilities: ClientCapabilities,
}

impl TaskClient {
    pub(crate) fn new(
        tasks: Arc<Tasks>,
        id: String,
        record: Arc<Mutex<Stored>>,
        wake: watch::Receiver<u64>,
        capabilities: ClientCapabilities,
    ) -> Self {
        Self {
            tasks,
            id,
            record,
            wake,
            capabilities,
        }
    }

    /// Waits for the answer to `request` and reads it.
    async fn answer(
        &self,
        asking: &Asking,
        request: &ClientRequest,
    ) -> Result<ClientAnswer, ClientRefusal> {
        let key = request.key();
        let answer = tokio::time::timeout(
            asking.timeout,
            wait_for_answer(&self.tasks, &self.id, &self.wake, key),
        )
        .await;
        save(&self.tasks, &self.id, &self.record, |s| answered(s, key)).await;
        let value: Value = answer.map_err(|_| {
            ClientRefusal::Failed(format!(
                "no answer to the task's request within {} s",
                asking.timeout.as_secs()
            ))
        })?;
        crate::client::read_answer(request, value)
    }
}

impl ClientRequests for TaskClient {
    fn ask<'a>(&'a self, asking: &'a Asking, request: ClientRequest) -> ClientFuture<'a> {
        Box::pin(crate::client::only(self.ask_all(asking, vec![request])))
    }

    fn ask_all<'a>(
        &'a self,
        asking: &'a Asking,
        requests: Vec<ClientRequest>,
    ) -> ClientFutures<'a> {
        Box::pin(async move {
            let prepared: Vec<Result<(ClientRequest, InputRequest), ClientRefusal>> = requests
                .into_iter()
                .map(|request| {
                    crate::client::input_request(asking, &self.capabilities, &request)
                        .map(|input| (request, input))
                })
                .collect();
            let mut pending = InputRequests::new();
            for (request, input) in prepared.iter().flatten() {
                pending.insert(request.key().to_string(), input.clone());
            }
            // Every request of one `ask` waits at once.
            if !pending.is_empty() {
                save(&self.tasks, &self.id, &self.record, |s| ask(s, pending)).await;
            }
            futures_util::future::join_all(prepared.into_iter().map(|p| async move {
                let (request, _) = p?;
                self.answer(asking, &request).await
            }))
            .await
        })
    }
}
