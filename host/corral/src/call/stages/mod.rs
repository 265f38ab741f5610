//! The call pipeline: the one path every call takes, whoever makes it
//! ([`Host::call`](crate::Host::call), MCP `tools/call`, a plan step, a
//! pipeline step, the CLI), as explicit stages, each in its own module:
//!
//! 1. **resolve** ([`resolve`]): the name to a [`Tool`] of the catalog
//!    snapshot the call started with; a reload never changes a call in
//!    flight.
//! 2. **validate** ([`validate`]): the arguments parsed once into a JSON
//!    value, checked to be an object and against the tool's schema. No guest
//!    code runs for invalid arguments.
//!    Then **one-shot** ([`LoopMemo`](crate::call::stages::one_shot)): a
//!    one-shot tool called again in the same loop returns its advice here.
//! 3. **effective limits**: the tool's limits
//!    ([`limits::effective`](corral_sandbox::effective): host defaults, then
//!    the plugin's policy, computed once when the catalog was built), then
//!    the per-call override, which only tightens; a zero override is the
//!    caller's invalid input.
//! 4. **gate** ([`gate`]): the declared approval gate
//!    ([`Tool::requires_approval`](crate::Tool::requires_approval), decided
//!    when the catalog was built), reviewed before any pool slot is taken; a
//!    reviewer's edit is validated again. The same module answers a guest's `request-approval` later.
//! 5. **dispatch** ([`dispatch`]): a plugin's tool goes through the dispatch
//!    [`tower::Service`] and whatever layers the host was built with (the seam
//!    for cache, rate limit and retry); a pipeline or a plan runs its steps
//!    through [`Caller`], each step taking this whole path again.
//! 6. **classify** and **cap the output** ([`classify`]): the sandbox's
//!    outcome to a [`CallOutput`] or one [`CallError`] class. The output
//!    is parsed as JSON here only when the tool declares an output schema
//!    (and kept); otherwise on first use ([`CallOutput::json`]).
//! 7. **record** ([`record`]): the per-call log line and metrics.
//!
//! Invariants: a stage never re-parses what an earlier one parsed; every
//! plugin call reaches the sandbox with limits from step 3 and nothing else.
//!
//! Spans ([`SPAN_TARGET`], INFO): each call is a `corral.call` span with the
//! attributes `corral.tool`, `corral.plugin`, `corral.plugin.sha256`,
//! `corral.fuel` (units consumed), `corral.attempts` and `corral.outcome`
//! (`ok` or the error's kind), and its stages are child spans:
//! `corral.validate`, `corral.gate`, and per attempt in a sandbox
//! `corral.instantiate` (or `corral.bind`, for an instance made ahead of the
//! call), `corral.run` and `corral.output`. A plan's or a
//! pipeline's steps are `corral.call` spans under the plan's, so one call
//! from an agent is one trace. A subscriber that exports them (corral-cli's
//! OpenTelemetry layer) sees them; otherwise a span costs a disabled
//! callsite check.

mod builtin;
mod classify;
mod dispatch;
mod gate;
pub(crate) mod one_shot;
mod record;
mod resolve;
mod validate;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use tower::ServiceExt as _;
use tracing::Instrument as _;

use crate::call::approval::gate::Gatekeeper;
use crate::call::compose::Caller;
use crate::call::compose::plan::PlanLimits;
use crate::call::{CallOptions, CallOutput};
use crate::catalog::Catalog;
use crate::catalog::registry::Provider;
use crate::config::context::ContextConfig;
use corral_sandbox::CallError;
use corral_sandbox::Limits;

pub use corral_sandbox::SPAN_TARGET;
pub(crate) use dispatch::PluginDispatch;
pub use dispatch::{DispatchService, Invocation};
pub use record::CALL_LOG_TARGET;
pub(crate) use record::record;
pub use validate::Arguments;
pub(crate) use validate::RawArguments;

/// What the stages need from the host, fixed when the host is built.
pub(crate) struct CallEnv {
    /// The host's default limits (step 3's first rule).
    pub limits: Limits,
    /// Limits of `execute_tool_plan`.
    pub plan_limits: PlanLimits,
    /// Reviewer, standing approvals, audit log, review timeout.
    pub gate: Arc<Gatekeeper>,
    /// Tools the host's configuration marks as requiring approval.
    pub required: BTreeSet<String>,
    /// Host-level context and which keys reach which plugin.
    pub context: ContextConfig,
    /// The dispatch stage of plugin tools, with its layers.
    pub dispatch: DispatchService,
    /// Every tool's recent calls (reported by `tool_search`'s `info:`).
    pub health: crate::call::health::HealthRegistry,
    /// Which loops already made their one call of a one-shot tool.
    pub loops: crate::call::stages::one_shot::LoopMemo,
    /// Code mode's runner, its slots and limits (`execute_code`).
    pub code: Arc<crate::call::code::CodeEnv>,
}

/// Step 3: a plugin tool's limits (computed once when the catalog was
/// built) tightened by the call's override, which may only tighten.
///
/// # Errors
/// [`CallError::InvalidLimits`] when the override sets a knob to zero (it
/// would fail the call before it starts: the caller's mistake).
fn with_override(name: &str, limits: &Limits, call: Option<&Limits>) -> Result<Limits, CallError> {
    if call.is_none() {
        return Ok(*limits);
    }
    let limits = corral_sandbox::tighten(limits, call);
    if let Some(knob) = limits.zero_knob() {
        return Err(CallError::InvalidLimits {
            tool: name.to_string(),
            problem: format!(
                "the call's limits set `{knob}` to 0, which would fail the call before it \
                 starts; leave it out to keep the tool's own limit, or give a positive value"
            ),
        });
    }
    Ok(limits)
}

/// The context pairs of an invocation, shared; no context (most calls)
/// shares one empty list instead of allocating one per call.
fn shared(pairs: Vec<(String, String)>) -> Arc<Vec<(String, String)>> {
    static EMPTY: std::sync::LazyLock<Arc<Vec<(String, String)>>> =
        std::sync::LazyLock::new(Default::default);
    if pairs.is_empty() {
        EMPTY.clone()
    } else {
        Arc::new(pairs)
    }
}

/// Runs stages 1 to 6 for one call of `name`. `found` is what the caller
/// already looked `name` up to in `catalog` (it records with the tool's
/// metric keys), so the name is looked up once a call. `host` is the caller
/// that plan and pipeline steps go through (the host itself). The caller
/// records (stage 7).
///
/// # Errors
/// The [`CallError`] of the first stage that fails.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run<H: Caller + Clone + 'static>(
    env: &CallEnv,
    catalog: Arc<Catalog>,
    found: Option<Arc<crate::catalog::registry::Tool>>,
    host: &H,
    name: &str,
    arguments: RawArguments,
    options: &CallOptions,
    started: Instant,
) -> Result<CallOutput, CallError> {
    let tool = resolve::tool(&catalog, name, found)?;
    let builtin_catalog = matches!(tool.provider(), Provider::Builtin(_)).then_some(catalog);
    let arguments = {
        let _validate = tracing::info_span!(target: SPAN_TARGET, "corral.validate").entered();
        validate::arguments(&tool, arguments)?
    };
    if let Some(advice) = env.loops.check(&tool, options, started) {
        return Ok(advice);
    }
    let result = run_checked(
        env,
        builtin_catalog,
        host,
        tool.clone(),
        name,
        arguments,
        options,
        started,
    )
    .await;
    // A call that waits for approval, or for its client's input, has not
    // used its loop's one shot: the retry with the answer runs it.
    if matches!(
        result,
        Err(CallError::ApprovalPending { .. } | CallError::InputRequired { .. })
    ) {
        env.loops.forget(&tool, options);
    }
    result
}

/// Stages 3 to 6 of [`run`], after the one-shot check.
#[allow(clippy::too_many_arguments)]
async fn run_checked<H: Caller + Clone + 'static>(
    env: &CallEnv,
    builtin_catalog: Option<Arc<Catalog>>,
    host: &H,
    tool: Arc<crate::catalog::registry::Tool>,
    name: &str,
    arguments: validate::Arguments,
    options: &CallOptions,
    started: Instant,
) -> Result<CallOutput, CallError> {
    let limits = match tool.limits() {
        Some(limits) => Some(with_override(name, limits, options.limits.as_ref())?),
        None => None,
    };
    let arguments = gate::declared(env, &tool, arguments, options)
        .instrument(tracing::info_span!(target: SPAN_TARGET, "corral.gate"))
        .await?;
    match tool.provider() {
        Provider::Plugin(plugin) => {
            let invocation = Invocation {
                context: shared(env.context.for_plugin(
                    plugin.name(),
                    plugin.policy().context.as_ref(),
                    &options.context,
                )),
                limits: limits.unwrap_or(env.limits),
                arguments,
                options: options.clone(),
                started,
                redactions: Default::default(),
                tenant: crate::call::tenant::Tenant::of(
                    options.tenant.as_ref(),
                    &options.context,
                    &env.context.host,
                ),
                spent: Default::default(),
                tool,
            };
            env.dispatch.clone().oneshot(invocation).await
        }
        // Pipelines and built-in tools are boxed: their futures would
        // otherwise enlarge every plugin call's (BENCHMARKS.md, issue 51).
        Provider::Pipeline(pipeline) => {
            Box::pin(crate::call::compose::pipeline::run(
                host,
                name,
                pipeline,
                &arguments.value,
                options,
                started,
            ))
            .await
        }
        Provider::Builtin(builtin) => {
            let Some(catalog) = builtin_catalog else {
                return Err(CallError::Internal {
                    tool: name.to_string(),
                    message: "the built-in tool lost its catalog".into(),
                });
            };
            Box::pin(builtin::run(
                env, catalog, host, *builtin, name, &arguments, options, started,
            ))
            .await
        }
    }
}
