//! The contract versions the host speaks, behind one face: a plugin's linked
//! component ([`PluginPre`]) in the version it targets, what its `describe`
//! and `call` return in version-neutral types, and the `corral:tool/host`
//! imports of each version, all answered by the same [`SandboxState`]
//! methods.
//!
//! 0.2.0 (`wit/corral-tool.wit`) is tried first; 0.1.0
//! (`wit/v0.1.0/corral-tool.wit`) components load unchanged, with the new
//! metadata at its defaults (priority 50, no dependencies, no output schema,
//! no resilience hints, errors not retryable).

use tracing::Instrument as _;

use crate::trace::{instantiate_span, run_span};
use wasmtime::Store;
use wasmtime::component::{HasSelf, InstancePre, Linker};

use super::SandboxState;
use super::imports::{Decision, Level};
use super::outcome::{ErrorInfo, GuestError};
use crate::bindings::{v1, v2};
use crate::spec::{Latency, RawSpec, ResilienceHints, ReturnBehavior, ToolMetadata};

/// A plugin's component, linked and ready to instantiate, in the contract
/// version it targets.
pub enum PluginPre {
    /// `corral:tool/plugin@0.1.0`.
    V1(v1::PluginPre<SandboxState>),
    /// `corral:tool/plugin@0.2.0`.
    V2(v2::PluginPre<SandboxState>),
    /// A component of another world, served in any-component mode.
    Any(
        InstancePre<SandboxState>,
        std::sync::Arc<crate::sandbox::any::Foreign>,
    ),
    /// Code mode's runner (`corral:code/runner@0.1.0`): it serves no tool
    /// and answers only [`Op::Script`](super::Op::Script).
    Runner(super::code::RunnerPre),
}

impl PluginPre {
    /// Recognizes the world `pre` targets, newest first.
    ///
    /// # Errors
    /// When it exports neither version's `tool` interface: the 0.2.0 error.
    pub fn new(pre: InstancePre<SandboxState>) -> wasmtime::Result<Self> {
        match v2::PluginPre::new(pre.clone()) {
            Ok(v2) => Ok(Self::V2(v2)),
            Err(err) => v1::PluginPre::new(pre).map(Self::V1).map_err(|_| err),
        }
    }

    /// The contract version, e.g. `0.2.0`.
    pub fn wit_version(&self) -> &'static str {
        match self {
            Self::V1(_) => "0.1.0",
            Self::V2(_) => "0.2.0",
            Self::Any(..) => "any",
            Self::Runner(_) => "code",
        }
    }

    /// Instantiates and runs `describe`.
    pub async fn describe(
        &self,
        store: &mut Store<SandboxState>,
    ) -> wasmtime::Result<Vec<RawSpec>> {
        Ok(match self {
            Self::V1(pre) => {
                let plugin = pre.instantiate_async(&mut *store).await?;
                let specs = plugin.corral_tool_tool().call_describe(&mut *store).await?;
                specs.into_iter().map(spec_v1).collect()
            }
            Self::V2(pre) => {
                let plugin = pre.instantiate_async(&mut *store).await?;
                let specs = plugin.corral_tool_tool().call_describe(&mut *store).await?;
                specs.into_iter().map(spec_v2).collect()
            }
            // Found from its types at load: no guest code runs.
            Self::Any(_, foreign) => foreign.specs(),
            Self::Runner(_) => Vec::new(),
        })
    }

    /// Instantiates and runs `call`.
    /// `output_bytes` is the output cap, which a component of another world
    /// is held to while its result is written as JSON.
    pub async fn call(
        &self,
        store: &mut Store<SandboxState>,
        name: &str,
        arguments: &str,
        context: &Vec<(String, String)>,
        output_bytes: usize,
    ) -> wasmtime::Result<Result<String, GuestError>> {
        Ok(match self {
            Self::V1(pre) => {
                let plugin = pre
                    .instantiate_async(&mut *store)
                    .instrument(instantiate_span())
                    .await?;
                let tool = plugin.corral_tool_tool();
                tool.call_call(&mut *store, name, arguments, context)
                    .instrument(run_span())
                    .await?
                    .map_err(|err| match err {
                        v1::corral::tool::types::ToolError::InvalidArguments(i) => {
                            GuestError::InvalidArguments(info_v1(i))
                        }
                        v1::corral::tool::types::ToolError::ExecutionFailed(i) => {
                            GuestError::ExecutionFailed(info_v1(i))
                        }
                    })
            }
            Self::V2(pre) => {
                let plugin = pre
                    .instantiate_async(&mut *store)
                    .instrument(instantiate_span())
                    .await?;
                let tool = plugin.corral_tool_tool();
                tool.call_call(&mut *store, name, arguments, context)
                    .instrument(run_span())
                    .await?
                    .map_err(|err| match err {
                        v2::corral::tool::types::ToolError::InvalidArguments(i) => {
                            GuestError::InvalidArguments(info_v2(i))
                        }
                        v2::corral::tool::types::ToolError::ExecutionFailed(i) => {
                            GuestError::ExecutionFailed(info_v2(i))
                        }
                    })
            }
            Self::Any(pre, foreign) => {
                return foreign
                    .call(pre, store, name, arguments, output_bytes)
                    .await;
            }
            Self::Runner(_) => {
                return Err(wasmtime::format_err!(
                    "code mode's runner serves no tool (asked for `{name}`)"
                ));
            }
        })
    }

    /// Instantiates code mode's runner and runs `code`.
    ///
    /// # Errors
    /// A trap, or `self` not being the runner.
    pub async fn script(
        &self,
        store: &mut Store<SandboxState>,
        code: &str,
        seed: u64,
        start_ms: u64,
    ) -> wasmtime::Result<Result<String, super::ScriptError>> {
        match self {
            Self::Runner(runner) => runner.run(store, code, seed, start_ms).await,
            _ => Err(wasmtime::format_err!(
                "a plugin of world {} is not code mode's runner",
                self.wit_version()
            )),
        }
    }
}

/// Adds the `corral:tool/host` imports of every version to `linker`.
pub fn add_to_linker(linker: &mut Linker<SandboxState>) -> wasmtime::Result<()> {
    v1::Plugin::add_to_linker::<SandboxState, HasSelf<SandboxState>>(linker, |state| state)?;
    v2::Plugin::add_to_linker::<SandboxState, HasSelf<SandboxState>>(linker, |state| state)?;
    Ok(())
}

fn info_v1(info: v1::corral::tool::types::ErrorInfo) -> ErrorInfo {
    ErrorInfo {
        message: info.message,
        code: info.code,
        retryable: false,
    }
}

fn info_v2(info: v2::corral::tool::types::ErrorInfo) -> ErrorInfo {
    ErrorInfo {
        message: info.message,
        code: info.code,
        retryable: info.retryable,
    }
}

/// The metadata fields both versions share, from either version's enums.
macro_rules! common_metadata {
    ($m:expr, $types:path) => {{
        use $types as t;
        ToolMetadata {
            category: $m.category,
            keywords: $m.keywords,
            version: $m.version,
            idempotent: $m.idempotent,
            parallelizable: $m.parallelizable,
            latency: match $m.latency {
                t::LatencyHint::Fast => Latency::Fast,
                t::LatencyHint::Medium => Latency::Medium,
                t::LatencyHint::Slow => Latency::Slow,
            },
            requires_approval: $m.requires_approval,
            return_behavior: match $m.return_behavior {
                t::ReturnBehavior::ToLlm => ReturnBehavior::ToLlm,
                t::ReturnBehavior::Immediate => ReturnBehavior::Immediate,
            },
            priority: ToolMetadata::DEFAULT_PRIORITY,
            depends_on: Vec::new(),
            resilience: None,
        }
    }};
}

fn spec_v1(spec: v1::corral::tool::types::ToolSpec) -> RawSpec {
    RawSpec {
        name: spec.name,
        description: spec.description,
        parameters: spec.parameters,
        output_schema: None,
        metadata: common_metadata!(spec.metadata, v1::corral::tool::types),
    }
}

fn spec_v2(spec: v2::corral::tool::types::ToolSpec) -> RawSpec {
    let m = spec.metadata;
    let (priority, depends_on, output_schema, hints) = (
        m.priority,
        m.depends_on.clone(),
        m.output_schema.clone(),
        m.resilience,
    );
    let mut metadata = common_metadata!(m, v2::corral::tool::types);
    metadata.priority = priority;
    metadata.depends_on = depends_on;
    metadata.resilience = hints.map(|h| ResilienceHints {
        max_attempts: h.max_attempts,
        cache_ttl_ms: h.cache_ttl_ms,
        requests_per_second: h.requests_per_second,
    });
    RawSpec {
        name: spec.name,
        description: spec.description,
        parameters: spec.parameters,
        output_schema,
        metadata,
    }
}

/// One version's `corral:tool/host` implementation, forwarding to the
/// version-neutral [`SandboxState`] methods.
macro_rules! host_imports {
    ($version:ident) => {
        impl $version::corral::tool::host::Host for SandboxState {
            async fn log(
                &mut self,
                level: $version::corral::tool::types::LogLevel,
                message: String,
            ) {
                use $version::corral::tool::types::LogLevel as L;
                let level = match level {
                    L::Trace => Level::Trace,
                    L::Debug => Level::Debug,
                    L::Info => Level::Info,
                    L::Warn => Level::Warn,
                    L::Error => Level::Error,
                };
                self.guest_log(level, message);
            }

            async fn progress(&mut self, message: String) {
                self.guest_progress(message);
            }

            async fn request_approval(
                &mut self,
                description: String,
            ) -> $version::corral::tool::types::ApprovalDecision {
                use $version::corral::tool::types::ApprovalDecision as D;
                match self.guest_request_approval(description).await {
                    Decision::Continue => D::Continue,
                    Decision::Edit(revised) => D::Edit(revised),
                    Decision::ExitEarly(reason) => D::ExitEarly(reason),
                }
            }
        }

        impl $version::corral::tool::types::Host for SandboxState {}
    };
}

host_imports!(v1);
host_imports!(v2);
