//! `corral serve`'s MCP task options (SEP-2663): how long results are kept
//! and how many tasks one tenant may run.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use corral_mcp::McpServer;
use corral_mcp::tasks::TaskSettings;

/// How `corral serve` keeps MCP tasks.
#[derive(Debug, Args)]
pub struct TaskArgs {
    /// Keep a task and its result this long after its last change
    #[arg(long, value_name = "MS", default_value_t = 300_000)]
    task_ttl_ms: u64,
    /// Running tasks one tenant (context key `tenant`) may have at once
    #[arg(long, value_name = "N", default_value_t = 32)]
    max_tasks_per_tenant: u32,
}

impl TaskArgs {
    /// `server` keeping its tasks in this process's memory under these
    /// settings.
    pub fn apply(&self, server: McpServer) -> McpServer {
        let mut settings = TaskSettings::default();
        settings.ttl = Duration::from_millis(self.task_ttl_ms.max(1));
        settings.max_per_tenant = self.max_tasks_per_tenant;
        server.with_tasks(Arc::new(corral_store::MemoryStore::default()), settings)
    }
}
