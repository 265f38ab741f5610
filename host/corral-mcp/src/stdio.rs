//! MCP over stdio: what desktop clients spawn.

use crate::McpServer;

/// Why serving over stdio stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The MCP session never started (the client sent no valid `initialize`
    /// or closed the stream first).
    #[error("the MCP session over stdio did not start: {0}")]
    Start(String),
    /// The session's task ended abnormally.
    #[error("the MCP session over stdio ended abnormally: {0}")]
    Session(String),
}

/// Serves `server` on stdin/stdout until the client closes the stream. Logs
/// must go to stderr: stdout is the protocol.
///
/// # Errors
/// [`ServeError`] when the transport fails to start or ends with an error.
pub async fn serve_stdio(server: McpServer) -> Result<(), ServeError> {
    // When stdin and stdout are pipes (how MCP clients spawn servers), rmcp
    // reopens them non-blocking on the IO reactor; otherwise (a terminal, a
    // file) it uses tokio's blocking handles. The pipes save two hand-offs to
    // the blocking thread pool per message (BENCHMARKS.md, the report).
    let running = rmcp::serve_server(server, rmcp::transport::io::stdio_pipes())
        .await
        .map_err(|err| ServeError::Start(err.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|err| ServeError::Session(err.to_string()))?;
    Ok(())
}
