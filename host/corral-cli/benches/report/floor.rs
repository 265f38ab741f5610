//! The bare-wasmtime floor a call's figure is measured against: a fresh
//! store and instance from one `InstancePre` on corral's own engine (the
//! default pool), the guest's `call` export invoked dynamically, the store
//! dropped. No validation, limits, WASI grants or bookkeeping: the least any
//! sandboxed call of that component can cost.

use std::path::Path;

use wasmtime::component::{
    Component, ComponentExportIndex, InstancePre, Linker, ResourceTable, Val,
};
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

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

/// One component ready to instantiate, with its `call` export's index.
pub struct Floor {
    engine: wasmtime::Engine,
    pre: InstancePre<FloorState>,
    call: ComponentExportIndex,
}

impl Floor {
    /// Compiles `file` on `engine`; corral's host imports become traps.
    pub fn new(engine: &corral::Engine, file: &Path) -> Self {
        let component = Component::from_file(engine.wasmtime(), file).expect("component");
        let mut linker: Linker<FloorState> = Linker::new(engine.wasmtime());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
        linker
            .define_unknown_imports_as_traps(&component)
            .expect("stub the corral:tool/host imports");
        let pre = linker.instantiate_pre(&component).expect("pre");
        let interface = ["corral:tool/tool@0.2.0", "corral:tool/tool@0.1.0"]
            .iter()
            .find_map(|name| component.get_export_index(None, name))
            .expect("a corral:tool/tool export");
        let call = component
            .get_export_index(Some(&interface), "call")
            .expect("call export");
        Self {
            engine: engine.wasmtime().clone(),
            pre,
            call,
        }
    }

    /// A fresh store and instance, one dynamic call of `tool` with
    /// `arguments`, then dropped. Returns the call's `ok` text.
    pub async fn call(&self, tool: &str, arguments: &str) -> String {
        let mut store = self.store();
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .expect("instantiate");
        let func = instance.get_func(&mut store, self.call).expect("func");
        let params = [
            Val::String(tool.into()),
            Val::String(arguments.into()),
            Val::List(Vec::new()),
        ];
        let mut results = [Val::Bool(false)];
        func.call_async(&mut store, &params, &mut results)
            .await
            .expect("call");
        match results {
            [Val::Result(Ok(Some(out)))] => match *out {
                Val::String(text) => text,
                other => panic!("the floor call of {tool} returned {other:?}"),
            },
            other => panic!("the floor call of {tool} failed: {other:?}"),
        }
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
