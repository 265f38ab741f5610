//! `corral serve`'s MCP task options (SEP-2663): where tasks are kept (this
//! process's memory, or a Redis server the replicas share), how long
//! results are kept and how many tasks one tenant may run.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use corral_mcp::McpServer;
use corral_mcp::tasks::TaskSettings;
use corral_store::SharedStore;

/// How `corral serve` keeps MCP tasks.
#[derive(Debug, Args)]
pub struct TaskArgs {
    /// Where replicas share state (MCP tasks, approval states, tenant
    /// quotas): `memory` (this process only) or
    /// `redis://[user:password@]host[:port][/db]`, the same on every replica
    #[arg(long, value_name = "URL", default_value = "memory")]
    store: String,
    /// Keep a task and its result this long after its last change
    #[arg(long, value_name = "MS", default_value_t = 300_000)]
    task_ttl_ms: u64,
    /// How long a replica's claim on a task it runs lasts without renewal:
    /// a task whose replica died shows `failed` this long after
    #[arg(long, value_name = "MS", default_value_t = 15_000)]
    task_lease_ms: u64,
    /// Running tasks one tenant (context key `tenant`) may have at once
    #[arg(long, value_name = "N", default_value_t = 32)]
    max_tasks_per_tenant: u32,
}

impl TaskArgs {
    /// The store `--store` names.
    ///
    /// # Errors
    /// A `--store` that is neither `memory` nor a Redis URL.
    pub fn store(&self) -> anyhow::Result<Arc<dyn SharedStore>> {
        Ok(match self.store.as_str() {
            "memory" => Arc::new(corral_store::MemoryStore::default()),
            url if url.starts_with("redis://") => {
                Arc::new(corral_store::RedisStore::open(url).context("cannot use --store")?)
            }
            other => anyhow::bail!(
                "--store {other}: write `memory` or `redis://host:port` (a Redis server every \
                 replica reaches)"
            ),
        })
    }

    /// Whether `--store` is shared by replicas (not `memory`).
    pub fn shared(&self) -> bool {
        self.store != "memory"
    }

    /// `server` keeping its tasks in `store` under these settings.
    pub fn apply(&self, server: McpServer, store: Arc<dyn SharedStore>) -> McpServer {
        tracing::info!(
            store = store.describe(),
            "MCP tasks are kept in {}",
            store.describe()
        );
        let mut settings = TaskSettings::default();
        settings.ttl = Duration::from_millis(self.task_ttl_ms.max(1));
        settings.max_per_tenant = self.max_tasks_per_tenant;
        settings.lease = Duration::from_millis(self.task_lease_ms.max(30));
        server.with_tasks(store, settings)
    }
}
