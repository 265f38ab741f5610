//! Dispatch of the built-in tools: `execute_tool_plan` runs a plan's waves
//! through [`Caller`] (each step the whole call path again); `execute_code`
//! runs a script whose tool calls go through [`Caller`] too
//! ([`code`](crate::call::code)); `tool_search` answers from the catalog
//! snapshot the call started with.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::{Arguments, CallEnv};
use crate::call::compose::Caller;
use crate::call::compose::plan::Plan;
use crate::call::{CallOptions, CallOutput};
use crate::catalog::Catalog;
use crate::catalog::registry::Builtin;
use corral_sandbox::CallError;
use corral_sandbox::ReturnBehavior;

/// Runs the built-in `builtin` (called as `name`) with validated arguments.
///
/// # Errors
/// [`CallError::InvalidArguments`] for a plan that breaks the plan rules or
/// an `info:` query naming no served tool.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run<H: Caller + Clone + 'static>(
    env: &CallEnv,
    catalog: Arc<Catalog>,
    host: &H,
    builtin: Builtin,
    name: &str,
    arguments: &Arguments,
    options: &CallOptions,
    started: Instant,
) -> Result<CallOutput, CallError> {
    let invalid = |problems| CallError::InvalidArguments {
        tool: name.to_string(),
        problems,
        code: None,
    };
    let (json, fuel) = match builtin {
        Builtin::Plan => {
            let plan = Plan::from_value(
                arguments.value.as_ref().clone(),
                arguments.text.len(),
                &env.plan_limits,
                |t| catalog.tool(t).is_some(),
            )
            .map_err(|err| invalid(err.problems))?;
            // Steps resolve in whatever catalog is current when they start.
            drop(catalog);
            let caller: Arc<dyn Caller> = Arc::new(host.clone());
            let result =
                crate::call::compose::plan::execute::run(caller, &plan, &env.plan_limits, options)
                    .await;
            (result.to_json(), result.fuel_consumed())
        }
        Builtin::Code => {
            // Inner calls resolve in whatever catalog is current when they
            // start; the leak scan of what the script returns uses the
            // secrets of the plugins as the call started.
            let redactor_of: crate::call::code::RedactorOf = Arc::new(move |tool: &str| {
                catalog
                    .tool(tool)
                    .and_then(|t| t.plugin().and_then(|p| p.grants().redactor.clone()))
            });
            let caller: Arc<dyn Caller> = Arc::new(host.clone());
            let limits = super::with_override(name, &env.limits, options.limits.as_ref())?;
            crate::call::code::run(
                &env.code,
                limits,
                env.plan_limits.max_concurrency,
                redactor_of,
                caller,
                name,
                &arguments.value,
                options,
            )
            .await?
        }
        Builtin::Search => {
            let requires_approval =
                |tool: &crate::catalog::registry::Tool| tool.requires_approval();
            let health = |tool: &str| -> Value {
                catalog
                    .tool(tool)
                    .map(|t| t.state().health.of(tool))
                    .and_then(|h| serde_json::to_value(h).ok())
                    .unwrap_or(Value::Null)
            };
            let extra = crate::catalog::discovery::search::Extra {
                requires_approval: &requires_approval,
                health: &health,
            };
            let served: Vec<&crate::catalog::registry::Tool> =
                catalog.tools().map(AsRef::as_ref).collect();
            let json = crate::catalog::discovery::search::answer(
                &served,
                catalog.search_index(),
                &arguments.value,
                &extra,
            )
            .map_err(invalid)?;
            (json, 0)
        }
    };
    Ok(CallOutput {
        tool: name.to_string(),
        parts: Vec::new(),
        text: json.to_string(),
        json: Some(json).into(),
        return_behavior: ReturnBehavior::ToLlm,
        duration: started.elapsed(),
        fuel_consumed: fuel,
        attempts: 1,
        cache_hit: false,
    })
}
