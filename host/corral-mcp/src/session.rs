//! The `notifications/tools/list_changed` listener of one MCP session, which
//! lives exactly as long as the session.
//!
//! After a client's `notifications/initialized`, a task watches the host's
//! catalog generation ([`Host::subscribe`]) and health
//! ([`Host::subscribe_health`]) and tells the client when either changes.
//! That task must end when the session ends, not at the next reload: a
//! listener that outlived its session kept the session's peer (its outgoing
//! channel) and two watch receivers alive, so a streamable HTTP server that
//! saw many sessions and no reload grew without bound (found by the
//! `mcp_messages` fuzz target, issue 29). Two rules:
//! - The listener stops when the last clone of the session's
//!   [`McpServer`](crate::McpServer) is dropped (rmcp drops the service when
//!   the session's transport closes and its handlers finish).
//! - A session has at most one listener: a client that repeats
//!   `notifications/initialized` replaces it rather than adding one per
//!   notification.
//!
//! [`RuntimeStats::change_subscribers`](corral::RuntimeStats) counts the
//! listeners alive, so an operator sees them go with their sessions.

use std::sync::{Arc, Mutex};

use corral::Host;
use rmcp::RoleServer;
use rmcp::service::Peer;
use tokio_util::sync::CancellationToken;

/// One session's listener slot. Cheap to clone; clones share the slot, and
/// dropping the last clone stops the listener.
#[derive(Clone, Debug, Default)]
pub(crate) struct Listener {
    inner: Arc<Slot>,
}

#[derive(Debug, Default)]
struct Slot {
    /// Cancelled when the session's last server clone goes.
    ended: CancellationToken,
    /// The running listener's own token (a child of `ended`).
    current: Mutex<Option<CancellationToken>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.ended.cancel();
    }
}

impl Listener {
    /// Starts telling `peer` about tool-set and health changes of `host`,
    /// stopping the listener this session had before, if any. Call it inside
    /// a tokio runtime.
    pub(crate) fn start(&self, host: &Host, peer: Peer<RoleServer>) {
        let stop = self.inner.ended.child_token();
        let previous = self
            .inner
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(stop.clone());
        if let Some(previous) = previous {
            previous.cancel();
        }
        let mut changes = host.subscribe();
        let mut health = host.subscribe_health();
        changes.borrow_and_update();
        health.borrow_and_update();
        tokio::spawn(async move {
            loop {
                let changed = tokio::select! {
                    () = stop.cancelled() => false,
                    r = changes.changed() => r.is_ok(),
                    r = health.changed() => r.is_ok(),
                };
                if !changed || peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

    use crate::McpServer;

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    const PING: &str = r#"{"jsonrpc":"2.0","id":"end","method":"ping"}"#;

    async fn host() -> corral::Host {
        corral::Host::builder()
            .cache(corral::ComponentCache::disabled())
            .pool(corral::PoolConfig::default().with_max_concurrent_instances(2))
            .build()
            .await
            .expect("a host without plugins builds")
    }

    /// Runs one session over an in-memory stream: `initialize`, then
    /// `initialized` `times` times, then a `ping`. Returns once the ping is
    /// answered, with the session still open: the client's write half
    /// (shutting it down ends the session) and the task serving the session.
    async fn session(
        server: &McpServer,
        times: usize,
    ) -> (
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
        tokio::task::JoinHandle<()>,
    ) {
        let (client, server_io) = tokio::io::duplex(1 << 16);
        let session = server.for_session();
        let served = tokio::spawn(async move {
            let running = rmcp::serve_server(session, tokio::io::split(server_io))
                .await
                .expect("the session initializes");
            let _ = running.waiting().await;
        });
        let (read, mut write) = tokio::io::split(client);
        let mut input = format!("{INITIALIZE}\n");
        for _ in 0..times {
            input.push_str(INITIALIZED);
            input.push('\n');
        }
        input.push_str(PING);
        input.push('\n');
        write.write_all(input.as_bytes()).await.expect("written");
        let mut lines = BufReader::new(read).lines();
        loop {
            let line = lines.next_line().await.expect("read").expect("a line");
            if line.contains(r#""id":"end""#) {
                break;
            }
        }
        // Keep reading (and drop what comes) so the server never blocks.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        (write, served)
    }

    /// Waits, up to 10 s, until `host` has `want` change subscribers.
    async fn subscribers_settle(host: &corral::Host, want: usize) -> usize {
        let settled = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let now = host.runtime_stats().change_subscribers;
                if now == want {
                    return now;
                }
                tokio::task::yield_now().await;
            }
        })
        .await;
        settled.unwrap_or_else(|_| host.runtime_stats().change_subscribers)
    }

    #[tokio::test]
    async fn a_sessions_listener_ends_with_the_session() {
        let host = host().await;
        let server = McpServer::new(host.clone());
        let before = host.runtime_stats().change_subscribers;
        let mut open = Vec::new();
        for _ in 0..3 {
            open.push(session(&server, 1).await);
        }
        assert_eq!(subscribers_settle(&host, before + 3).await, before + 3);
        for (mut write, served) in open {
            write.shutdown().await.expect("closed");
            served.await.expect("the session ends");
        }
        assert_eq!(
            subscribers_settle(&host, before).await,
            before,
            "a closed session's list_changed listener is still alive"
        );
    }

    #[tokio::test]
    async fn a_repeated_initialized_keeps_one_listener() {
        let host = host().await;
        let server = McpServer::new(host.clone());
        let before = host.runtime_stats().change_subscribers;
        let (mut write, served) = session(&server, 50).await;
        assert_eq!(subscribers_settle(&host, before + 1).await, before + 1);
        write.shutdown().await.expect("closed");
        served.await.expect("the session ends");
        assert_eq!(subscribers_settle(&host, before).await, before);
    }
}
