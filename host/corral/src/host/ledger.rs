//! The builder's accounting settings ([`Accounting`]: tenant quotas, the
//! shared store, the evidence directory, learning runs; set through the
//! knobs in `accounting.rs`) and what they start when the host is built:
//! the quota state, the evidence book and its periodic flush.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::evidence::EvidenceBook;

/// How often a host with an evidence directory writes what it recorded:
/// every 30 s (and on [`Host::flush_evidence`](crate::Host::flush_evidence)).
pub const EVIDENCE_FLUSH: Duration = Duration::from_secs(30);

/// The builder's accounting knobs.
#[derive(Debug, Default, Clone)]
pub(crate) struct Accounting {
    pub(super) quota_rules: crate::QuotaRules,
    pub(super) shared_store: Option<Arc<dyn corral_store::SharedStore>>,
    pub(super) evidence_dir: Option<PathBuf>,
    pub(super) learning: BTreeSet<String>,
    pub(super) no_evidence: bool,
    pub(super) permissive: Option<Vec<corral_sandbox::HostPattern>>,
    pub(super) recordings: Option<crate::replay::RecordingsConfig>,
}

impl Accounting {
    /// The quota state and the evidence book the host and its layers
    /// share; a task that flushes the evidence every [`EVIDENCE_FLUSH`]
    /// while the book lives (with a directory, inside a runtime).
    ///
    /// # Errors
    /// [`HostError::Learning`](crate::HostError) when the learning runs'
    /// empty directory cannot be made.
    pub(super) fn start(&mut self) -> Result<Ledgers, crate::HostError> {
        let quotas = Arc::new(crate::call::quota::Quotas::new(
            std::mem::take(&mut self.quota_rules),
            self.shared_store.take(),
        ));
        let mut evidence = EvidenceBook::new(
            self.evidence_dir.take(),
            std::mem::take(&mut self.learning),
            self.permissive.take(),
        )
        .map_err(|err| crate::HostError::Learning(err.to_string()))?;
        evidence.off = self.no_evidence;
        let evidence = Arc::new(evidence);
        if evidence.dir().is_some()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let book = Arc::downgrade(&evidence);
            runtime.spawn(async move {
                let mut tick = tokio::time::interval(EVIDENCE_FLUSH);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let Some(book) = book.upgrade() else { break };
                    if let Err(err) = book.flush() {
                        tracing::warn!("evidence not written: {err}");
                    }
                }
            });
        }
        let recordings = match self.recordings.take() {
            None => None,
            Some(config) => {
                let dir = config.dir.clone();
                let opened = crate::replay::Recordings::open(config).map_err(|err| {
                    crate::HostError::Recordings(format!("{}: {err}", dir.display()))
                })?;
                Some(Arc::new(opened))
            }
        };
        Ok((quotas, evidence, recordings))
    }
}

/// What [`Accounting::start`] gives the host and its dispatch: the quota
/// state, the evidence book and the recordings directory.
pub(crate) type Ledgers = (
    Arc<crate::call::quota::Quotas>,
    Arc<EvidenceBook>,
    Option<Arc<crate::replay::Recordings>>,
);
