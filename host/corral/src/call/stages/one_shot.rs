//! One-shot-per-loop tools (Embabel, `OneShotPerLoopTool` and
//! `LoopMemo`): a tool a model should call once per agent loop (a web search,
//! a plan generator) is marked in its plugin's policy with an advice string:
//!
//! ```toml
//! [one_shot]
//! web_search = "You already searched in this loop; answer from those results."
//! ```
//!
//! Within one loop, identified by the call context key [`LOOP_ID_KEY`]
//! (`loop_id`; over MCP, `_meta["corral/context"]["loop_id"]`), the first
//! call runs; every later call of the same tool returns the advice as a
//! successful result without running the guest (no gate, no instance, no
//! fuel). A call without a loop id passes through every time, the reference's
//! fallback. The memory is bounded ([`MAX_LOOPS`] entries) and entries expire
//! ([`LOOP_TTL`] after the first call).
//!
//! A call counts as the loop's one call once it passes validation, whatever
//! its outcome, so two concurrent calls in one loop never both run.

use std::time::{Duration, Instant};

use crate::call::{CallOptions, CallOutput};
use crate::catalog::registry::Tool;
use corral_sandbox::ReturnBehavior;

/// The call context key that names the agent loop.
pub const LOOP_ID_KEY: &str = "loop_id";
/// Most `(loop id, tool)` pairs remembered at once; the least recently used
/// goes first.
pub const MAX_LOOPS: u64 = 10_000;
/// How long a loop's first call is remembered.
pub const LOOP_TTL: Duration = Duration::from_secs(3600);

/// Which loops have already made their call of each one-shot tool.
#[derive(Clone)]
pub(crate) struct LoopMemo {
    seen: moka::sync::Cache<(String, String), ()>,
}

impl Default for LoopMemo {
    fn default() -> Self {
        Self {
            seen: moka::sync::Cache::builder()
                .max_capacity(MAX_LOOPS)
                .time_to_live(LOOP_TTL)
                .build(),
        }
    }
}

impl LoopMemo {
    /// Forgets that `tool` ran in the loop of `options`, for a call that
    /// did not run after all (it waits for approval, given on a retry).
    pub(crate) fn forget(&self, tool: &Tool, options: &CallOptions) {
        if let Some(loop_id) = options.context.get(LOOP_ID_KEY) {
            self.seen
                .invalidate(&(loop_id.to_string(), tool.spec().name.clone()));
        }
    }

    /// The advice result when `tool` is one-shot and this call's loop has
    /// already called it; `None` to let the call run (and, for a one-shot
    /// tool in a loop, remember that it did).
    pub(crate) fn check(
        &self,
        tool: &Tool,
        options: &CallOptions,
        started: Instant,
    ) -> Option<CallOutput> {
        let advice = tool.plugin()?.policy().one_shot.get(tool.guest_name())?;
        let loop_id = options.context.get(LOOP_ID_KEY)?;
        let entry = self
            .seen
            .entry((loop_id.to_string(), tool.spec().name.clone()))
            .or_insert(());
        if entry.is_fresh() {
            return None;
        }
        tracing::debug!(tool = %tool.spec().name, loop_id, "one-shot tool called again in its loop");
        Some(CallOutput {
            tool: tool.spec().name.clone(),
            parts: Vec::new(),
            text: advice.clone(),
            json: Default::default(),
            return_behavior: ReturnBehavior::ToLlm,
            duration: started.elapsed(),
            fuel_consumed: 0,
            attempts: 0,
            cache_hit: false,
        })
    }
}

impl std::fmt::Debug for LoopMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopMemo")
            .field("entries", &self.seen.entry_count())
            .finish()
    }
}
