//! The `mcp_messages` fuzz target's body: the MCP server fed arbitrary
//! JSON-RPC text, in process. Each input is one session over an in-memory
//! stream (rmcp's transport, as `corral serve` uses on stdio), to a host
//! with no plugins (the built-in `execute_tool_plan` and `tool_search` are
//! there to be called). Included with `#[path]` by the fuzz target
//! (`fuzz/fuzz_targets/mcp_messages.rs`) and by the seed replay on stable
//! (`tests/all/fuzz_seeds.rs`), so both check the same thing.
//!
//! The session sends `initialize`, `notifications/initialized`, the input's
//! lines, then a `ping`. Invariants: the server never panics; every line it
//! writes is a JSON-RPC 2.0 object; it still answers the closing `ping`
//! within 10 s, whatever came before (bad input costs that input, never the
//! session); and the session ends within 10 s once the client hangs up.

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// The runtime and server every input shares (an engine reserves its pool
/// once per process).
struct World {
    runtime: tokio::runtime::Runtime,
    server: corral_mcp::McpServer,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let host = runtime
            .block_on(
                corral::Host::builder()
                    .cache(corral::ComponentCache::disabled())
                    .pool(corral::PoolConfig::default().with_max_concurrent_instances(4))
                    .build(),
            )
            .expect("a host without plugins builds");
        World {
            server: corral_mcp::McpServer::new(host),
            runtime,
        }
    })
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"fuzz-init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":"fuzz-end","method":"ping"}"#;

/// One input, one session; panics when an invariant breaks.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let world = world();
    world.runtime.block_on(async {
        let (client, server_io) = tokio::io::duplex(1 << 16);
        let session = world.server.for_session();
        let served = tokio::spawn(async move {
            if let Ok(running) = rmcp::serve_server(session, tokio::io::split(server_io)).await {
                let _ = running.waiting().await;
            }
        });
        let (read, mut write) = tokio::io::split(client);
        let mut input = format!("{INITIALIZE}\n{INITIALIZED}\n");
        for line in text.lines() {
            input.push_str(line);
            input.push('\n');
        }
        input.push_str(PING);
        input.push('\n');
        // Write while reading, so a full pipe cannot stall either side.
        let writer = tokio::spawn(async move {
            let _ = write.write_all(input.as_bytes()).await;
            write
        });
        let mut lines = BufReader::new(read).lines();
        let answered = tokio::time::timeout(Duration::from_secs(10), async {
            while let Ok(Some(line)) = lines.next_line().await {
                let message: Value = serde_json::from_str(&line).unwrap_or_else(|err| {
                    panic!("the server wrote a line that is not JSON ({err}): {line}")
                });
                assert_eq!(message["jsonrpc"], "2.0", "{line}");
                if message["id"] == "fuzz-end" && message.get("method").is_none() {
                    return true;
                }
            }
            false
        })
        .await;
        assert!(
            matches!(answered, Ok(true)),
            "the server stopped answering: {answered:?}"
        );
        // The client hangs up; the session must end, and nothing of this
        // input may outlive it (libFuzzer's leak check at exit found a
        // pipe buffer of a session that was aborted rather than ended).
        drop(writer.await);
        drop(lines);
        let ended = tokio::time::timeout(Duration::from_secs(10), served).await;
        assert!(
            matches!(ended, Ok(Ok(()))),
            "the session did not end when its client hung up: {ended:?}"
        );
    });
}
