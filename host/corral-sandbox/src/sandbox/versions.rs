//! The contract versions the host speaks, behind one face: a plugin's linked
//! component ([`PluginPre`]) in the version it targets, its `describe` and
//! `call` (their results made version-neutral in `neutral.rs`), and the
//! `corral:tool/host` imports of each version, all answered by the same
//! [`SandboxState`] methods.
//!
//! 0.3.0 (`wit/corral-tool.wit`) is tried first, then 0.2.0
//! (`wit/v0.2.0/`); 0.1.0 (`wit/v0.1.0/corral-tool.wit`) components load
//! unchanged, with the newer metadata at its defaults (priority 50, no
//! dependencies, no output schema, no resilience hints, errors not
//! retryable). A 0.1.0 or 0.2.0 call answers one string
//! ([`GuestOutput::Text`]); a 0.3.0 call answers parts
//! ([`GuestOutput::Parts`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tracing::Instrument as _;

use crate::trace::{instantiate_span, run_span};
use wasmtime::Store;
use wasmtime::component::{
    ComponentExportIndex, ComponentNamedList, Func, HasSelf, InstancePre, Lift, Linker, Lower,
    TypedFunc,
};

mod neutral;

use neutral::{info_v1, info_v2, info_v3, part_v3, spec_v1, spec_v2, spec_v3};

use super::SandboxState;
use super::imports::{Decision, Level};
use super::outcome::GuestError;
use crate::bindings::{v1, v2, v3};
use crate::parts::GuestOutput;
use crate::spec::RawSpec;

/// Runs a contract version's `call` export (`$call`, the instance's
/// [`Instantiated`]), the guest's `tool-error` mapped to a [`GuestError`]
/// by `$info`: the same body for every version, whose bindings are
/// different types. The typed function has the signature the version's
/// bindings generate ([`same_signature`]).
macro_rules! call_version {
    ($version:ident, $info:ident, $store:expr, $call:expr, $name:expr, $arguments:expr, $context:expr) => {{
        let callee = same_signature(
            $version::exports::corral::tool::tool::Guest::func_call,
            $call,
        );
        let (result,) = callee
            .call_async(&mut *$store, ($name, $arguments, $context))
            .instrument(run_span())
            .await?;
        result.map_err(|err| match err {
            $version::corral::tool::types::ToolError::InvalidArguments(i) => {
                GuestError::InvalidArguments($info(i))
            }
            $version::corral::tool::types::ToolError::ExecutionFailed(i) => {
                GuestError::ExecutionFailed($info(i))
            }
        })
    }};
}

/// `call`, an instance's `call` export, as the typed function the
/// bindings' accessor `like` returns (`Guest::func_call` of a version).
///
/// Type-checking an export is wasmtime's `Func::typed`, which the bindings
/// run on every export of every instance they load (`describe` and `call`,
/// with their large records and variants): skipping it took about 5 200
/// instructions off a `Host::call` of `sha256` (BENCHMARKS.md, "One type
/// check a component"). A component's export types are the component's,
/// the same in every instance of it, so [`Contract`] runs that check once,
/// on its first instance, and later instances take `call` from here
/// unchecked.
fn same_signature<'a, G, P, R>(_like: fn(&'a G) -> TypedFunc<P, R>, call: Func) -> TypedFunc<P, R>
where
    P: ComponentNamedList + Lower,
    R: ComponentNamedList + Lift,
{
    // SAFETY: `call` is the `call` export of an instance of the very
    // component whose bindings `like` belongs to (`PluginPre::call` checks
    // the instance's `Contract::id`), and that component's exports passed
    // the bindings' type check, with these types, on its first instance
    // (`Contract::checked`). Every instance of one component has the same
    // export types: no export of corral's world involves a resource, whose
    // types could differ per instance.
    unsafe { TypedFunc::new_unchecked(call) }
}

/// The next [`Contract::id`].
static NEXT_CONTRACT: AtomicU64 = AtomicU64::new(0);

/// A plugin of corral's world in one contract version: the version's
/// generated bindings (`P`, its `PluginPre`), through which `describe`
/// runs, and the component's `call` export, found once at load.
pub struct Contract<P> {
    bindings: P,
    /// The `call` function of the version's `tool` interface.
    call: ComponentExportIndex,
    /// Whether an instance of this component passed the bindings' type
    /// check of every export (set by the first instantiation, `describe`'s
    /// or a call's): later instances skip it ([`same_signature`]).
    checked: AtomicBool,
    /// This contract's own number, never reused: an [`Instantiated`] names
    /// the contract it was made by, and only that one calls it.
    id: u64,
    /// The contract version, e.g. `0.3.0`: of the world
    /// `corral:tool/plugin` and its interface `corral:tool/tool`.
    version: &'static str,
}

impl<P> Contract<P> {
    /// `bindings` of `pre`, whose `corral:tool/tool` interface of
    /// `version` (e.g. `0.3.0`) exports `call`.
    ///
    /// # Errors
    /// When `pre`'s component does not export that interface's `call`.
    fn new(
        bindings: P,
        pre: &InstancePre<SandboxState>,
        version: &'static str,
    ) -> wasmtime::Result<Self> {
        let interface = format!("corral:tool/tool@{version}");
        let component = pre.component();
        let call = component
            .get_export_index(None, &interface)
            .and_then(|tool| component.get_export_index(Some(&tool), "call"))
            .ok_or_else(|| wasmtime::format_err!("the component exports no `{interface}#call`"))?;
        Ok(Self {
            bindings,
            call,
            checked: AtomicBool::new(false),
            id: NEXT_CONTRACT.fetch_add(1, Ordering::Relaxed),
            version,
        })
    }

    /// The error of a component whose exports failed this version's type
    /// check: it names the world and what differs.
    fn other_types(&self, err: &wasmtime::Error) -> wasmtime::Error {
        wasmtime::format_err!(
            "its exports do not have the types of corral:tool/plugin@{} ({err:#}): build it \
             against that version's WIT",
            self.version
        )
    }
}

/// A plugin instance of corral's world, instantiated and never called:
/// what [`PluginPre::instantiate`] makes, ahead of a call
/// ([`prepared`](super::prepared)) or when it arrives. It holds the
/// instance's `call` export (the store holds the instance) and the
/// [`Contract::id`] of the plugin build it was made by.
pub(crate) struct Instantiated {
    call: Func,
    contract: u64,
}

/// A plugin's component, linked and ready to instantiate, in the contract
/// version it targets.
pub enum PluginPre {
    /// `corral:tool/plugin@0.1.0`.
    V1(Contract<v1::PluginPre<SandboxState>>),
    /// `corral:tool/plugin@0.2.0`.
    V2(Contract<v2::PluginPre<SandboxState>>),
    /// `corral:tool/plugin@0.3.0`.
    V3(Contract<v3::PluginPre<SandboxState>>),
    /// A component of another world, served in any-component mode.
    Any(
        InstancePre<SandboxState>,
        std::sync::Arc<crate::sandbox::any::Foreign>,
    ),
    /// Code mode's runner (`corral:code/runner@0.1.0`): it serves no tool
    /// and answers only [`Op::Script`](super::Op::Script).
    Runner(super::code::RunnerPre),
}

/// Instantiates `$contract` (a [`Contract`] of `$version`'s bindings) in
/// `$store`, type-checking its exports on the component's first instance,
/// and returns its `call` export.
macro_rules! instantiate_version {
    ($contract:expr, $version:ident, $store:expr, $span:expr) => {{
        let contract = $contract;
        let instance = contract
            .bindings
            .instance_pre()
            .instantiate_async(&mut *$store)
            .instrument($span)
            .await?;
        if !contract.checked.load(Ordering::Acquire) {
            $version::Plugin::new(&mut *$store, &instance)
                .map_err(|err| contract.other_types(&err))?;
            contract.checked.store(true, Ordering::Release);
        }
        let call = instance
            .get_func(&mut *$store, &contract.call)
            .ok_or_else(|| wasmtime::format_err!("an instance lost its `call` export"))?;
        Instantiated {
            call,
            contract: contract.id,
        }
    }};
}

/// Runs `describe` through `$contract`'s bindings, which type-check every
/// export (the contract is then [`checked`](Contract::checked)).
macro_rules! describe_version {
    ($contract:expr, $version:ident, $store:expr, $spec:ident) => {{
        let contract = $contract;
        let instance = contract
            .bindings
            .instance_pre()
            .instantiate_async(&mut *$store)
            .await?;
        let plugin = $version::Plugin::new(&mut *$store, &instance)
            .map_err(|err| contract.other_types(&err))?;
        contract.checked.store(true, Ordering::Release);
        let specs = plugin
            .corral_tool_tool()
            .call_describe(&mut *$store)
            .await?;
        specs.into_iter().map($spec).collect()
    }};
}

impl PluginPre {
    /// Recognizes the world `pre` targets, newest first.
    ///
    /// # Errors
    /// When it exports no version's `tool` interface: the 0.3.0 error.
    pub fn new(pre: InstancePre<SandboxState>) -> wasmtime::Result<Self> {
        match v3::PluginPre::new(pre.clone()) {
            Ok(v3) => Ok(Self::V3(Contract::new(v3, &pre, "0.3.0")?)),
            Err(err) => match v2::PluginPre::new(pre.clone()) {
                Ok(v2) => Ok(Self::V2(Contract::new(v2, &pre, "0.2.0")?)),
                Err(_) => match v1::PluginPre::new(pre.clone()) {
                    Ok(v1) => Ok(Self::V1(Contract::new(v1, &pre, "0.1.0")?)),
                    Err(_) => Err(err),
                },
            },
        }
    }

    /// The contract version, e.g. `0.2.0`.
    pub fn wit_version(&self) -> &'static str {
        match self {
            Self::V1(c) => c.version,
            Self::V2(c) => c.version,
            Self::V3(c) => c.version,
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
            Self::V1(contract) => {
                describe_version!(contract, v1, store, spec_v1)
            }
            Self::V2(contract) => {
                describe_version!(contract, v2, store, spec_v2)
            }
            Self::V3(contract) => {
                describe_version!(contract, v3, store, spec_v3)
            }
            // Found from its types at load: no guest code runs.
            Self::Any(_, foreign) => foreign.specs(),
            Self::Runner(_) => Vec::new(),
        })
    }

    /// Whether this plugin's exports have passed their type check (a
    /// plugin of corral's world only; tests).
    #[cfg(test)]
    pub(crate) fn type_checked(&self) -> bool {
        match self {
            Self::V1(c) => c.checked.load(Ordering::Acquire),
            Self::V2(c) => c.checked.load(Ordering::Acquire),
            Self::V3(c) => c.checked.load(Ordering::Acquire),
            Self::Any(..) | Self::Runner(_) => false,
        }
    }

    /// Whether an instance can be made ahead of its call
    /// ([`instantiate`](Self::instantiate)): a plugin of corral's world,
    /// whose instantiation depends on nothing of the call. A component of
    /// another world and code mode's runner instantiate inside their own
    /// calls (`any`, `code`), so they always start fresh.
    pub(crate) fn preparable(&self) -> bool {
        matches!(self, Self::V1(_) | Self::V2(_) | Self::V3(_))
    }

    /// Instantiates a plugin of corral's world in `store`, running the
    /// guest's start-up; `None` when the plugin is not
    /// [`preparable`](Self::preparable).
    ///
    /// # Errors
    /// A trap or an exhausted limit in the guest's start-up.
    pub(crate) async fn instantiate(
        &self,
        store: &mut Store<SandboxState>,
    ) -> wasmtime::Result<Option<Instantiated>> {
        let span = instantiate_span();
        Ok(Some(match self {
            Self::V1(contract) => {
                instantiate_version!(contract, v1, store, span)
            }
            Self::V2(contract) => {
                instantiate_version!(contract, v2, store, span)
            }
            Self::V3(contract) => {
                instantiate_version!(contract, v3, store, span)
            }
            Self::Any(..) | Self::Runner(_) => return Ok(None),
        }))
    }

    /// Runs `call` on `ready`, an instance made ahead of the call, or on a
    /// fresh instance when `ready` is `None`.
    /// `output_bytes` is the output cap, which a component of another world
    /// is held to while its result is written as JSON.
    pub(crate) async fn call(
        &self,
        store: &mut Store<SandboxState>,
        ready: Option<Instantiated>,
        name: &str,
        arguments: &str,
        context: &Vec<(String, String)>,
        output_bytes: usize,
    ) -> wasmtime::Result<Result<GuestOutput, GuestError>> {
        if let Self::Any(pre, foreign) = self {
            return foreign
                .call(pre, store, name, arguments, output_bytes)
                .await
                .map(|answer| answer.map(GuestOutput::Text));
        }
        let Instantiated { call, contract } = match ready {
            Some(instance) => instance,
            None => self.instantiate(store).await?.ok_or_else(|| {
                wasmtime::format_err!("code mode's runner serves no tool (asked for `{name}`)")
            })?,
        };
        Ok(match self {
            Self::V1(c) if c.id == contract => {
                call_version!(v1, info_v1, store, call, name, arguments, context)
                    .map(GuestOutput::Text)
            }
            Self::V2(c) if c.id == contract => {
                call_version!(v2, info_v2, store, call, name, arguments, context)
                    .map(GuestOutput::Text)
            }
            Self::V3(c) if c.id == contract => {
                call_version!(v3, info_v3, store, call, name, arguments, context)
                    .map(|parts| GuestOutput::Parts(parts.into_iter().map(part_v3).collect()))
            }
            // An instance made ahead by another plugin build (a caller that
            // paired a slot with the wrong `PluginPre`), or for the runner,
            // which makes none.
            _ => {
                return Err(wasmtime::format_err!(
                    "the instance given to `{name}`'s call was made by another plugin build"
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
    v3::Plugin::add_to_linker::<SandboxState, HasSelf<SandboxState>>(linker, |state| state)?;
    Ok(())
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
host_imports!(v3);
