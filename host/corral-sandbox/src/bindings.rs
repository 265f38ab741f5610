//! Host-side bindings generated from the tool contract, one module per
//! version the host speaks: [`v3`] from `wit/corral-tool.wit`
//! (`corral:tool/plugin@0.3.0`), [`v2`] from `wit/v0.2.0/corral-tool.wit`
//! (`corral:tool/plugin@0.2.0`) and [`v1`] from `wit/v0.1.0/corral-tool.wit`
//! (`corral:tool/plugin@0.1.0`). A plugin targets one of them; the loader
//! tries the newest first. Every import and export is async so that a call can be
//! stopped by a wall-clock timeout while it waits in a host function.

#![allow(missing_docs)]

/// `corral:tool/plugin@0.1.0`.
pub(crate) mod v1 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.1.0",
        world: "corral:tool/plugin@0.1.0",
        imports: { default: async },
        exports: { default: async },
    });
}

/// `corral:tool/plugin@0.2.0`.
pub(crate) mod v2 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2.0",
        world: "corral:tool/plugin@0.2.0",
        imports: { default: async },
        exports: { default: async },
    });
}

/// `corral:tool/plugin@0.3.0`.
pub(crate) mod v3 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "corral:tool/plugin@0.3.0",
        // A client request can stop the guest where it asks (a trap), when
        // the answer comes only with a retry of the whole call.
        imports: { "corral:tool/client": async | trappable, default: async },
        exports: { default: async },
    });
}
