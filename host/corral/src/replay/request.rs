//! A caller's request to record its call (`CallOptions::record`): kept
//! apart from the recording itself so that the call options depend on
//! nothing of it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A caller's request to record its call: every sandboxed run of it (a
/// plan's, a pipeline's or a script's steps each make one recording),
/// written into the host's recordings directory before the call returns.
/// Shared by the call's steps; read the paths once the call is over.
#[derive(Debug, Default)]
pub struct RecordRequest {
    /// 16 random hex digits: every recording of the call names it
    /// ([`Header::parent`](super::Header::parent)), with its run's position.
    id: String,
    runs: std::sync::atomic::AtomicU32,
    pub(super) written: Mutex<Vec<PathBuf>>,
    pub(super) failed: Mutex<Vec<String>>,
}

impl RecordRequest {
    /// A new request, to put on [`CallOptions::record`](crate::CallOptions).
    pub fn new() -> Arc<Self> {
        let mut id = [0u8; 8];
        let _ = getrandom::fill(&mut id);
        Arc::new(Self {
            id: hex::encode(id),
            ..Self::default()
        })
    }

    /// The call's id, and the next run's position in it, from 0.
    pub(crate) fn next_run(&self) -> (String, u32) {
        let run = self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (self.id.clone(), run)
    }

    /// The recordings written so far, in the order the runs ended.
    pub fn written(&self) -> Vec<PathBuf> {
        lock(&self.written).clone()
    }

    /// Why recordings could not be written (no recordings directory, a
    /// write error), one line each.
    pub fn failed(&self) -> Vec<String> {
        lock(&self.failed).clone()
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
