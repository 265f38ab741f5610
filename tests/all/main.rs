//! corral's integration tests: one binary, one module per topic, covering the
//! library, the `corral` binary (`CARGO_BIN_EXE_corral`) and the MCP server.
//! It is the `all` test of the `corral-cli` crate, as wasmtime's tests are its
//! CLI's. The guests they load are built once by `corral-test-support`'s build
//! script and named by the constants in [`support`].

// A panic is how a test fails; `unwrap_err` reads better than `expect_err`.
#![allow(clippy::unwrap_used)]

mod approvals;
mod architecture;
mod bundles;
mod campaigns;
mod capabilities;
mod cli;
mod context;
mod disclosure;
mod discovery;
mod distribution;
mod file_caps;
mod foreign;
mod fuzz_seeds;
mod host_api;
mod hostile;
mod keyless;
mod keyring;
mod languages;
mod limits;
mod loading;
mod mcp;
mod names;
mod pipelines;
mod plans;
mod policies;
mod reload;
mod resilience;
mod samples;
mod scaffold;
mod search;
mod secrets;
mod security;
mod signatures;
mod startup;
mod watcher;
/// The shared helpers (the `corral-test-support` crate).
mod support {
    pub use corral_test_support::*;
}
