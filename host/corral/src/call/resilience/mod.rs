//! Resilience (TnsAI, docs/references.md): the middleware layers around the dispatch
//! stage of every plugin tool's execution, in exactly this order, outermost
//! first:
//!
//! ```text
//! cache( quota( rate_limit( circuit_breaker( retry( sandbox ) ) ) ) )
//! ```
//!
//! so a cache hit skips the quota and the rate limit and runs no guest
//! code; the tenant's quotas are checked once before the rest and charged
//! once after, with every attempt's use (`quota.rs`; the quotas are the
//! host's, not the tool's state); a call takes
//! one rate-limit slot however many attempts it makes; the breaker counts a
//! call as failed only after its retries; and retries happen closest to the
//! sandbox, each attempt a fresh instance under the full limits.
//!
//! Each layer reads the tool's runtime state ([`state::ToolState`]: built
//! once per tool when the catalog is built, from its effective configuration,
//! [`config::effective`]: the policy over the guest's hints, switched by the
//! host) from the [`Invocation`](crate::Invocation)'s tool; a tool without
//! configuration for a layer passes straight through it. No layer keeps a
//! map of its own or builds a key per call. What state crosses a reload is
//! written in [`state`].

mod audit;
mod breaker;
mod cache;
pub(crate) mod circuit;
pub(crate) mod clock;
pub(crate) mod limiter;
mod quota;
mod rate;
pub(crate) mod results;
mod retry;

use crate::call::CallOutput;
use crate::call::compose::CallFuture;
use crate::call::stages::{DispatchService, Invocation};
use corral_sandbox::CallError;
use tower::util::BoxCloneSyncService;

pub use limiter::DEFAULT_MAX_CONTEXT_KEYS;

/// What a resilience layer wraps: the next layer in, or the sandbox. The
/// stack is one concrete type, boxed once outside it, so that handing a call
/// inwards clones a few `Arc`s instead of allocating a boxed clone of every
/// layer below at every layer (with a `BoxCloneSyncService` per layer, 15
/// allocations a call for the four layers and the sandbox, counted from the
/// structure).
///
/// Every layer and the sandbox are always ready (`poll_ready` returns
/// `Ready(Ok)`: back-pressure is the pool's semaphore, awaited inside the
/// call), so a layer a tool does not use calls its inner service directly
/// and returns that future as is, with no box and no clone of its own.
pub(crate) trait Inner:
    tower::Service<
        Invocation,
        Response = CallOutput,
        Error = CallError,
        Future = CallFuture<'static>,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> Inner for S where
    S: tower::Service<
            Invocation,
            Response = CallOutput,
            Error = CallError,
            Future = CallFuture<'static>,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// Wraps `sandbox` in the resilience layers, in their fixed order, and in
/// the audit layer when the host keeps an audit log.
pub(crate) fn wrap<S: Inner>(
    sandbox: S,
    audit: Option<std::sync::Arc<crate::call::audit::AuditLog>>,
    quotas: std::sync::Arc<crate::call::quota::Quotas>,
    clock: clock::Clock,
) -> DispatchService {
    let stack = cache::Cache::new(
        quota::Quota::new(
            rate::RateLimit::new(breaker::Breaker::new(retry::Retry::new(sandbox))),
            quotas,
        ),
        clock,
    );
    match audit {
        Some(log) => BoxCloneSyncService::new(audit::Audit::new(stack, log)),
        None => BoxCloneSyncService::new(stack),
    }
}

/// Whether a failure counts against a tool (breaker, health): the tool or
/// its upstream failed, not the caller or the host's configuration.
pub(crate) fn is_tool_failure(err: &crate::CallError) -> bool {
    use crate::CallError as E;
    matches!(
        err,
        E::ToolFailed { .. }
            | E::OutOfFuel { .. }
            | E::Timeout { .. }
            | E::MemoryLimit { .. }
            | E::StackOverflow { .. }
            | E::OutputTooLarge { .. }
            | E::OutputInvalid { .. }
            | E::Trapped { .. }
    )
}
