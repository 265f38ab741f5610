//! corral's end-to-end integration tests: one binary, one module per topic,
//! covering the `corral` binary (`CARGO_BIN_EXE_corral`), the MCP server,
//! the distribution client, and the library where a topic drives it beside
//! those. It is the `all` test of the `corral-cli` crate, as wasmtime's tests
//! are its CLI's. Tests that need only the library are the `corral` crate's
//! own (`tests/library`). The guests they load are built once by
//! `corral-test-support`'s build script and named by the constants in
//! [`support`].

// A panic is how a test fails; `unwrap_err` reads better than `expect_err`.
#![allow(clippy::unwrap_used)]

mod approvals;
mod architecture;
mod bundles;
mod campaigns;
mod cli;
mod code;
mod disclosure;
mod discovery;
mod distribution;
mod evidence;
mod foreign;
mod fuzz_seeds;
mod hostile;
mod keyring;
mod languages;
mod limits;
mod loading;
mod mcp;
mod names;
mod parts;
mod plans;
mod reload;
mod replay;
mod resilience;
mod scaffold;
mod secrets;
mod security;
mod signatures;
mod startup;
mod watcher;
/// The shared helpers (the `corral-test-support` crate).
mod support {
    pub use corral_test_support::*;
}
