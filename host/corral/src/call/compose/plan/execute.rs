//! Running a validated [`Plan`]: wave by wave, the steps of a wave as parallel
//! tasks (at most [`PlanLimits::max_concurrency`] at once), each step a normal
//! call through a [`Caller`] (schema validation after `$ref` substitution, the
//! approval gate, its own sandbox under its plugin's limits), failing forward
//! (the tool-planning guide's error handling).
//!
//! Result shape ([`PlanResult::to_json`]):
//!
//! ```json
//! {"status": "succeeded" | "partial" | "failed",
//!  "waves": [["a", "b"], ["c"]],
//!  "duration_ms": 12.5,
//!  "steps": [
//!    {"id": "a", "tool": "t", "status": "succeeded", "output": {...}, "duration_ms": 3.1,
//!     "fuel_consumed": 51234, "return_behavior": "to_llm"},
//!    {"id": "b", "tool": "t", "status": "failed",
//!     "error": {"kind": "tool_failed", "message": "...", "code": 7}, "duration_ms": 2.0,
//!     "fuel_consumed": 0},
//!    {"id": "c", "tool": "t", "status": "skipped",
//!     "error": {"kind": "skipped", "message": "Skipped because dependency 'b' failed"},
//!     "duration_ms": 0.0, "fuel_consumed": 0}]}
//! ```
//!
//! `steps` lists the `output_steps` in their order, or every step in plan
//! order when `output_steps` was omitted. `status` is `succeeded` when every
//! step succeeded, `failed` when none did, `partial` otherwise. `output` is the
//! step's output as JSON, or a string when it was not JSON. `error` has the
//! shape of [`CallError::to_json`](crate::CallError::to_json) (`code` only
//! when the tool gave one).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument as _;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::reference::{self, Output};
use super::{Plan, PlanLimits};
use crate::call::CallOptions;
use crate::call::compose::{Caller, output_of};
use corral_sandbox::Limits;

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StepStatus {
    /// The call returned output.
    Succeeded,
    /// The call failed (any [`CallError`](crate::CallError)).
    Failed,
    /// The step never ran: a dependency failed or was skipped, or the plan's
    /// deadline passed first.
    Skipped,
}

/// The outcome of one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StepResult {
    /// The step id.
    pub id: String,
    /// The tool it called.
    pub tool: String,
    /// How it ended.
    pub status: StepStatus,
    /// Output (JSON, or a string when not JSON), on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// [`CallError::to_json`](crate::CallError::to_json) on failure, or
    /// `{"kind": "skipped", "message"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Wall-clock time of the call in milliseconds (0 when skipped).
    pub duration_ms: f64,
    /// Fuel units the step's guest used (0 unless it succeeded).
    pub fuel_consumed: u64,
    /// The tool's return behavior, on success: whether a front end should
    /// hand the output to the model (`to_llm`) or straight to the user
    /// (`immediate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub return_behavior: Option<corral_sandbox::ReturnBehavior>,
    /// Sandboxed attempts the step took (retries included; 0 when cached),
    /// on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// Whether the step's result came from the cache, on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit: Option<bool>,
}

/// The outcome of a whole plan.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PlanResult {
    /// Every step, in plan order.
    pub steps: Vec<StepResult>,
    /// The waves, as step ids.
    pub waves: Vec<Vec<String>>,
    /// Which steps to report; `None` for all.
    pub output_steps: Option<Vec<String>>,
    /// Wall-clock time of the whole plan.
    pub duration: Duration,
}

impl PlanResult {
    fn reported(&self) -> Vec<&StepResult> {
        match &self.output_steps {
            None => self.steps.iter().collect(),
            Some(ids) => ids
                .iter()
                .filter_map(|id| self.steps.iter().find(|s| &s.id == id))
                .collect(),
        }
    }

    /// `succeeded`, `partial` or `failed`, over every step.
    pub fn status(&self) -> &'static str {
        let ok = self
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Succeeded)
            .count();
        match ok {
            n if n == self.steps.len() => "succeeded",
            0 => "failed",
            _ => "partial",
        }
    }

    /// The documented JSON shape (see the module docs).
    pub fn to_json(&self) -> Value {
        json!({
            "status": self.status(),
            "waves": self.waves,
            "duration_ms": self.duration.as_secs_f64() * 1e3,
            "steps": self.reported(),
        })
    }

    /// Fuel used by every step together.
    pub fn fuel_consumed(&self) -> u64 {
        self.steps.iter().map(|s| s.fuel_consumed).sum()
    }

    /// A compact rendering for a model's context: one line per reported step,
    /// `id (tool): <output>` or `id (tool): Error: <message>`.
    pub fn to_text(&self) -> String {
        Self::text_of(&self.to_json())
    }

    /// [`to_text`](Self::to_text) of a result already in its JSON shape
    /// ([`to_json`](Self::to_json)), e.g. the output of a call of
    /// `execute_tool_plan`. Steps missing a field render it empty.
    pub fn text_of(json: &Value) -> String {
        let mut out = String::new();
        let steps = json["steps"].as_array().map_or(&[][..], Vec::as_slice);
        for step in steps {
            let body = match (&step["output"], &step["error"]) {
                (Value::String(s), _) => s.clone(),
                (Value::Null, Value::Null) => String::new(),
                (Value::Null, e) => format!("Error: {}", e["message"].as_str().unwrap_or("")),
                (v, _) => v.to_string(),
            };
            let field = |name: &str| step[name].as_str().unwrap_or("").to_string();
            out.push_str(&format!("{} ({}): {}\n", field("id"), field("tool"), body));
        }
        out
    }
}

fn skipped(id: &str, tool: &str, message: String) -> StepResult {
    StepResult {
        id: id.to_string(),
        tool: tool.to_string(),
        status: StepStatus::Skipped,
        output: None,
        error: Some(json!({ "kind": "skipped", "message": message })),
        duration_ms: 0.0,
        fuel_consumed: 0,
        return_behavior: None,
        attempts: None,
        cache_hit: None,
    }
}

/// Runs `plan`, each step through `caller`. Each step gets `options`
/// (context, progress, reviewer, limits), with its deadline cut to what is
/// left of `limits.deadline_ms` (a tightening only: the step's own limits
/// still come from its plugin, see
/// [`limits::effective`](corral_sandbox::effective)).
pub async fn run(
    caller: Arc<dyn Caller>,
    plan: &Plan,
    limits: &PlanLimits,
    options: &CallOptions,
) -> PlanResult {
    let started = Instant::now();
    let deadline = Duration::from_millis(limits.deadline_ms);
    let permits = Arc::new(Semaphore::new(limits.max_concurrency.max(1)));
    let mut results: Vec<Option<StepResult>> = vec![None; plan.steps.len()];
    let mut outputs: HashMap<String, Output> = HashMap::new();

    for wave in &plan.waves {
        let mut tasks = tokio::task::JoinSet::new();
        for &i in wave {
            let step = &plan.steps[i];
            let blocked = plan.graph.deps(i).iter().find(|&&d| {
                results[d]
                    .as_ref()
                    .is_none_or(|r| r.status != StepStatus::Succeeded)
            });
            if let Some(&d) = blocked {
                results[i] = Some(skipped(
                    &step.id,
                    &step.tool,
                    format!("Skipped because dependency '{}' failed", plan.steps[d].id),
                ));
                continue;
            }
            let Some(remaining) = deadline
                .checked_sub(started.elapsed())
                .filter(|r| !r.is_zero())
            else {
                results[i] = Some(skipped(
                    &step.id,
                    &step.tool,
                    format!(
                        "Skipped because the plan deadline of {} ms passed",
                        limits.deadline_ms
                    ),
                ));
                continue;
            };
            let arguments = reference::substitute(&step.arguments, &|id| outputs.get(id).cloned());
            let mut step_options = options.clone();
            let tightest = options.limits.unwrap_or(Limits::LOOSEST);
            let left_ms = remaining.as_millis().max(1) as u64;
            step_options.limits = Some(tightest.with_timeout_ms(tightest.timeout_ms.min(left_ms)));
            let (caller, permits, tool, id) = (
                caller.clone(),
                permits.clone(),
                step.tool.clone(),
                step.id.clone(),
            );
            // A step's call span is a child of the plan's (`in_current_span`):
            // one trace for the plan.
            tasks.spawn(
                async move {
                    let _permit = permits.acquire_owned().await;
                    let begun = Instant::now();
                    let result = caller.call_value(&tool, arguments, &step_options).await;
                    (i, id, tool, result, begun.elapsed())
                }
                .in_current_span(),
            );
        }
        while let Some(joined) = tasks.join_next().await {
            let Ok((i, id, tool, result, took)) = joined else {
                continue; // a panicked step task leaves its slot empty, reported below
            };
            let duration_ms = took.as_secs_f64() * 1e3;
            results[i] = Some(match result {
                Ok(out) => {
                    let output = output_of(&out);
                    let shown = match &output {
                        Output::Json(v) => v.clone(),
                        Output::Text(t) => Value::String(t.clone()),
                    };
                    outputs.insert(id.clone(), output);
                    StepResult {
                        id,
                        tool,
                        status: StepStatus::Succeeded,
                        output: Some(shown),
                        error: None,
                        duration_ms,
                        fuel_consumed: out.fuel_consumed,
                        return_behavior: Some(out.return_behavior),
                        attempts: Some(out.attempts),
                        cache_hit: Some(out.cache_hit),
                    }
                }
                Err(err) => StepResult {
                    id,
                    tool,
                    status: StepStatus::Failed,
                    output: None,
                    error: Some(err.to_json()),
                    duration_ms,
                    fuel_consumed: 0,
                    return_behavior: None,
                    attempts: None,
                    cache_hit: None,
                },
            });
        }
    }
    let steps = results
        .into_iter()
        .zip(&plan.steps)
        .map(|(r, step)| {
            r.unwrap_or_else(|| StepResult {
                id: step.id.clone(),
                tool: step.tool.clone(),
                status: StepStatus::Failed,
                output: None,
                error: Some(json!({ "kind": "internal", "message": "the step's task panicked" })),
                duration_ms: 0.0,
                fuel_consumed: 0,
                return_behavior: None,
                attempts: None,
                cache_hit: None,
            })
        })
        .collect();
    PlanResult {
        steps,
        waves: plan.waves(),
        output_steps: plan.output_steps.clone(),
        duration: started.elapsed(),
    }
}
