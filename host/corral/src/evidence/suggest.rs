//! `corral policy suggest`: from a plugin's evidence, the smallest change
//! to its policy that would have allowed what was denied for a missing
//! grant, keeping every grant it has. The rules:
//!
//! - **Files.** A path that went through no grant (seen only in a learning
//!   run) needs one: its directory (the path itself for a listing), and
//!   directories inside another of them are dropped, so the grants are the
//!   fewest directories that hold every such path and never a directory
//!   above what was touched. Read-only unless a write, create or remove was
//!   seen under it. A new grant's host directory is `NAME-files/<guest
//!   path>` beside the policy (`policy accept --suggested` creates it). A
//!   write refused by a read-only grant makes that grant read-write.
//! - **HTTP.** Each origin refused as not granted is added exactly as seen
//!   (scheme, host, port; the default port left out), never a wildcard
//!   unless asked ([`Generalise::Hosts`]: two or more hosts under one
//!   parent domain become `*.parent`). A name refused for resolving to a
//!   private address gets a comment, not a grant: widening to private
//!   networks is the operator's call.
//! - **Limits.** Fuel, timeout and memory at the highest peak any tool
//!   reached, times [`HEADROOM`], rounded up to two significant digits, and
//!   at least [`MIN_FUEL`], [`MIN_TIMEOUT_MS`] and 1 MiB.
//! - **Environment** variables cannot be learnt (see the module above); the
//!   policy's own are kept as they are.
//!
//! The result is the policy's text with those edits (every added or changed
//! line carries a comment naming the tools and how many calls needed it: per
//! tool, the most calls any one access under it was seen in, so a lower
//! bound when a tool's calls touched different files),
//! and a line diff against the current text.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::{PluginEvidence, inside};

/// Limits are suggested at the observed peak times this: 2.
pub const HEADROOM: u64 = 2;

/// The least fuel suggested: 1 000 000 units.
pub const MIN_FUEL: u64 = 1_000_000;

/// The shortest timeout suggested: 1 000 ms (a first call after idle pays
/// page faults a peak may not show).
pub const MIN_TIMEOUT_MS: u64 = 1_000;

/// Whether to widen what was seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Generalise {
    /// Nothing: every origin exactly as seen (the default).
    #[default]
    Nothing,
    /// Hosts under one parent domain as `*.parent`.
    Hosts,
}

/// A suggested policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// The suggested policy's text.
    pub text: String,
    /// The diff against the current text: each line starts with `+ `,
    /// `- ` or two spaces.
    pub diff: Vec<String>,
    /// How many lines were added or changed (0: nothing to suggest).
    pub changes: usize,
    /// What was seen but not turned into a grant, in words.
    pub notes: Vec<String>,
}

/// `tool (N calls), ...` for a comment.
fn because(tools: &BTreeMap<String, u64>) -> String {
    tools
        .iter()
        .map(|(tool, n)| format!("{tool} ({n} call{})", if *n == 1 { "" } else { "s" }))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The directory a grant needs for `path` under `op`: the path itself for
/// a listing, else its parent; `None` for the root and its direct files.
pub(crate) fn directory_of(path: &str, op: &str) -> Option<String> {
    let dir = if op == "list" {
        path.trim_end_matches('/').to_string()
    } else {
        let trimmed = path.trim_end_matches('/');
        trimmed[..trimmed.rfind('/')?].to_string()
    };
    (!dir.is_empty() && dir != "/").then_some(dir)
}

/// The fewest directories holding every `(path, op)`: each one's
/// [`directory_of`], without those inside another. With each: whether a
/// write was seen under it.
pub(crate) fn collapse<'a>(
    seen: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(String, bool)> {
    let seen: Vec<(&str, &str)> = seen.into_iter().collect();
    let candidates: BTreeSet<String> = seen
        .iter()
        .filter_map(|(path, op)| directory_of(path, op))
        .collect();
    let kept: Vec<String> = candidates
        .iter()
        .filter(|dir| {
            !candidates
                .iter()
                .any(|other| other != *dir && inside(dir, other))
        })
        .cloned()
        .collect();
    kept.into_iter()
        .map(|dir| {
            let writes = seen.iter().any(|(path, op)| {
                inside(path, &dir) && matches!(*op, "write" | "create" | "remove")
            });
            (dir, writes)
        })
        .collect()
}

/// Rounds `n` up to two significant digits.
fn round_up(n: u64) -> u64 {
    let mut scale = 1u64;
    while n / scale >= 100 {
        scale = scale.saturating_mul(10);
    }
    n.div_ceil(scale).saturating_mul(scale)
}

/// `scheme://host:port` as the allow-list writes it (default port left out).
fn entry_of(origin: &str) -> String {
    origin
        .strip_suffix(":443")
        .filter(|_| origin.starts_with("https://"))
        .or_else(|| {
            origin
                .strip_suffix(":80")
                .filter(|_| origin.starts_with("http://"))
        })
        .unwrap_or(origin)
        .to_string()
}

/// Origins as allow-list entries, hosts under one parent as `*.parent`
/// when asked.
fn generalised(
    entries: BTreeMap<String, BTreeMap<String, u64>>,
    how: Generalise,
) -> BTreeMap<String, BTreeMap<String, u64>> {
    if how == Generalise::Nothing {
        return entries;
    }
    // Group by (scheme, parent domain, port suffix).
    let mut groups: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    for entry in entries.keys() {
        let Some((scheme, rest)) = entry.split_once("://") else {
            continue;
        };
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || p.chars().all(|c| c.is_ascii_digit()) => {
                (h.to_string(), format!(":{p}"))
            }
            _ => (rest.to_string(), String::new()),
        };
        if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
            continue;
        }
        let labels: Vec<&str> = host.split('.').collect();
        if labels.len() < 3 {
            continue;
        }
        let parent = labels[1..].join(".");
        groups
            .entry((scheme.to_string(), parent, port))
            .or_default()
            .push(entry.clone());
    }
    let mut out = entries;
    for ((scheme, parent, port), members) in groups {
        if members.len() < 2 {
            continue;
        }
        let mut tools = BTreeMap::new();
        for member in members {
            for (tool, n) in out.remove(&member).unwrap_or_default() {
                *tools.entry(tool).or_insert(0) += n;
            }
        }
        out.insert(format!("{scheme}://*.{parent}{port}"), tools);
    }
    out
}

/// Only the spans the suggestion edits; every other key is ignored here
/// (the policy was validated whole before).
#[derive(Deserialize)]
struct Spans {
    #[serde(default)]
    filesystem: Vec<DirSpan>,
    http: Option<HttpSpan>,
    limits: Option<LimitsSpan>,
}

#[derive(Deserialize)]
struct DirSpan {
    guest: Spanned<String>,
    access: Option<Spanned<String>>,
}

#[derive(Deserialize)]
struct HttpSpan {
    allow: Spanned<Vec<String>>,
}

#[derive(Deserialize)]
struct LimitsSpan {
    fuel: Option<Spanned<u64>>,
    timeout_ms: Option<Spanned<u64>>,
    memory_mib: Option<Spanned<u64>>,
}

/// The end of the line that holds `at` (the index of its `\n`, or the end).
fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |n| at + n)
}

/// After the line of the table header `[name]`.
fn after_header(text: &str, name: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim().split('#').next().map(str::trim) == Some(&format!("[{name}]")) {
            return Some(offset + line.len());
        }
        offset += line.len();
    }
    None
}

/// Suggests `current` (the policy's text; empty when it has none) grown by
/// `evidence`, for the plugin `name`.
///
/// # Errors
/// A message when `current` is not TOML (check the policy first).
pub fn suggest(
    name: &str,
    current: &str,
    evidence: &PluginEvidence,
    generalise: Generalise,
) -> Result<Suggestion, String> {
    let base = if current.trim().is_empty() {
        "version = 1\n".to_string()
    } else {
        current.to_string()
    };
    let spans: Spans = toml::from_str(&base).map_err(|e| e.to_string())?;
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut appended = String::new();
    let mut notes = Vec::new();
    let mut changes = 0;

    // Files: paths outside every grant, and writes a read-only grant refused.
    let mut outside: Vec<(&str, &str, &str, u64)> = Vec::new();
    let mut read_only: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (tool, seen) in &evidence.tools {
        for f in &seen.files {
            if f.host_path.is_none() && f.guest_path != "/" {
                outside.push((&f.guest_path, &f.op, tool, f.seen.count));
            } else if f.host_path.is_some()
                && matches!(
                    f.error.as_deref(),
                    Some("read-only" | "not-permitted" | "access")
                )
                && matches!(f.op.as_str(), "write" | "create" | "remove")
                && let Some(dir) = spans
                    .filesystem
                    .iter()
                    .filter(|d| inside(&f.guest_path, d.guest.get_ref()))
                    .max_by_key(|d| d.guest.get_ref().len())
            {
                let calls = read_only
                    .entry(dir.guest.get_ref().clone())
                    .or_default()
                    .entry(tool.clone())
                    .or_insert(0);
                *calls = (*calls).max(f.seen.count);
            }
        }
    }
    for dir in &spans.filesystem {
        let Some(tools) = read_only.get(dir.guest.get_ref()) else {
            continue;
        };
        let comment = format!("  # written by {}", because(tools));
        changes += 1;
        match &dir.access {
            Some(access) if access.get_ref() != "read-write" => {
                let end = line_end(&base, access.span().end);
                edits.push((access.span(), "\"read-write\"".into()));
                edits.push((end..end, comment));
            }
            Some(_) => {}
            None => {
                let end = line_end(&base, dir.guest.span().end);
                edits.push((end..end, format!("\naccess = \"read-write\"{comment}")));
            }
        }
    }
    for (dir, writes) in collapse(outside.iter().map(|(p, op, _, _)| (*p, *op))) {
        let mut tools = BTreeMap::new();
        for (path, _, tool, n) in &outside {
            if inside(path, &dir) {
                let calls = tools.entry(tool.to_string()).or_insert(0);
                *calls = (*calls).max(*n);
            }
        }
        changes += 4;
        appended.push_str(&format!(
            "\n[[filesystem]]  # {}\nhost = \"{name}-files{dir}\"\nguest = \"{dir}\"\naccess = \"{}\"\n",
            because(&tools),
            if writes { "read-write" } else { "read-only" }
        ));
    }

    // HTTP: origins refused as not granted.
    let mut wanted: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (tool, seen) in &evidence.tools {
        for h in &seen.http {
            match h.denied.as_deref() {
                Some("not-granted") => {
                    let calls = wanted
                        .entry(entry_of(&h.origin))
                        .or_default()
                        .entry(tool.clone())
                        .or_insert(0);
                    *calls = (*calls).max(h.seen.count);
                }
                Some("private-address") => notes.push(format!(
                    "{} ({tool}) resolves to a private address: list that address itself, or \
                     set `[http] allow_private_networks = true` if you mean it",
                    corral_names::text::escape(&h.origin)
                )),
                _ => {}
            }
        }
    }
    let wanted = generalised(wanted, generalise);
    if !wanted.is_empty() {
        let mut lines = String::from("allow = [\n");
        if let Some(http) = &spans.http {
            for entry in http.allow.get_ref() {
                lines.push_str(&format!("  {entry:?},\n"));
            }
        }
        for (entry, tools) in &wanted {
            changes += 1;
            lines.push_str(&format!("  {entry:?},  # {}\n", because(tools)));
        }
        lines.push(']');
        match &spans.http {
            Some(http) => {
                let span = http.allow.span();
                let key = base[..span.start].rfind("allow").unwrap_or(span.start);
                edits.push((key..span.end, lines));
            }
            None => appended.push_str(&format!("\n[http]\n{lines}\n")),
        }
    }

    // Limits at the peak times the headroom.
    let peak = |f: fn(&super::Peaks) -> u64| {
        evidence
            .tools
            .iter()
            .map(|(tool, e)| (f(&e.peaks), tool.clone(), e.calls.count))
            .max()
    };
    let mut limits: Vec<(&str, u64, String)> = Vec::new();
    let by = |tool: String, calls: u64| because(&BTreeMap::from([(tool, calls)]));
    if let Some((fuel, tool, calls)) = peak(|p| p.fuel).filter(|p| p.0 > 0) {
        let value = round_up((fuel * HEADROOM).max(MIN_FUEL));
        limits.push((
            "fuel",
            value,
            format!("peak {fuel} × {HEADROOM}, by {}", by(tool, calls)),
        ));
    }
    if let Some((ms, tool, calls)) = peak(|p| p.wall_ms).filter(|p| p.2 > 0) {
        let value = round_up((ms * HEADROOM).max(MIN_TIMEOUT_MS));
        limits.push((
            "timeout_ms",
            value,
            format!("peak {ms} ms × {HEADROOM}, by {}", by(tool, calls)),
        ));
    }
    if let Some((bytes, tool, calls)) = peak(|p| p.memory_bytes).filter(|p| p.0 > 0) {
        let mib = (bytes * HEADROOM).div_ceil(1 << 20).max(1);
        let why = format!(
            "peak {} KiB × {HEADROOM}, by {}",
            bytes / 1024,
            by(tool, calls)
        );
        limits.push(("memory_mib", round_up(mib), why));
    }
    if !limits.is_empty() {
        let current = |key: &str| -> Option<&Spanned<u64>> {
            let l = spans.limits.as_ref()?;
            match key {
                "fuel" => l.fuel.as_ref(),
                "timeout_ms" => l.timeout_ms.as_ref(),
                _ => l.memory_mib.as_ref(),
            }
        };
        let mut section = String::new();
        for (key, value, why) in &limits {
            match current(key) {
                Some(now) if now.get_ref() == value => {}
                Some(now) => {
                    changes += 1;
                    let end = line_end(&base, now.span().end);
                    edits.push((now.span(), value.to_string()));
                    edits.push((end..end, format!("  # {why}")));
                }
                None => {
                    changes += 1;
                    section.push_str(&format!("{key} = {value}  # {why}\n"));
                }
            }
        }
        if !section.is_empty() {
            match after_header(&base, "limits") {
                Some(at) => edits.push((at..at, section)),
                None => appended.push_str(&format!("\n[limits]\n{section}")),
            }
        }
    }

    let mut text = base.clone();
    edits.sort_by_key(|(range, _)| std::cmp::Reverse((range.start, range.end)));
    for (range, replacement) in edits {
        text.replace_range(range, &replacement);
    }
    if !appended.is_empty() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&appended);
    }
    let diff = corral_names::diff::line_diff(current, &text);
    Ok(Suggestion {
        text,
        diff,
        changes,
        notes,
    })
}
