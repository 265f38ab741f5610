//! The shapes of the evidence ([`PluginEvidence`] and what it holds: the
//! evidence file's JSON) and the two rules that change it: one sandbox run
//! recorded into a plugin's evidence, and two pieces of evidence merged
//! (another process's, a flush into the file). Bounded by
//! [`MAX_ENTRIES`] and [`MAX_EXAMPLES`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::{MAX_ENTRIES, MAX_EXAMPLES, Observed, now};

/// The evidence file format's version: 1.
pub const EVIDENCE_VERSION: u32 = 1;

/// How often and when something was seen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// How many calls (runs) did it, however often each did.
    pub count: u64,
    /// First seen, Unix seconds.
    pub first: u64,
    /// Last seen, Unix seconds.
    pub last: u64,
    /// Up to [`MAX_EXAMPLES`] calls that did it: the first 16 hex digits of
    /// the sha256 of their arguments' JSON text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

impl Seen {
    fn once(at: u64, example: Option<&str>) -> Self {
        Self {
            count: 0,
            first: at,
            last: at,
            examples: Vec::new(),
        }
        .plus(1, at, example)
    }

    fn plus(mut self, count: u64, at: u64, example: Option<&str>) -> Self {
        self.add(count, at, example);
        self
    }

    fn add(&mut self, count: u64, at: u64, example: Option<&str>) {
        if self.count == 0 {
            self.first = at;
        }
        self.count = self.count.saturating_add(count);
        self.first = self.first.min(at);
        self.last = self.last.max(at);
        if let Some(example) = example
            && self.examples.len() < MAX_EXAMPLES
            && !self.examples.iter().any(|e| e == example)
        {
            self.examples.push(example.to_owned());
        }
    }

    fn merge(&mut self, other: &Seen) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            self.first = other.first;
        }
        self.count = self.count.saturating_add(other.count);
        self.first = self.first.min(other.first);
        self.last = self.last.max(other.last);
        for example in &other.examples {
            if self.examples.len() < MAX_EXAMPLES && !self.examples.contains(example) {
                self.examples.push(example.clone());
            }
        }
    }
}

/// One kind of outbound HTTP request a tool made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpSeen {
    /// `scheme://host:port` (guest-supplied: escape it for a terminal).
    pub origin: String,
    /// The method.
    pub method: String,
    /// `None` when the policy allowed it; else why not (`not-granted`,
    /// `private-address`, `secret-in-url`).
    pub denied: Option<String>,
    /// How often and when.
    #[serde(flatten)]
    pub seen: Seen,
}

/// One kind of file operation a tool made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSeen {
    /// The absolute guest path (guest-supplied: escape it).
    pub guest_path: String,
    /// `read`, `write`, `create`, `remove` or `list`.
    pub op: String,
    /// The host path its grant mapped it to; `None` outside every grant.
    pub host_path: Option<String>,
    /// `None` when WASI answered it; else the WASI error (`no-entry`,
    /// `read-only`, `not-permitted`, ...).
    pub error: Option<String>,
    /// How often and when.
    #[serde(flatten)]
    pub seen: Seen,
}

/// The most a tool used in one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peaks {
    /// Fuel units.
    pub fuel: u64,
    /// The largest linear memory, in bytes.
    pub memory_bytes: u64,
    /// Guest wall time, in milliseconds.
    pub wall_ms: u64,
}

/// What one tool attempted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolEvidence {
    /// Its calls that ran in the sandbox.
    pub calls: Seen,
    /// The most one call used.
    pub peaks: Peaks,
    /// Outbound HTTP.
    #[serde(default)]
    pub http: Vec<HttpSeen>,
    /// File operations.
    #[serde(default)]
    pub files: Vec<FileSeen>,
    /// Entries past [`MAX_ENTRIES`], and attempts a run could not keep,
    /// counted only.
    #[serde(default)]
    pub dropped: u64,
}

/// What one build of a plugin's tools attempted: the evidence file's
/// shape (`NAME.evidence.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginEvidence {
    /// [`EVIDENCE_VERSION`].
    pub version: u32,
    /// The plugin's name.
    pub plugin: String,
    /// The sha256 of the build the evidence is about.
    pub sha256: String,
    /// Since when (Unix seconds): the first record of this build.
    pub since: u64,
    /// Whether any of it comes from a learning run.
    #[serde(default)]
    pub learning: bool,
    /// By the tool's name as the guest declares it.
    pub tools: BTreeMap<String, ToolEvidence>,
}

impl PluginEvidence {
    /// No evidence yet of `plugin`'s build `sha256`.
    pub fn new(plugin: &str, sha256: &str) -> Self {
        Self {
            version: EVIDENCE_VERSION,
            plugin: plugin.to_owned(),
            sha256: sha256.to_owned(),
            since: now(),
            learning: false,
            tools: BTreeMap::new(),
        }
    }

    /// Adds `other` (of the same build; a different build replaces this).
    pub fn merge(&mut self, other: &PluginEvidence) {
        if other.sha256 != self.sha256 {
            *self = other.clone();
            return;
        }
        self.since = self.since.min(other.since);
        self.learning |= other.learning;
        for (name, theirs) in &other.tools {
            let ours = self.tools.entry(name.clone()).or_default();
            ours.calls.merge(&theirs.calls);
            ours.peaks.fuel = ours.peaks.fuel.max(theirs.peaks.fuel);
            ours.peaks.memory_bytes = ours.peaks.memory_bytes.max(theirs.peaks.memory_bytes);
            ours.peaks.wall_ms = ours.peaks.wall_ms.max(theirs.peaks.wall_ms);
            ours.dropped = ours.dropped.saturating_add(theirs.dropped);
            for h in &theirs.http {
                let found = ours.http.iter().position(|o| {
                    o.origin == h.origin && o.method == h.method && o.denied == h.denied
                });
                match found {
                    Some(i) => ours.http[i].seen.merge(&h.seen),
                    None if ours.http.len() < MAX_ENTRIES => ours.http.push(h.clone()),
                    None => ours.dropped = ours.dropped.saturating_add(h.seen.count),
                }
            }
            for f in &theirs.files {
                let found = ours.files.iter().position(|o| {
                    o.guest_path == f.guest_path && o.op == f.op && o.error == f.error
                });
                match found {
                    Some(i) => ours.files[i].seen.merge(&f.seen),
                    None if ours.files.len() < MAX_ENTRIES => ours.files.push(f.clone()),
                    None => ours.dropped = ours.dropped.saturating_add(f.seen.count),
                }
            }
        }
    }

    /// Records one run of `tool`.
    pub(super) fn record(&mut self, tool: &str, arguments: &str, report: &Observed<'_>) {
        let at = now();
        // No allocation once the tool is known: this runs on every call.
        if !self.tools.contains_key(tool) {
            self.tools.insert(tool.to_owned(), ToolEvidence::default());
        }
        let Some(evidence) = self.tools.get_mut(tool) else {
            return;
        };
        evidence.calls.add(1, at, None);
        let usage = report.usage;
        evidence.peaks.fuel = evidence.peaks.fuel.max(usage.fuel);
        evidence.peaks.memory_bytes = evidence.peaks.memory_bytes.max(usage.memory_peak);
        let wall_ms = u64::try_from(usage.wall.as_millis()).unwrap_or(u64::MAX);
        evidence.peaks.wall_ms = evidence.peaks.wall_ms.max(wall_ms);
        let attempts = report.attempts;
        evidence.dropped = evidence.dropped.saturating_add(u64::from(attempts.dropped));
        if attempts.http.is_empty() && attempts.files.is_empty() {
            return;
        }
        let example = example_of(arguments);
        let one = PluginEvidence {
            tools: BTreeMap::from([(
                tool.to_owned(),
                ToolEvidence {
                    calls: Seen::default(),
                    peaks: Peaks::default(),
                    http: attempts
                        .http
                        .iter()
                        .map(|h| HttpSeen {
                            origin: h.origin.clone(),
                            method: h.method.clone(),
                            denied: h.denied.map(|d| d.as_str().to_owned()),
                            seen: Seen::once(at, Some(&example)),
                        })
                        .collect(),
                    files: attempts
                        .files
                        .iter()
                        .map(|f| FileSeen {
                            guest_path: f.guest_path.clone(),
                            op: f.op.as_str().to_owned(),
                            host_path: f.host_path.clone(),
                            error: f.error.clone(),
                            seen: Seen::once(at, Some(&example)),
                        })
                        .collect(),
                    dropped: 0,
                },
            )]),
            ..PluginEvidence::new(&self.plugin, &self.sha256)
        };
        self.merge(&one);
    }
}

/// The example digest of `arguments`.
fn example_of(arguments: &str) -> String {
    hex::encode(&Sha256::digest(arguments.as_bytes())[..8])
}
