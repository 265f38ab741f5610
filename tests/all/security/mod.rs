//! The hostile review's findings, one test each (`SECURITY.md` lists every
//! hostile class with the test that proves it): load-time attacks
//! ([`load`]), attacks during a call ([`runtime`]) and server-side request
//! forgery through an allowed name ([`ssrf`]).

mod load;
mod runtime;
mod ssrf;

use corral::CallOptions;
use tokio::sync::mpsc::UnboundedReceiver;

/// Options whose progress sink says when the guest runs: the receiver gets
/// one message per progress report (the hostile fixture's `sleep` reports
/// before it sleeps). Tests wait on it instead of on a timer.
fn running() -> (CallOptions, UnboundedReceiver<()>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions::default().with_progress(std::sync::Arc::new(move |_, _| {
        let _ = tx.send(());
    }));
    (options, rx)
}
