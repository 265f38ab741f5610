//! The bare-wasmtime floor the call benches measure against (`call` in
//! `corral`, `report` in `corral-cli`): a fresh store and instance from one
//! `InstancePre` on an engine of corral's (the caller's pool), the guest's
//! `call` export invoked through the same typed bindings the sandbox uses
//! (`bindgen!` of `wit/corral-tool.wit`), the store dropped. No validation, limits, WASI grants or bookkeeping: the
//! least any sandboxed call of that component can cost.

use std::path::Path;

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// `corral:tool/plugin@0.2.0`, as the host binds it (`host/corral/src/bindings.rs`).
#[allow(missing_docs)]
mod v2 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "corral:tool/plugin@0.2.0",
        imports: { default: async },
        exports: { default: async },
    });
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
    pre: v2::PluginPre<FloorState>,
}

impl Floor {
    /// Compiles `file` (a `corral:tool/plugin@0.2.0` component) on `engine`;
    /// corral's host imports become traps.
    pub fn new(engine: &corral::Engine, file: &Path) -> Self {
        let component = Component::from_file(engine.wasmtime(), file).expect("component");
        let mut linker: Linker<FloorState> = Linker::new(engine.wasmtime());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
        linker
            .define_unknown_imports_as_traps(&component)
            .expect("stub the corral:tool/host imports");
        let pre = linker.instantiate_pre(&component).expect("pre");
        Self {
            engine: engine.wasmtime().clone(),
            pre: v2::PluginPre::new(pre).expect("a corral:tool/plugin@0.2.0 component"),
        }
    }

    /// A fresh store and instance, one typed call of `tool` with
    /// `arguments`, then dropped. Returns the call's `ok` text.
    pub async fn call(&self, tool: &str, arguments: &str) -> String {
        let mut store = self.store();
        let plugin = self
            .pre
            .instantiate_async(&mut store)
            .await
            .expect("instantiate");
        plugin
            .corral_tool_tool()
            .call_call(&mut store, tool, arguments, &Vec::new())
            .await
            .expect("call")
            .unwrap_or_else(|err| panic!("the floor call of {tool} failed: {err:?}"))
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
