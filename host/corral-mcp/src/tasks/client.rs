//! A guest's requests to its client inside a task (WIT 0.3.0 `elicit`,
//! `sample`, `roots`, `ask`), for a client that takes tasks but holds no
//! session (2026-07-28): each request becomes an entry of the task's
//! `inputRequests` (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`), all of one `ask` at once, and waits in place for its
//! answer from `tasks/update` on any replica. No re-run: the guest is still
//! there. A kind of request the client did not declare is `unsupported`.
//!
//! rmcp marks sampling and roots deprecated (SEP-2577); corral serves them
//! while clients and the conformance requirements still use them.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationSchema, InputRequest, InputRequests,
    ListRootsRequest, ListRootsResult,
};
use serde_json::Value;
use tokio::sync::{Mutex, watch};

use corral::{
    Asking, ClientAnswer, ClientFuture, ClientFutures, ClientRefusal, ClientRequest,
    ClientRequests, ClientRoot, Sampled,
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
    asked: AtomicU32,
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
            asked: AtomicU32::new(0),
        }
    }

    /// The MCP input request for `request` under a fresh key, or why not.
    fn input_request(
        &self,
        asking: &Asking,
        request: ClientRequest,
    ) -> Result<(String, InputRequest), ClientRefusal> {
        let undeclared = crate::client::undeclared;
        let n = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        let (kind, input) = match request {
            ClientRequest::Elicit { message, schema } => {
                if self.capabilities.elicitation.is_none() {
                    return Err(undeclared("elicitation"));
                }
                let requested_schema: ElicitationSchema =
                    serde_json::from_value(schema).map_err(|err| {
                        ClientRefusal::Failed(format!(
                            "the requested schema is not a form MCP clients take: {err}"
                        ))
                    })?;
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: crate::client::framed(asking, &message),
                    requested_schema,
                };
                (
                    "elicit",
                    InputRequest::Elicitation(ElicitRequest::new(params)),
                )
            }
            ClientRequest::Sample {
                messages,
                preferences,
                max_tokens,
            } => {
                if self.capabilities.sampling.is_none() {
                    return Err(undeclared("sampling"));
                }
                let params = crate::client::sampling_params(messages, preferences, max_tokens);
                (
                    "sample",
                    InputRequest::CreateMessage(CreateMessageRequest::new(params)),
                )
            }
            ClientRequest::Roots => {
                if self.capabilities.roots.is_none() {
                    return Err(undeclared("roots"));
                }
                (
                    "roots",
                    InputRequest::ListRoots(ListRootsRequest::default()),
                )
            }
            _ => {
                return Err(ClientRefusal::Unsupported(
                    "this corral does not know the request".into(),
                ));
            }
        };
        Ok((format!("{kind}-{n}"), input))
    }

    /// Waits for `key`'s answer and reads it as the answer to `kind`.
    async fn answer(&self, asking: &Asking, key: &str) -> Result<ClientAnswer, ClientRefusal> {
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
        read_answer(key, value)
    }
}

/// The client's answer under `key` (its kind is the key's prefix).
fn read_answer(key: &str, value: Value) -> Result<ClientAnswer, ClientRefusal> {
    let unusable = |err: serde_json::Error| {
        ClientRefusal::Failed(format!("the client's answer to `{key}` is unusable: {err}"))
    };
    if key.starts_with("elicit-") {
        let result: ElicitResult = serde_json::from_value(value).map_err(unusable)?;
        return Ok(ClientAnswer::Elicited(crate::client::elicitation_of(
            result,
        )));
    }
    if key.starts_with("sample-") {
        let result: CreateMessageResult = serde_json::from_value(value).map_err(unusable)?;
        let text = result
            .message
            .content
            .iter()
            .find_map(|block| block.as_text().map(|t| t.text.clone()))
            .ok_or_else(|| ClientRefusal::Failed("the model answered without text".into()))?;
        return Ok(ClientAnswer::Sampled(Sampled::new(
            text,
            result.model,
            result.stop_reason,
        )));
    }
    let result: ListRootsResult = serde_json::from_value(value).map_err(unusable)?;
    Ok(ClientAnswer::Roots(
        result
            .roots
            .into_iter()
            .map(|root| ClientRoot::new(root.uri, root.name))
            .collect(),
    ))
}

impl ClientRequests for TaskClient {
    fn ask<'a>(&'a self, asking: &'a Asking, request: ClientRequest) -> ClientFuture<'a> {
        Box::pin(async move {
            let mut answers = self.ask_all(asking, vec![request]).await;
            answers
                .pop()
                .unwrap_or_else(|| Err(ClientRefusal::Failed("no answer".into())))
        })
    }

    fn ask_all<'a>(
        &'a self,
        asking: &'a Asking,
        requests: Vec<ClientRequest>,
    ) -> ClientFutures<'a> {
        Box::pin(async move {
            let prepared: Vec<Result<(String, InputRequest), ClientRefusal>> = requests
                .into_iter()
                .map(|request| self.input_request(asking, request))
                .collect();
            let mut pending = InputRequests::new();
            for (key, input) in prepared.iter().flatten() {
                pending.insert(key.clone(), input.clone());
            }
            // Every request of one `ask` waits at once.
            if !pending.is_empty() {
                save(&self.tasks, &self.id, &self.record, |s| ask(s, pending)).await;
            }
            futures_util::future::join_all(prepared.into_iter().map(|p| async move {
                let (key, _) = p?;
                self.answer(asking, &key).await
            }))
            .await
        })
    }
}
