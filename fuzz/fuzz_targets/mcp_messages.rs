//! Fuzzes the MCP server with arbitrary JSON-RPC text, in process: each
//! input is one session over an in-memory stream (rmcp's transport, as
//! `corral serve` uses on stdio), to a host with no plugins (the built-in
//! `execute_tool_plan` and `tool_search` are there to be called).
//!
//! Run: `scripts/fuzz.sh mcp_messages`. The session sends `initialize`,
//! `notifications/initialized`, the input's lines, then a `ping`.
//! Invariants: the server never panics; every line it writes is a JSON-RPC
//! 2.0 object; it still answers the closing `ping` within 10 s, whatever
//! came before (bad input costs that input, never the session); and the
//! session ends within 10 s once the client hangs up. Memory
//! stays under libFuzzer's RSS limit across runs, so a session that leaves
//! state behind shows: the first full run stopped at 182 k sessions, each of
//! which had left its `list_changed` listener alive (fixed in
//! `corral-mcp/src/session.rs`).
//!
//! The body, with the invariants, is `fuzz/invariants/mcp_messages.rs`,
//! which the seed replay on stable (`tests/all/fuzz_seeds.rs`) runs over
//! every file in `fuzz/seeds/mcp_messages/`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../invariants/mcp_messages.rs"]
mod invariants;

fuzz_target!(|data: &[u8]| invariants::check(data));
