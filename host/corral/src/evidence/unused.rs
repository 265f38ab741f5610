//! `corral policy unused`: the grants of a plugin's policy that its
//! evidence shows no use of within a window (IAM Access Analyzer's unused
//! access, for one plugin): a directory no allowed file operation went
//! through, an allow-list entry no allowed request matched, a credential
//! no request carried. Environment grants are "cannot tell": a guest reads
//! its variables from a list handed over at start, so no use is ever seen.
//! Each is printed as the policy line to delete.

use serde::Serialize;

use super::{PluginEvidence, inside};
use crate::config::policy::Policy;

/// Whether a grant was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// No use in the window.
    Unused,
    /// Its use cannot be observed (environment variables).
    CannotTell,
}

/// One grant with no use seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnusedGrant {
    /// The policy section: `filesystem`, `http.allow`, `http.credentials`,
    /// `environment`.
    pub section: &'static str,
    /// The line to delete, as the policy writes it (`guest = "/data"`,
    /// `"https://api.example.com"`).
    pub line: String,
    /// Unused, or cannot tell.
    pub verdict: Verdict,
}

/// The grants with no use in a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unused {
    /// The plugin.
    pub plugin: String,
    /// The window's start (Unix seconds).
    pub since: u64,
    /// When the evidence starts (Unix seconds): a window reaching before it
    /// saw less than it asks for. `None` without evidence.
    pub evidence_since: Option<u64>,
    /// Calls seen in the window, all tools.
    pub calls: u64,
    /// The grants, in policy order.
    pub grants: Vec<UnusedGrant>,
}

/// `(scheme, host, port)` of an origin `scheme://host:port`.
fn parts(origin: &str) -> Option<(&str, &str, u16)> {
    let (scheme, rest) = origin.split_once("://")?;
    let (host, port) = rest.rsplit_once(':')?;
    Some((scheme, host, port.parse().ok()?))
}

/// The grants of `policy` that `evidence` (of plugin `plugin`) shows no use
/// of since `since` (Unix seconds).
pub fn unused(
    plugin: &str,
    policy: &Policy,
    evidence: Option<&PluginEvidence>,
    since: u64,
) -> Unused {
    let tools = evidence
        .map(|e| e.tools.values().collect::<Vec<_>>())
        .unwrap_or_default();
    let files: Vec<&super::FileSeen> = tools
        .iter()
        .flat_map(|t| &t.files)
        .filter(|f| f.error.is_none() && f.seen.last >= since)
        .collect();
    let requests: Vec<&super::HttpSeen> = tools
        .iter()
        .flat_map(|t| &t.http)
        .filter(|h| h.denied.is_none() && h.seen.last >= since)
        .collect();
    let matched = |pattern: &corral_sandbox::HostPattern| {
        requests.iter().any(|h| {
            parts(&h.origin).is_some_and(|(scheme, host, port)| pattern.matches(scheme, host, port))
        })
    };
    let mut grants = Vec::new();
    for dir in &policy.filesystem {
        let used = files.iter().any(|f| inside(&f.guest_path, &dir.guest));
        if !used {
            grants.push(UnusedGrant {
                section: "filesystem",
                line: format!(
                    "guest = {:?}  (host = {:?})",
                    dir.guest, dir.host_as_written
                ),
                verdict: Verdict::Unused,
            });
        }
    }
    for pattern in &policy.http_allow {
        if !matched(pattern) {
            grants.push(UnusedGrant {
                section: "http.allow",
                line: format!("{:?}", pattern.to_string()),
                verdict: Verdict::Unused,
            });
        }
    }
    for credential in &policy.http_credentials {
        if !matched(&credential.host) {
            grants.push(UnusedGrant {
                section: "http.credentials",
                line: format!(
                    "host = {:?}, header = {:?}",
                    credential.host.to_string(),
                    credential.header
                ),
                verdict: Verdict::Unused,
            });
        }
    }
    for env in &policy.environment {
        grants.push(UnusedGrant {
            section: "environment",
            line: env.name().to_owned(),
            verdict: Verdict::CannotTell,
        });
    }
    let calls = tools
        .iter()
        .filter(|t| t.calls.last >= since)
        .map(|t| t.calls.count)
        .sum();
    Unused {
        plugin: plugin.to_owned(),
        since,
        evidence_since: evidence.map(|e| e.since),
        calls,
        grants,
    }
}
