//! The hostile fixture under a policy of resilience settings, as the
//! resilience-state tests use it through the library (`tests/library`) and
//! over MCP (`tests/all/resilience/state_mcp.rs`).

use std::path::Path;

use crate::{HOSTILE, guest};

/// Writes `prefix.wasm` (the hostile fixture) with a policy holding `table`.
pub fn plugin(dir: &Path, prefix: &str, table: &str) {
    let wasm = dir.join(format!("{prefix}.wasm"));
    if !wasm.exists() {
        std::fs::copy(guest(HOSTILE), wasm).expect("copy");
    }
    std::fs::write(
        dir.join(format!("{prefix}.policy.toml")),
        format!("version = 1\n[presentation]\nprefix = \"{prefix}_\"\n\n{table}\n"),
    )
    .expect("policy");
}

/// `echo` may run once a minute (a second call is refused).
pub const ONE_A_MINUTE: &str = "[resilience.tools.echo]\n\
    rate_limit = { requests = 1, per = \"minute\", throw_on_limit = true }";
/// `echo` may run a thousand times a second.
pub const MANY_A_SECOND: &str = "[resilience.tools.echo]\n\
    rate_limit = { requests = 1000, per = \"second\", throw_on_limit = true }";
