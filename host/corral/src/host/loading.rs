//! The builder's settings of what the host trusts and how it loads: the
//! plugin size cap, signatures, and serving before compiling.

use super::HostBuilder;

impl HostBuilder {
    /// The plugin signatures the host accepts and requires
    /// ([`Trust`](crate::Trust)): signatures beside a plugin are checked
    /// against `trust.keys` at every load and reload, and with
    /// `trust.required` a plugin no key verifies does not load
    /// ([`LoadErrorReason::Signature`](crate::LoadErrorReason::Signature)).
    /// A policy's `[integrity] signed_by` names its plugin's keys itself.
    /// Default: no keys, nothing required.
    #[must_use]
    #[cfg(feature = "signatures")]
    pub fn trust(mut self, trust: crate::loader::signature::Trust) -> Self {
        self.trust = trust;
        self
    }

    /// Serves what the component cache holds at once, and compiles the
    /// other plugins in the background: `build` returns with only the
    /// plugins whose compiled form is cached loaded (the rest listed by
    /// [`Host::pending_plugins`](crate::Host::pending_plugins)), then one background reload compiles the
    /// rest in parallel and announces them like any reload
    /// ([`Host::subscribe`](crate::Host::subscribe)). A call naming a tool not loaded yet waits for
    /// that reload, up to the call's deadline. Default: off (`build` loads
    /// everything, as a one-shot command needs).
    #[must_use]
    pub fn serve_while_compiling(mut self, on: bool) -> Self {
        self.serve_while_compiling = on;
        self
    }

    /// The plugin size cap, in bytes: a larger `*.wasm` file fails to load
    /// (before it is read) with [`ComponentError::TooLarge`](crate::ComponentError::TooLarge),
    /// and the distribution client refuses a larger layer before writing it.
    /// Default: [`DEFAULT_MAX_PLUGIN_BYTES`](crate::DEFAULT_MAX_PLUGIN_BYTES)
    /// (256 MiB).
    #[must_use]
    pub fn max_plugin_bytes(mut self, bytes: u64) -> Self {
        self.max_plugin_bytes = bytes;
        self
    }
}
