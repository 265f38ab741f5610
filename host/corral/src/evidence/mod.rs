//! Least privilege from evidence: what each tool of each plugin attempted
//! at the sandbox boundary, and whether its policy allowed it, kept as
//! bounded aggregates ([`PluginEvidence`]), not a log per access; then read
//! back to suggest the smallest policy that would have served the calls
//! (`suggest.rs`) and to list the grants nothing used (`unused.rs`).
//!
//! **What is recorded**, per tool: its calls (count, first and last seen),
//! the peaks of fuel, memory and guest wall time, and every distinct
//! outbound HTTP request (origin, method, allowed or why not) and file
//! operation (guest path, operation, the host path of its grant, allowed
//! or the WASI error) the sandbox saw (`corral_sandbox::Attempts`), each
//! with a count, first and last seen (Unix seconds) and up to
//! [`MAX_EXAMPLES`] examples: the first 16 hex digits of the sha256 of the
//! arguments of calls that made it. At most [`MAX_ENTRIES`] HTTP and as
//! many file entries per tool; more are counted in `dropped`.
//!
//! **What cannot be recorded**: environment variables (a guest reads a
//! list handed over at start, and never asks the host for a name), and a
//! file path outside every preopened directory (wasi-libc resolves paths
//! against the preopens inside the guest, so such an open fails there),
//! except in a learning run, which preopens an empty read-only directory at
//! `/` (`corral_sandbox::Grants::learning_root`).
//!
//! **Where it is kept**: in memory per host, and, with an evidence
//! directory ([`HostBuilder::evidence_dir`](crate::HostBuilder::evidence_dir)),
//! in one file per plugin, `NAME.evidence.json` (`file.rs`), merged under
//! the file's lock by every process that records (replicas, `corral call`),
//! beside the audit log rather than inside it: the audit log is a record of
//! decisions, the evidence a summary that is rewritten. Evidence belongs to
//! one build of a plugin: a file whose `sha256` is not the plugin's is
//! started afresh, so a reload that finds the plugin's bytes unchanged keeps
//! its evidence, and a new build learns its own.

mod aggregate;
mod file;
mod learning;
pub(crate) mod suggest;
pub(crate) mod unused;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

pub use aggregate::{
    EVIDENCE_VERSION, FileSeen, HttpSeen, Peaks, PluginEvidence, Seen, ToolEvidence,
};
pub use file::{EvidenceError, evidence_path, read_evidence};
pub use suggest::{HEADROOM, MIN_FUEL, MIN_TIMEOUT_MS, Suggestion, suggest};
pub use unused::{Unused, UnusedGrant, unused};

/// Distinct HTTP entries, and as many file entries, kept per tool: 256.
pub const MAX_ENTRIES: usize = 256;

/// Argument digests kept per entry: 3.
pub const MAX_EXAMPLES: usize = 3;

/// Whether the guest path `path` is `dir` or under it, component-wise
/// (`/notes/a` is under `/notes`, `/notesx` is not); one rule for the
/// suggestion and the unused-grants report.
pub(crate) fn inside(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    dir.is_empty()
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Now, in Unix seconds.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One sandbox run, as the evidence reads it.
pub(crate) struct Observed<'a> {
    pub(crate) usage: &'a corral_sandbox::Usage,
    pub(crate) attempts: &'a corral_sandbox::Attempts,
}

/// Every plugin's evidence in this host: what was recorded since the last
/// flush, where flushes go, and which plugins run in learning runs.
#[derive(Debug, Default)]
pub struct EvidenceBook {
    dir: Option<PathBuf>,
    plugins: RwLock<HashMap<Arc<str>, Arc<Mutex<PluginEvidence>>>>,
    learning: Option<learning::Learning>,
    /// Recording off (`HostBuilder::record_evidence(false)`).
    pub(crate) off: bool,
}

impl Drop for EvidenceBook {
    /// What was recorded since the last flush is written when the host
    /// goes (a one-shot command's calls included).
    fn drop(&mut self) {
        if let Err(err) = self.flush() {
            tracing::warn!("evidence not written: {err}");
        }
    }
}

impl EvidenceBook {
    /// A book that flushes into `dir` (`None`: kept in memory only), whose
    /// `learning` plugins run in learning runs (permissive ones with
    /// `permissive`).
    ///
    /// # Errors
    /// The I/O error of creating the learning runs' directories (in the
    /// system's temporary directory).
    pub(crate) fn new(
        dir: Option<PathBuf>,
        learning: std::collections::BTreeSet<String>,
        permissive: Option<Vec<corral_sandbox::HostPattern>>,
    ) -> std::io::Result<Self> {
        let learning = if learning.is_empty() {
            None
        } else {
            Some(learning::Learning::new(learning, permissive)?)
        };
        Ok(Self {
            dir,
            plugins: RwLock::default(),
            learning,
            off: false,
        })
    }

    /// The grants `plugin`'s calls run with when it runs in learning runs
    /// (see `learning.rs`); `None` outside them.
    ///
    /// # Errors
    /// Why a permissive run's scratch copy of a granted directory cannot be
    /// made.
    pub(crate) fn learning_grants(
        &self,
        plugin: &str,
        grants: &corral_sandbox::Grants,
    ) -> Option<Result<corral_sandbox::Grants, String>> {
        self.learning.as_ref()?.grants(plugin, grants)
    }

    fn learns(&self, plugin: &str) -> bool {
        self.learning.as_ref().is_some_and(|l| l.covers(plugin))
    }

    /// The directory flushes go to.
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.dir.as_deref()
    }

    /// Records one run of `plugin`'s (build `sha256`) `tool`.
    pub(crate) fn record(
        &self,
        plugin: &Arc<str>,
        sha256: &str,
        tool: &str,
        arguments: &str,
        observed: &Observed<'_>,
    ) {
        if self.off {
            return;
        }
        let entry = self
            .plugins
            .read()
            .ok()
            .and_then(|plugins| plugins.get(plugin).cloned());
        let entry = match entry {
            Some(entry) => entry,
            None => {
                let Ok(mut plugins) = self.plugins.write() else {
                    return;
                };
                plugins
                    .entry(plugin.clone())
                    .or_insert_with(|| Arc::new(Mutex::new(PluginEvidence::new(plugin, sha256))))
                    .clone()
            }
        };
        let Ok(mut evidence) = entry.lock() else {
            return;
        };
        if evidence.sha256 != sha256 {
            *evidence = PluginEvidence::new(plugin, sha256);
        }
        evidence.learning |= self.learns(plugin);
        evidence.record(tool, arguments, observed);
    }

    /// What `plugin` attempted: the evidence file (when there is a
    /// directory) with what this host recorded since its last flush.
    ///
    /// # Errors
    /// [`EvidenceError`] when the file exists but cannot be read.
    pub fn snapshot(&self, plugin: &str) -> Result<Option<PluginEvidence>, EvidenceError> {
        let mut found = match &self.dir {
            Some(dir) => read_evidence(dir, plugin)?,
            None => None,
        };
        let pending = self
            .plugins
            .read()
            .ok()
            .and_then(|p| p.get(plugin).cloned())
            .and_then(|e| e.lock().ok().map(|e| e.clone()));
        match (&mut found, pending) {
            (Some(found), Some(pending)) => found.merge(&pending),
            (None, Some(pending)) => found = Some(pending),
            _ => {}
        }
        Ok(found)
    }

    /// Writes what was recorded since the last flush into the evidence
    /// directory, merged with each file under its lock, and forgets it
    /// here. Without a directory, does nothing.
    ///
    /// # Errors
    /// [`EvidenceError`] naming the file that could not be written; the
    /// evidence of that plugin stays in memory for the next flush.
    pub fn flush(&self) -> Result<(), EvidenceError> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let pending: Vec<(Arc<str>, PluginEvidence)> = match self.plugins.read() {
            Ok(plugins) => plugins
                .iter()
                .filter_map(|(name, e)| {
                    let mut e = e.lock().ok()?;
                    if e.tools.is_empty() {
                        return None;
                    }
                    let taken = e.clone();
                    let fresh = PluginEvidence::new(&taken.plugin, &taken.sha256);
                    *e = PluginEvidence {
                        learning: taken.learning,
                        ..fresh
                    };
                    Some((name.clone(), taken))
                })
                .collect(),
            Err(_) => return Ok(()),
        };
        let mut first_error = None;
        for (name, evidence) in pending {
            if let Err(err) = file::merge_into(dir, &evidence) {
                // Keep it for the next flush.
                if let Ok(plugins) = self.plugins.read()
                    && let Some(entry) = plugins.get(&name)
                    && let Ok(mut e) = entry.lock()
                {
                    e.merge(&evidence);
                }
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests;
