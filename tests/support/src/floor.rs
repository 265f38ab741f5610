//! The bare-wasmtime floor the call benches measure against (`call` in
//! `corral`, `report` in `corral-cli`): a fresh store and instance from one
//! `InstancePre` on an engine of corral's (the caller's pool), the guest's
//! `call` export invoked through the same typed bindings the sandbox uses
//! (`bindgen!` of `wit/corral-tool.wit`, `wit/v0.2.0` or `wit/v0.1.0`), the store
//! dropped. corral's host imports do nothing (a log line is dropped, an
//! approval continues). No validation, limits, WASI grants or bookkeeping:
//! the least any sandboxed call of that component can cost.

use std::path::Path;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// `corral:tool/plugin@0.1.0`, as the host binds it (`host/corral-sandbox/src/bindings.rs`).
#[allow(missing_docs)]
mod v1 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.1.0",
        world: "corral:tool/plugin@0.1.0",
        imports: { default: async },
        exports: { default: async },
    });
}

/// `corral:tool/plugin@0.2.0`, as the host binds it.
#[allow(missing_docs)]
mod v2 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2.0",
        world: "corral:tool/plugin@0.2.0",
        imports: { default: async },
        exports: { default: async },
    });
}

/// `corral:tool/plugin@0.3.0`, as the host binds it.
#[allow(missing_docs)]
mod v3 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "corral:tool/plugin@0.3.0",
        imports: { default: async },
        exports: { default: async },
    });
}

/// 0.3.0's client requests, answered as no client can.
impl v3::corral::tool::client::Host for FloorState {
    async fn elicit(
        &mut self,
        _: String,
        _: String,
    ) -> Result<v3::corral::tool::client::ElicitAnswer, v3::corral::tool::client::ClientError> {
        Err(v3::corral::tool::client::ClientError::Unsupported(
            String::new(),
        ))
    }

    async fn sample(
        &mut self,
        _: Vec<v3::corral::tool::client::SamplingMessage>,
        _: Option<v3::corral::tool::client::ModelPreferences>,
        _: u32,
    ) -> Result<v3::corral::tool::client::Sampled, v3::corral::tool::client::ClientError> {
        Err(v3::corral::tool::client::ClientError::Unsupported(
            String::new(),
        ))
    }

    async fn roots(
        &mut self,
    ) -> Result<Vec<v3::corral::tool::client::Root>, v3::corral::tool::client::ClientError> {
        Err(v3::corral::tool::client::ClientError::Unsupported(
            String::new(),
        ))
    }

    async fn ask(
        &mut self,
        requests: Vec<v3::corral::tool::client::InputRequest>,
    ) -> Vec<Result<v3::corral::tool::client::Answer, v3::corral::tool::client::ClientError>> {
        requests
            .iter()
            .map(|_| {
                Err(v3::corral::tool::client::ClientError::Unsupported(
                    String::new(),
                ))
            })
            .collect()
    }
}

/// The text of a 0.3.0 output: its structured part, else its text parts.
fn text_v3(parts: Vec<v3::corral::tool::types::Part>) -> String {
    use v3::corral::tool::types::Content;
    let mut texts = Vec::new();
    for part in parts {
        match part.content {
            Content::Json(json) => return json,
            Content::Text(text) => texts.push(text),
            _ => {}
        }
    }
    texts.join("\n")
}

/// corral's host imports, doing nothing, for each contract version.
macro_rules! idle_host {
    ($version:ident) => {
        impl $version::corral::tool::host::Host for FloorState {
            async fn log(&mut self, _: $version::corral::tool::types::LogLevel, _: String) {}

            async fn progress(&mut self, _: String) {}

            async fn request_approval(
                &mut self,
                _: String,
            ) -> $version::corral::tool::types::ApprovalDecision {
                $version::corral::tool::types::ApprovalDecision::Continue
            }
        }

        impl $version::corral::tool::types::Host for FloorState {}
    };
}

idle_host!(v1);
idle_host!(v2);
idle_host!(v3);

/// The component's contract version, ready to instantiate.
enum Pre {
    V1(v1::PluginPre<FloorState>),
    V2(v2::PluginPre<FloorState>),
    V3(v3::PluginPre<FloorState>),
}

/// A store's data: WASI with nothing granted, and no limits.
pub struct FloorState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl WasiView for FloorState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// One component ready to instantiate.
pub struct Floor {
    engine: wasmtime::Engine,
    pre: Pre,
}

impl Floor {
    /// Compiles `file` (a `corral:tool/plugin` component of 0.3.0, 0.2.0 or 0.1.0)
    /// on `engine`, through the cache the tests share ([`crate::cache`]):
    /// the floor is a per-call figure, and a Python or JavaScript guest
    /// takes seconds to compile in a debug build, which the tests have
    /// usually spent already.
    pub fn new(engine: &corral::Engine, file: &Path) -> Self {
        use sha2::Digest;
        let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let sha256 = hex::encode(sha2::Sha256::digest(&bytes));
        let (component, _) = crate::cache()
            .load_or_compile(engine, &bytes, &sha256)
            .expect("component");
        let pre = |add: fn(&mut Linker<FloorState>)| {
            let mut linker: Linker<FloorState> = Linker::new(engine.wasmtime());
            wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
            add(&mut linker);
            linker.instantiate_pre(&component)
        };
        let v3 = pre(|linker| {
            v3::Plugin::add_to_linker::<_, wasmtime::component::HasSelf<_>>(linker, |s| s)
                .expect("corral:tool/host@0.3.0");
        });
        let v2 = || {
            pre(|linker| {
                v2::Plugin::add_to_linker::<_, wasmtime::component::HasSelf<_>>(linker, |s| s)
                    .expect("corral:tool/host@0.2.0");
            })
        };
        let pre = if let Ok(Ok(pre)) = v3.map(v3::PluginPre::new) {
            Pre::V3(pre)
        } else if let Ok(Ok(pre)) = v2().map(v2::PluginPre::new) {
            Pre::V2(pre)
        } else {
            let pre = pre(|linker| {
                v1::Plugin::add_to_linker::<_, wasmtime::component::HasSelf<_>>(linker, |s| s)
                    .expect("corral:tool/host@0.1.0");
            })
            .expect("a corral:tool/plugin component of 0.3.0, 0.2.0 or 0.1.0");
            Pre::V1(v1::PluginPre::new(pre).expect("a corral:tool/plugin@0.1.0 component"))
        };
        Self {
            engine: engine.wasmtime().clone(),
            pre,
        }
    }

    /// A fresh store and instance, one typed call of `tool` with
    /// `arguments`, then dropped. Returns the call's `ok` text.
    pub async fn call(&self, tool: &str, arguments: &str) -> String {
        self.phases(tool, arguments).await.0
    }

    /// As [`Floor::call`], timing its phases: returns the `ok` text and the
    /// nanoseconds of (store and instantiation, the typed call, dropping the
    /// store).
    pub async fn phases(&self, tool: &str, arguments: &str) -> (String, [u64; 3]) {
        let start = std::time::Instant::now();
        let mut store = self.store();
        fn failed<T>(tool: &str, err: &dyn std::fmt::Debug) -> T {
            panic!("the floor call of {tool} failed: {err:?}")
        }
        // The contract versions' bindings are different types with the
        // same shape: one body for all.
        macro_rules! timed_call {
            ($pre:expr) => {{
                let plugin = $pre
                    .instantiate_async(&mut store)
                    .await
                    .expect("instantiate");
                let instantiated = start.elapsed();
                let text = plugin
                    .corral_tool_tool()
                    .call_call(&mut store, tool, arguments, &Vec::new())
                    .await
                    .expect("call")
                    .unwrap_or_else(|err| failed(tool, &err));
                (text, instantiated, start.elapsed())
            }};
        }
        let (text, instantiated, called) = match &self.pre {
            Pre::V1(pre) => timed_call!(pre),
            Pre::V2(pre) => timed_call!(pre),
            Pre::V3(pre) => {
                let (parts, instantiated, called) = timed_call!(pre);
                (text_v3(parts), instantiated, called)
            }
        };
        drop(store);
        let nanos = |d: std::time::Duration| d.as_nanos() as u64;
        let total = nanos(start.elapsed());
        let phases = [
            nanos(instantiated),
            nanos(called - instantiated),
            total - nanos(called),
        ];
        (text, phases)
    }

    fn store(&self) -> Store<FloorState> {
        let state = FloorState {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new().build(),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_fuel(u64::MAX).expect("fuel");
        store.set_epoch_deadline(u64::MAX / 2);
        store
    }
}
