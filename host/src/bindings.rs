//! Host-side bindings generated from the tool contract in `wit/corral-tool.wit`
//! (world `corral:tool/plugin@0.1.0`). Every import and export is async so that a
//! call can be stopped by a wall-clock timeout while it waits in a host function.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "corral:tool/plugin@0.1.0",
    imports: { default: async },
    exports: { default: async },
});
