//! What the host counts: tenant quotas and the evidence of what tools
//! attempted. The builder's knobs ([`HostBuilder::quotas`],
//! [`HostBuilder::shared_store`], [`HostBuilder::evidence_dir`],
//! [`HostBuilder::learning`]) and what a running host says of them
//! ([`Host::quota_status`], [`Host::tenant_usage`], [`Host::evidence`],
//! [`Host::flush_evidence`]). The rules are `config/quota.rs` and
//! `evidence/`; the call path is `call/quota/` and the dispatch stage.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{Host, HostBuilder};

impl HostBuilder {
    /// The host's tenant quotas ([`QuotaRules`](crate::QuotaRules): each
    /// tenant's, and the global ones of tenants without a token; read from
    /// a file with [`QuotaRules::from_file`](crate::QuotaRules::from_file)).
    /// Default: none. A plugin's policy can add its own (`[quotas]`).
    #[must_use]
    pub fn quotas(mut self, rules: crate::QuotaRules) -> Self {
        self.accounting.quota_rules = rules;
        self
    }

    /// The store every replica shares (`corral_store::RedisStore`): tenant
    /// quotas keep their buckets there, so replicas enforce one quota
    /// together. Default: none, each process keeps its own (at most
    /// [`QuotaRules::max_tenants`](crate::QuotaRules) tenants).
    #[must_use]
    pub fn shared_store(mut self, store: Arc<dyn corral_store::SharedStore>) -> Self {
        self.accounting.shared_store = Some(store);
        self
    }

    /// Where the evidence of what tools attempted is written, one
    /// `NAME.evidence.json` per plugin (see `corral::PluginEvidence`),
    /// every [`EVIDENCE_FLUSH`](crate::EVIDENCE_FLUSH) and on [`Host::flush_evidence`]. Default:
    /// none, evidence kept in memory only ([`Host::evidence`]).
    #[must_use]
    pub fn evidence_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.accounting.evidence_dir = Some(dir.into());
        self
    }

    /// Whether calls record their evidence (default `true`). Off, nothing
    /// is recorded, [`Host::evidence`] reads only the files, and
    /// `corral policy unused` sees no use: for measuring what recording
    /// costs (BENCHMARKS.md), not for production.
    #[must_use]
    pub fn record_evidence(mut self, on: bool) -> Self {
        self.accounting.no_evidence = !on;
        self
    }

    /// Where recorded runs are written, and how many are kept
    /// ([`RecordingsConfig`](crate::replay::RecordingsConfig)): calls with
    /// a [`RecordRequest`](crate::replay::RecordRequest) and the calls a
    /// plugin's policy samples (`[record]`). Default: none; a call asking
    /// to be recorded then notes why it was not.
    #[must_use]
    pub fn recordings(mut self, config: crate::replay::RecordingsConfig) -> Self {
        self.accounting.recordings = Some(config);
        self
    }

    /// Makes the learning runs permissive (allow and record), for a tool
    /// author's test run: each granted directory is replaced by a scratch
    /// copy (read-write; the real one is never opened), `/` is a scratch
    /// directory (read-write), and outbound HTTP reaches only `origins`
    /// (the policy's allow-list and credentials are dropped). Every
    /// attempt is recorded. Only with [`learning`](Self::learning).
    #[must_use]
    pub fn learning_permissive(mut self, origins: Vec<crate::HostPattern>) -> Self {
        self.accounting.permissive = Some(origins);
        self
    }

    /// Runs these plugins (by name) in learning runs: each call also gets
    /// an empty, read-only directory preopened at `/`, so that file
    /// attempts outside the grants reach the host, fail as they would
    /// have, and are recorded. Nothing else changes; outside a learning
    /// run nothing is preopened at `/`. Default: none.
    #[must_use]
    pub fn learning<I: IntoIterator<Item = S>, S: Into<String>>(mut self, plugins: I) -> Self {
        self.accounting
            .learning
            .extend(plugins.into_iter().map(Into::into));
        self
    }
}

impl Host {
    /// Where tenant quotas keep their buckets now: the shared store, or
    /// this process while the store is down (`/readyz` shows it).
    pub fn quota_status(&self) -> crate::QuotaStatus {
        self.inner.quotas.status()
    }

    /// The `n` tenants that used the most on this replica since it started
    /// (of the calls quotas apply to: calls, fuel, ms of guest time, HTTP
    /// bytes), and everyone else summed: labels safe for metrics, never
    /// more than `n + 1`.
    pub fn tenant_usage(&self, n: usize) -> crate::TenantUsage {
        self.inner.quotas.tenant_usage(n)
    }

    /// What `plugin` attempted, by tool: the evidence file (with an
    /// evidence directory) and what this host recorded since its last
    /// flush. `None` before its first recorded call.
    ///
    /// # Errors
    /// [`EvidenceError`](crate::EvidenceError) when the file cannot be read.
    pub fn evidence(
        &self,
        plugin: &str,
    ) -> Result<Option<crate::PluginEvidence>, crate::EvidenceError> {
        self.inner.evidence.snapshot(plugin)
    }

    /// The grants of `plugin`'s policy its evidence shows no use of in the
    /// last `window` (see `corral::unused_grants`); `Ok(None)` when no
    /// plugin of that name is loaded.
    ///
    /// # Errors
    /// [`EvidenceError`](crate::EvidenceError) when the evidence file cannot
    /// be read.
    pub fn unused_grants(
        &self,
        plugin: &str,
        window: Duration,
    ) -> Result<Option<crate::Unused>, crate::EvidenceError> {
        let catalog = self.catalog();
        let Some(found) = catalog
            .tools()
            .filter_map(|t| t.plugin())
            .find(|p| p.name() == plugin)
        else {
            return Ok(None);
        };
        let evidence = self.evidence(plugin)?;
        let since = std::time::SystemTime::now()
            .checked_sub(window)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        Ok(Some(crate::evidence::unused(
            plugin,
            found.policy(),
            evidence.as_ref(),
            since,
        )))
    }

    /// Writes the evidence recorded since the last flush into the evidence
    /// directory (merged with what is there, under each file's lock).
    ///
    /// # Errors
    /// [`EvidenceError`](crate::EvidenceError) naming the file that could not be
    /// written; its evidence is kept for the next flush.
    pub fn flush_evidence(&self) -> Result<(), crate::EvidenceError> {
        self.inner.evidence.flush()
    }

    /// The recordings directory ([`HostBuilder::recordings`]), if any: where
    /// recorded calls go, and how many sampled ones were dropped because
    /// its writer was behind ([`Recordings::dropped`](crate::replay::Recordings::dropped)).
    pub fn recordings(&self) -> Option<&crate::replay::Recordings> {
        self.inner.recordings.as_deref()
    }

    /// The host's quota rules ([`HostBuilder::quotas`]).
    pub fn quota_rules(&self) -> &crate::QuotaRules {
        self.inner.quotas.rules()
    }
}
