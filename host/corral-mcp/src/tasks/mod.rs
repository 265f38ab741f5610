//! MCP Tasks (SEP-2663, the `io.modelcontextprotocol/tasks` extension): a
//! `tools/call` answered with a task handle at once, run in the background,
//! and polled with `tasks/get`, answered with `tasks/update`, stopped with
//! `tasks/cancel`.
//!
//! **When a call becomes a task.** Only for a request that declared the
//! extension (in its `_meta` capabilities, or at `initialize`), and only
//! when the tool prefers it ([`corral::Tool::prefers_task`]: the policy's
//! `[tasks]` mode, `when_slow` by default). A facade and an unknown tool
//! never do. A declared approval gate of a 2026-07-28 client is asked in
//! line first (an input-required result); the retry that answers it becomes
//! the task. A tool in mode `required` refuses a client without the
//! extension (`MissingRequiredClientCapability`, -32021).
//!
//! **Where tasks live.** In a [`SharedStore`] (in memory by default; one
//! that replicas share makes every replica answer for every task). Keys:
//! - `task:<id>`: the task as `tasks/get` shows it, with its tenant and the
//!   runner's lease, rewritten by the runner on every change and every
//!   [`TaskSettings::lease`]` / 3`;
//! - `task:<id>:cancel`: a cancel request, which the runner polls;
//! - `task:<id>:input:<key>`: the first answer to an input request;
//! - `tasks-active:<tenant>`: the tenant's running tasks, for the cap.
//!
//! **How a task ends.** `completed` with the call's result, a tool error
//! (`isError`) or a limit the call hit included, which a model reads as it
//! would in line; `failed` with a JSON-RPC error when the call gave no
//! result of the tool (the guest crashed, or corral could not run it:
//! `present::task_end`); `cancelled` after `tasks/cancel`.
//!
//! A replica that dies while running a task stops renewing its lease: once
//! the lease is past, `tasks/get` anywhere shows the task `failed`, never
//! `working` forever.
//!
//! **Isolation.** Task ids are 128 random bits. A task belongs to the
//! tenant of the call that made it: the value of the context key
//! [`TENANT_CONTEXT_KEY`] in `_meta["corral/context"]` (empty when absent),
//! which the client asserts. A `tasks/get`, `tasks/update` or `tasks/cancel`
//! from another tenant gets the same "no such task" error as an id that
//! never existed.
//!
//! **Approvals inside a task** (`review.rs`): the task goes `input_required`
//! with the approval form under `inputRequests`; `tasks/update` on any
//! replica answers it, and the runner goes on. **A guest's own requests**
//! (`elicit`, `sample`, `roots`, `client.rs`) wait the same way, all of
//! one `ask` at once, for a client without a session.

mod client;
mod review;
mod runner;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CancelTaskParams, CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, JsonObject,
    Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use tokio::sync::watch;

use corral_store::SharedStore;

pub(crate) use runner::Job;

/// The context key whose value is a task's tenant.
pub const TENANT_CONTEXT_KEY: &str = "tenant";

/// How a server keeps its tasks. Every duration is a wall-clock span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskSettings {
    /// How long a task and its result are kept after its last change
    /// (reported as `ttlMs`): default 5 minutes.
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`):
    /// default 500 ms.
    pub poll_interval: Duration,
    /// How long a runner's claim on a task lasts without renewal: default
    /// 15 s. A task whose replica died shows `failed` this long after its
    /// last renewal.
    pub lease: Duration,
    /// Running tasks per tenant: default 32. Past it, a call that would
    /// be a task is refused until one ends.
    pub max_per_tenant: u32,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(300),
            poll_interval: Duration::from_millis(500),
            lease: Duration::from_secs(15),
            max_per_tenant: 32,
        }
    }
}

/// How often a runner looks for a cancel request or an answer made on
/// another replica: 200 ms. One made on its own replica wakes it at once.
pub const REMOTE_POLL: Duration = Duration::from_millis(200);

/// A task as kept in the store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// sha256 (hex) of the tenant that made it.
    tenant: String,
    /// Unix milliseconds until which the runner's claim holds.
    lease_until_ms: u64,
    /// What `tasks/get` shows.
    task: DetailedTask,
}

/// The tasks of one server (and, with a shared store, of its replicas).
#[derive(Debug)]
pub struct Tasks {
    store: Arc<dyn SharedStore>,
    settings: TaskSettings,
    /// Wake-ups of the tasks this process runs, by id: an answer or a
    /// cancel that arrives here reaches the runner without a poll.
    local: Mutex<HashMap<String, watch::Sender<u64>>>,
}

/// Unix milliseconds now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The tenant of a request, hashed: the one its bearer token maps to
/// (`authenticated`, see `http.rs`), else its `_meta["corral/context"]`
/// key `tenant`. A token's tenant never shares records with a context key
/// of the same name.
pub(crate) fn tenant_of(
    authenticated: Option<&corral::Tenant>,
    context: &corral::CallContext,
) -> String {
    match authenticated {
        Some(tenant) => hex::encode(sha2::Sha256::digest(
            format!("token\0{}", tenant.id()).as_bytes(),
        )),
        None => {
            let value = context.get(TENANT_CONTEXT_KEY).unwrap_or_default();
            hex::encode(sha2::Sha256::digest(value.as_bytes()))
        }
    }
}

fn unknown(id: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "no task `{}` for this client; it never existed, its result expired, or another \
             tenant made it",
            corral::untrusted_text::escape(id)
        ),
        None,
    )
}

fn store_failed(err: corral_store::StoreError) -> McpError {
    McpError::internal_error(format!("the task store failed: {err}"), None)
}

impl Tasks {
    /// Tasks kept in `store` under `settings`.
    pub fn new(store: Arc<dyn SharedStore>, settings: TaskSettings) -> Self {
        Self {
            store,
            settings,
            local: Mutex::default(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &TaskSettings {
        &self.settings
    }

    /// The store the tasks are kept in.
    pub fn store(&self) -> &Arc<dyn SharedStore> {
        &self.store
    }

    fn key(id: &str) -> String {
        format!("task:{id}")
    }

    /// Writes `stored` for its TTL (at least two leases while it runs).
    pub(crate) async fn write(&self, id: &str, stored: &Stored) -> Result<(), McpError> {
        let ttl = if stored.task.status().is_terminal() {
            self.settings.ttl
        } else {
            self.settings.ttl.max(self.settings.lease * 2)
        };
        let bytes = serde_json::to_vec(stored)
            .map_err(|err| McpError::internal_error(err.to_string(), None))?;
        self.store
            .put(&Self::key(id), bytes, ttl)
            .await
            .map_err(store_failed)
    }

    /// The task `id` as `tenant` may see it: `None` when it does not exist
    /// or belongs to another tenant. A running task whose lease has passed
    /// shows as failed.
    async fn read(&self, id: &str, tenant: &str) -> Result<Option<Stored>, McpError> {
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let Some(bytes) = self.store.get(&Self::key(id)).await.map_err(store_failed)? else {
            return Ok(None);
        };
        let Ok(mut stored) = serde_json::from_slice::<Stored>(&bytes) else {
            return Ok(None);
        };
        if stored.tenant != tenant {
            return Ok(None);
        }
        if !stored.task.status().is_terminal() && stored.lease_until_ms < now_ms() {
            let mut error = JsonObject::new();
            error.insert("code".into(), (-32603).into());
            error.insert(
                "message".into(),
                "the replica running this task stopped before it finished (its lease expired); \
                 call the tool again"
                    .into(),
            );
            stored.task =
                DetailedTask::new(stored.task.task.clone(), TaskPayload::Failed { error });
        }
        Ok(Some(stored))
    }

    /// Makes a task for a call of `tenant` and starts `job` on it: the
    /// task is in the store before this returns, so a `tasks/get` on any
    /// replica finds it.
    ///
    /// # Errors
    /// `invalid_request` when the tenant already runs
    /// [`TaskSettings::max_per_tenant`] tasks; `internal_error` when the
    /// store fails.
    pub(crate) async fn create(
        self: &Arc<Self>,
        tenant: String,
        job: Job,
    ) -> Result<CreateTaskResult, McpError> {
        let active = Self::active_key(&tenant);
        let running = self
            .store
            .add(&active, 1, self.settings.ttl)
            .await
            .map_err(store_failed)?;
        if running > i64::from(self.settings.max_per_tenant) {
            let _ = self.store.add(&active, -1, self.settings.ttl).await;
            return Err(McpError::invalid_request(
                format!(
                    "this client already runs {} tasks, the most one tenant may; wait for one \
                     to finish (tasks/get) or cancel one (tasks/cancel)",
                    self.settings.max_per_tenant
                ),
                None,
            ));
        }
        let mut id_bytes = [0u8; 16];
        getrandom::fill(&mut id_bytes)
            .map_err(|err| McpError::internal_error(format!("no randomness: {err}"), None))?;
        let id = hex::encode(id_bytes);
        let now = rmcp::task_manager::current_timestamp();
        let task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now)
            .with_ttl_ms(millis(self.settings.ttl))
            .with_poll_interval_ms(millis(self.settings.poll_interval));
        let stored = Stored {
            tenant,
            lease_until_ms: now_ms() + millis(self.settings.lease),
            task: DetailedTask::new(task.clone(), TaskPayload::Working),
        };
        if let Err(err) = self.write(&id, &stored).await {
            let _ = self.store.add(&active, -1, self.settings.ttl).await;
            return Err(err);
        }
        let (wake, _) = watch::channel(0u64);
        self.local
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), wake.clone());
        metrics::gauge!("corral_tasks_running").increment(1.0);
        tokio::spawn(runner::run(self.clone(), id, stored, job, wake));
        Ok(CreateTaskResult::new(task))
    }

    fn active_key(tenant: &str) -> String {
        format!("tasks-active:{tenant}")
    }

    /// The runner of `id` is done: forget its wake-up, free its slot.
    pub(crate) async fn finished(&self, id: &str, tenant: &str) {
        self.local
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        metrics::gauge!("corral_tasks_running").decrement(1.0);
        let _ = self
            .store
            .add(&Self::active_key(tenant), -1, self.settings.ttl)
            .await;
    }

    fn wake(&self, id: &str) {
        if let Some(wake) = self.local.lock().unwrap_or_else(|p| p.into_inner()).get(id) {
            wake.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// `tasks/get`.
    ///
    /// # Errors
    /// `invalid_params` for a task this tenant cannot see.
    pub async fn get(
        &self,
        params: &GetTaskParams,
        tenant: &str,
    ) -> Result<GetTaskResult, McpError> {
        let stored = self
            .read(&params.task_id, tenant)
            .await?
            .ok_or_else(|| unknown(&params.task_id))?;
        Ok(GetTaskResult::new(stored.task))
    }

    /// `tasks/update`: each answer is kept once (the first wins); keys the
    /// task never asked are ignored, as SEP-2663 says.
    ///
    /// # Errors
    /// `invalid_params` for a task this tenant cannot see.
    pub async fn update(&self, params: UpdateTaskParams, tenant: &str) -> Result<(), McpError> {
        let id = &params.task_id;
        let stored = self.read(id, tenant).await?.ok_or_else(|| unknown(id))?;
        let TaskPayload::InputRequired { input_requests } = &stored.task.payload else {
            return Ok(());
        };
        for (key, response) in params.input_responses {
            if !input_requests.contains_key(&key) {
                continue;
            }
            let bytes = serde_json::to_vec(&response)
                .map_err(|err| McpError::internal_error(err.to_string(), None))?;
            self.store
                .put_new(&Self::input_key(id, &key), bytes, self.settings.ttl)
                .await
                .map_err(store_failed)?;
        }
        self.wake(id);
        Ok(())
    }

    pub(crate) fn input_key(id: &str, key: &str) -> String {
        format!("task:{id}:input:{key}")
    }

    pub(crate) fn cancel_key(id: &str) -> String {
        format!("task:{id}:cancel")
    }

    /// `tasks/cancel`: asks the runner to stop (it stops the guest at its
    /// next epoch tick and marks the task `cancelled`); a finished task is
    /// left as it is. The acknowledgement comes before the runner stops.
    ///
    /// # Errors
    /// `invalid_params` for a task this tenant cannot see.
    pub async fn cancel(&self, params: &CancelTaskParams, tenant: &str) -> Result<(), McpError> {
        let id = &params.task_id;
        let stored = self.read(id, tenant).await?.ok_or_else(|| unknown(id))?;
        if stored.task.status().is_terminal() {
            return Ok(());
        }
        self.store
            .put(&Self::cancel_key(id), b"1".to_vec(), self.settings.ttl)
            .await
            .map_err(store_failed)?;
        self.wake(id);
        Ok(())
    }
}

/// Rewrites the record with a fresh lease (and `change` applied).
pub(crate) async fn save(
    tasks: &Tasks,
    id: &str,
    record: &tokio::sync::Mutex<Stored>,
    change: impl FnOnce(&mut Stored),
) {
    let mut stored = record.lock().await;
    change(&mut stored);
    stored.lease_until_ms = now_ms() + millis(tasks.settings.lease);
    stored.task.task.last_updated_at = rmcp::task_manager::current_timestamp();
    if let Err(err) = tasks.write(id, &stored).await {
        tracing::warn!(task = id, "could not save the task: {}", err.message);
    }
}

/// Sets the task's status and payload.
pub(crate) fn set(stored: &mut Stored, payload: TaskPayload) {
    stored.task = DetailedTask::new(stored.task.task.clone(), payload);
}
