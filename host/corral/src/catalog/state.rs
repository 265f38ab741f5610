//! Per-tool runtime state: what the resilience layers and the health window
//! remember between calls of one tool build, owned by that tool
//! ([`Tool::state`](crate::catalog::registry::Tool::state)) and built once when the
//! catalog is built, next to the tool's effective settings. The layers read
//! it from the invocation's tool: no host-wide map, no key string per call.
//!
//! What crosses a reload ([`ToolState::carry`], the one rule):
//! - A tool's state (result cache, its own rate limiter, circuit, health
//!   window) carries over to the new catalog only when the tool is provided
//!   by the same plugin file with the same bytes (sha256), under the same
//!   guest name, with the same effective resilience settings. Anything else
//!   gets fresh state, so a changed setting takes effect on the next call
//!   after the reload.
//! - The plugin-wide rate limiter carries over when the plugin's file, bytes
//!   and plugin-wide limit are unchanged, whatever happened to single tools.
//! - The serial lock of a tool that is not parallelizable carries over by
//!   the tool's name alone, whatever changed: it guards what the tool
//!   touches outside the sandbox (its granted files, its upstream), which a
//!   new build shares, so a call that started before the reload and one
//!   after it still never overlap.
//! - State of a tool no longer served is freed when the last catalog (or
//!   call in flight) holding it goes; [`StateCount`] counts the live ones.
//!
//! Pipelines and built-in tools keep only a health window (and a serial
//! lock nobody takes); theirs carries over by name.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::call::health::HealthWindow;
use crate::call::resilience::circuit::Circuit;
use crate::call::resilience::limiter::Limiter;
use crate::call::resilience::results::ResultCache;
use crate::config::resilience::ToolResilience;

/// How many [`ToolState`]s are alive in one host: in the served catalog,
/// and in older catalogs that calls in flight still hold.
#[derive(Debug, Clone, Default)]
pub(crate) struct StateCount(Arc<AtomicUsize>);

impl StateCount {
    /// The number alive now.
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One tool build's runtime state.
pub(crate) struct ToolState {
    /// The tool's name as a metrics label (shared, not copied per call).
    label: Arc<str>,
    /// The keys of its per-call metrics, built once.
    pub(crate) call_metrics: crate::call::metrics::CallMetrics,
    /// What `carry` compares: plugin path and sha256, guest name, effective
    /// resilience. Empty for pipelines and built-ins.
    identity: Identity,
    /// The result cache, when the tool has one.
    pub(crate) cache: Option<ResultCache>,
    /// The tool's own rate limit.
    pub(crate) rate: Option<Limiter>,
    /// The plugin-wide rate limit, shared with the plugin's other tools.
    pub(crate) plugin_rate: Option<Arc<Limiter>>,
    /// The circuit breaker.
    pub(crate) circuit: Option<Circuit>,
    /// Recent calls.
    pub(crate) health: HealthWindow,
    /// Held during a call when the tool is not parallelizable.
    pub(crate) serial: Arc<tokio::sync::Mutex<()>>,
    count: StateCount,
}

impl std::fmt::Debug for ToolState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolState")
            .field("tool", &self.label)
            .field("cache", &self.cache.is_some())
            .field("rate", &self.rate)
            .field("plugin_rate", &self.plugin_rate)
            .field("circuit", &self.circuit)
            .finish_non_exhaustive()
    }
}

impl Drop for ToolState {
    fn drop(&mut self) {
        self.count.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What decides whether a tool's state may carry over.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Identity {
    /// The plugin file and its sha256; `None` for pipelines and built-ins.
    pub plugin: Option<(std::path::PathBuf, String)>,
    /// The name the guest knows the tool by.
    pub guest_name: String,
    /// The effective resilience settings.
    pub resilience: ToolResilience,
}

impl ToolState {
    /// The state of the tool `name` with `identity`, for the catalog being
    /// built. `previous` is the tool of the same name in the catalog being
    /// replaced, whose state is reused when [`carry`](Self::carry) allows;
    /// `plugin_rate` is the plugin's shared limiter (see
    /// [`plugin_limiter`]).
    pub(crate) fn build(
        name: &str,
        identity: Identity,
        plugin_rate: Option<Arc<Limiter>>,
        previous: Option<&Arc<ToolState>>,
        count: &StateCount,
    ) -> Arc<ToolState> {
        if let Some(old) = previous.filter(|old| old.carry(&identity)) {
            return old.clone();
        }
        let r = &identity.resilience;
        let cache = r.cache.as_ref().map(ResultCache::new);
        let rate = r
            .rate_limit
            .as_ref()
            .map(|c| Limiter::new(c, "the tool's limit"));
        let circuit = r.circuit_breaker.map(Circuit::new);
        let health = HealthWindow::new(r.health);
        count.0.fetch_add(1, Ordering::Relaxed);
        let label: Arc<str> = Arc::from(name);
        Arc::new(ToolState {
            call_metrics: crate::call::metrics::CallMetrics::new(label.clone()),
            label,
            cache,
            rate,
            plugin_rate,
            circuit,
            health,
            // The serial lock follows the name (module docs).
            serial: previous.map_or_else(Arc::default, |old| old.serial.clone()),
            identity,
            count: count.clone(),
        })
    }

    /// Whether this state may serve a tool with `identity` in a new catalog:
    /// same plugin file and bytes, same guest name, same effective settings.
    pub(crate) fn carry(&self, identity: &Identity) -> bool {
        self.identity == *identity
    }

    /// What the state was built for.
    pub(crate) fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The tool's name, shared (the sandbox's log fields and leak scan
    /// take it per call without copying it).
    pub(crate) fn name(&self) -> Arc<str> {
        self.label.clone()
    }

    /// The tool's name as a metrics label.
    pub(crate) fn label(&self) -> metrics::SharedString {
        metrics::SharedString::from(self.label.clone())
    }

    /// The plugin-wide limiter this state uses, to share with the plugin's
    /// other tools in the next catalog.
    pub(crate) fn plugin_limiter(&self) -> Option<&Arc<Limiter>> {
        self.plugin_rate.as_ref()
    }

    /// What the state holds now: cached results, and tenants' budgets of
    /// the tool's own limiter (the plugin-wide one is shared, see
    /// [`plugin_limiter`](Self::plugin_limiter)).
    pub(crate) fn usage(&self) -> (u64, u64) {
        let entries = self.cache.as_ref().map_or(0, ResultCache::len);
        (entries, self.rate.as_ref().map_or(0, Limiter::tenants))
    }
}

/// The plugin-wide limiter for a plugin with `identity.plugin` and
/// `identity.resilience.plugin_rate_limit`: the one `previous` (any tool of
/// the catalog being replaced from the same plugin file and bytes with the
/// same plugin-wide limit) used, else `built` (the one this catalog already
/// made for the plugin), else a new one.
pub(crate) fn plugin_limiter<'a>(
    identity: &Identity,
    previous: impl Iterator<Item = &'a ToolState>,
    built: Option<&Arc<Limiter>>,
) -> Option<Arc<Limiter>> {
    let config = identity.resilience.plugin_rate_limit.as_ref()?;
    if let Some(built) = built {
        return Some(built.clone());
    }
    let same = |old: &&ToolState| {
        old.identity.plugin == identity.plugin
            && old.identity.resilience.plugin_rate_limit.as_ref() == Some(config)
    };
    Some(
        previous
            .filter(same)
            .find_map(|old| old.plugin_limiter().cloned())
            .unwrap_or_else(|| Arc::new(Limiter::new(config, "the plugin's limit"))),
    )
}

/// Runtime state a host holds, for operators and tests
/// ([`Host::runtime_stats`](crate::Host::runtime_stats)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RuntimeStats {
    /// Per-tool runtime states alive: one per tool of the served catalog,
    /// plus those of replaced catalogs that calls in flight still hold.
    pub tool_states: usize,
    /// Results held by the served tools' caches.
    pub cached_results: u64,
    /// Per-tenant rate-limit budgets held by the served tools (at most
    /// `max_context_keys` per limiter).
    pub tenant_budgets: u64,
    /// Instances running now (calls, and `describe` while loading), out of
    /// the pool's `max_concurrent_instances`: 0 when the host is idle, so a
    /// slot that is never given back shows here.
    pub instances_in_use: usize,
    /// Instances made ahead of calls and ready for one (not in use, each
    /// holding a slot; README, "Instances made ahead").
    pub instances_ready: usize,
    /// Receivers of [`Host::subscribe`](crate::Host::subscribe) alive: one
    /// per MCP session listening for `tools/list_changed`, plus any a library
    /// user holds. It falls back as sessions end, so a figure that only grows
    /// while sessions come and go is a leak.
    pub change_subscribers: usize,
}
