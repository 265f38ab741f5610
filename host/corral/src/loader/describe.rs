//! Running a new plugin's `describe` once, in a fresh sandbox with nothing
//! granted, under its describe limits, and holding its output to its caps.

use std::sync::Arc;

use super::Plugin;
use crate::loader::error::LoadErrorReason;
use corral_sandbox::Engine;
use corral_sandbox::Grants;
use corral_sandbox::RawSpec;
use corral_sandbox::{self as sandbox, Op, OpResult, RunSetup};

/// Runs `describe` once in a fresh sandbox under the plugin's describe
/// limits, and checks its output against the plugin's caps.
pub(super) async fn describe(
    engine: &Engine,
    plugin: &Plugin,
) -> Result<Vec<RawSpec>, LoadErrorReason> {
    let setup = RunSetup {
        tape: None,
        engine,
        pre: &plugin.pre,
        limits: &plugin.describe_limits,
        plugin: plugin.name.clone(),
        tool: Arc::from("describe"),
        // `describe` runs with nothing granted, whatever the policy says.
        grants: &Grants::none(),
        // No approval hook: a `describe` that asks for approval gets a
        // configuration error and exit-early.
        approval: None,
        client: None,
        tools: None,
        // Nothing is granted, so no request gets as far as a lookup.
        resolver: Arc::new(sandbox::SystemResolver),
        progress: None,
        // Nothing granted, no secret: nothing to scan for.
        leaks: corral_sandbox::Leaks::new(None, Arc::from("describe"), Default::default()),
        slot: None,
    };
    let (result, report) = sandbox::run(setup, Op::Describe).await;
    let specs = match result {
        Ok(OpResult::Describe(specs)) => specs,
        Ok(OpResult::Call(_) | OpResult::Script(_)) => {
            return Err(LoadErrorReason::DescribeFailed(
                "the sandbox ran something other than `describe`".into(),
            ));
        }
        Err(failure) => {
            let (stderr, _) = report.stderr;
            if !stderr.is_empty() {
                tracing::debug!(
                    plugin = ?plugin.path,
                    "describe stderr: {}",
                    corral_names::text::escape(&stderr)
                );
            }
            let failure = match failure {
                sandbox::Failure::Timeout => format!(
                    "exceeded its deadline of {} ms (raise `[describe] timeout_ms` in its policy \
                     if it needs longer)",
                    plugin.describe_limits.timeout_ms
                ),
                other => other.to_string(),
            };
            return Err(LoadErrorReason::DescribeFailed(failure));
        }
    };
    let specs: Vec<RawSpec> = specs;
    let bytes = specs.iter().map(RawSpec::text_bytes).sum();
    plugin
        .caps
        .check_output(specs.len(), bytes)
        .map_err(LoadErrorReason::from)?;
    Ok(specs)
}
