//! The library's own integration tests: one binary, one module per topic,
//! that use only `corral` (and the shared test helpers), so that
//! `cargo test -p corral` tests the library without building the `corral`
//! binary or the MCP server. It is the `library` test of the `corral`
//! crate. A test that runs the binary, serves MCP or compares a library path
//! with those belongs in `tests/all` (the `all` test of `corral-cli`). The
//! guests are built once by `corral-test-support`'s build script and named
//! by the constants in [`support`].

// A panic is how a test fails; `unwrap_err` reads better than `expect_err`.
#![allow(clippy::unwrap_used)]

mod capabilities;
mod code;
mod code_hostile;
mod code_journal;
mod code_tokens;
mod context;
mod evidence;
mod file_attempts;
mod file_caps;
mod host_api;
mod keyless;
mod pipelines;
mod policies;
mod prepared;
mod quotas;
mod replay;
mod resilience;
mod samples;
mod search;
mod update_gate;
/// The shared helpers (the `corral-test-support` crate).
mod support {
    pub use corral_test_support::*;
}
