//! The `tracing` target of corral's spans, in one leaf module that every
//! layer may name: the sandbox opens `corral.instantiate` (or `corral.bind`)
//! and `corral.run` under it, the library's call stages the rest (`corral.call`,
//! `corral.validate`, `corral.gate`, `corral.output`).

/// The `tracing` target of the call pipeline's spans, `corral::span`, for a
/// subscriber to select them, e.g. the OpenTelemetry layer of `corral serve`.
pub const SPAN_TARGET: &str = "corral::span";

/// The span of instantiating a fresh instance (the library's call stages list the
/// spans).
pub(crate) fn instantiate_span() -> tracing::Span {
    tracing::info_span!(target: SPAN_TARGET, "corral.instantiate")
}

/// The span of binding an instance made ahead of the call to it (limits
/// and hooks), in place of `corral.instantiate` (its instantiation ran
/// before the call, outside any trace).
pub(crate) fn bind_span() -> tracing::Span {
    tracing::info_span!(target: SPAN_TARGET, "corral.bind")
}

/// The span of running the guest's export.
pub(crate) fn run_span() -> tracing::Span {
    tracing::info_span!(target: SPAN_TARGET, "corral.run")
}
