//! corral's integration tests: one binary, one module per topic. The guests they
//! load are built once by `tests/build.rs` and named by the constants in
//! [`support`].

mod cli;
mod hostile;
mod host_api;
mod loading;
mod samples;
mod support;
