//! Configuration: what an operator writes, parsed and checked, before any
//! plugin loads. A plugin's policy file ([`policy`]), the knobs of the
//! resilience layers and the one rule for a tool's effective settings
//! ([`resilience`]), the secret store ([`secrets`]), the plugin directory's
//! lock file ([`lock`]), the caps on what `describe` declares ([`caps`])
//! which context keys reach a plugin ([`context`]) and tenant quotas
//! ([`quota`]: the host's quotas file and a policy's `[quotas]`).
//!
//! Configuration is data: the loading layer (`loader`, `catalog`) applies
//! it when it builds a catalog, and the call layer (`call`) reads the
//! result from each tool.

pub(crate) mod caps;
pub(crate) mod context;
pub(crate) mod lock;
pub(crate) mod policy;
pub(crate) mod quota;
pub(crate) mod resilience;
pub(crate) mod secrets;
pub(crate) mod versioned;
