//! corral's integration tests: one binary, one module per topic. The guests they
//! load are built once by `tests/build.rs` and named by the constants in
//! [`support`].

// A panic is how a test fails; `unwrap_err` reads better than `expect_err`.
#![allow(clippy::unwrap_used)]

mod approvals;
mod capabilities;
mod cli;
mod context;
mod host_api;
mod hostile;
mod languages;
mod loading;
mod mcp;
mod pipelines;
mod plans;
mod policies;
mod reload;
mod samples;
mod support;
