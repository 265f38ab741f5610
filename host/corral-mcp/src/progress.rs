//! Coalesced progress notifications of one `tools/call`: a guest may call
//! `progress` a million times; the client gets at most one
//! `notifications/progress` per [`PROGRESS_INTERVAL`](crate::PROGRESS_INTERVAL),
//! each carrying the latest message and, as `progress`, how many messages the
//! guest had sent by then, plus the last one once the call has ended.

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::PROGRESS_INTERVAL;

/// Forwards what the call's sink writes to `latest` until the sink is
/// dropped (the call ended), then sends the last message if it was not sent.
pub(crate) async fn forward(
    mut latest: watch::Receiver<(u64, String)>,
    peer: Peer<RoleServer>,
    token: ProgressToken,
) {
    let mut sent = 0u64;
    let mut last_sent: Option<Instant> = None;
    let mut open = true;
    while open {
        // Wait for a new message, or the end of the call.
        open = latest.changed().await.is_ok();
        // Then hold off until the interval since the last notification has
        // passed, unless the call ends first (new messages just replace the
        // one waiting).
        if let (true, Some(at)) = (open, last_sent) {
            let until = at + PROGRESS_INTERVAL;
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(until) => break,
                    changed = latest.changed() => if changed.is_err() {
                        open = false;
                        break;
                    },
                }
            }
        }
        let (count, message) = latest.borrow_and_update().clone();
        if count > sent {
            sent = count;
            last_sent = Some(Instant::now());
            let param =
                ProgressNotificationParam::new(token.clone(), count as f64).with_message(message);
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    }
}
