//! `subscriptions/listen` (MCP 2026-07-28, SEP-2575): how a client without
//! a session receives notifications. A listen request stays open; rmcp
//! sends `notifications/subscriptions/acknowledged` first (with the accepted
//! filter) and tags every notification with the request's
//! `subscriptionId`; this module decides what is accepted and what is sent.
//!
//! Accepted, of what the client asks for: `toolsListChanged`, sent whenever
//! the served tool set changes (hot reload, a plugin compiled in the
//! background at a cold start) or a tool's health changes (its description
//! and `_meta` change), as session clients get it (`session.rs`). Nothing
//! else: corral declares no `prompts`, its resource list never changes, and
//! it declares no resource `subscribe` (so a request for resource updates is
//! acknowledged without them). The stream ends when the client cancels it or
//! goes away, and its watchers go with it
//! ([`RuntimeStats::change_subscribers`](corral::RuntimeStats) counts them).

use rmcp::ErrorData as McpError;
use rmcp::model::{ServerNotification, SubscriptionFilter, ToolListChangedNotification};
use rmcp::service::SubscriptionContext;

use corral::Host;

/// The part of `requested` corral serves: tool-list changes.
pub(crate) fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::new();
    if requested.tools_list_changed == Some(true) {
        filter.tools_list_changed = Some(true);
    }
    filter
}

/// Runs one listen stream of `host` until the client ends it.
///
/// # Errors
/// None in practice: a stream whose transport is gone ends quietly.
pub(crate) async fn run(host: &Host, context: SubscriptionContext) -> Result<(), McpError> {
    if context.accepted().tools_list_changed != Some(true) {
        // Nothing to send: hold the stream open until the client ends it.
        context.cancelled().await;
        return Ok(());
    }
    let mut changes = host.subscribe();
    let mut health = host.subscribe_health();
    changes.borrow_and_update();
    health.borrow_and_update();
    loop {
        let changed = tokio::select! {
            () = context.cancelled() => return Ok(()),
            r = changes.changed() => r.is_ok(),
            r = health.changed() => r.is_ok(),
        };
        let notification =
            ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default());
        // The host gone (its senders dropped), or the stream closed under
        // us (the client went away): nothing more to say.
        if !changed || context.sink().send(notification).await.is_err() {
            return Ok(());
        }
    }
}
