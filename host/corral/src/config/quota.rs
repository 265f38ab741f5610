//! Tenant quotas as an operator writes them: the host's quotas file (`corral
//! serve --quotas FILE`, [`QuotaRules::from_file`]) and a policy's
//! `[quotas]` (the same kinds, per tenant, for that plugin's tools). The
//! call path that enforces them is `call/quota.rs`.
//!
//! ```toml
//! version = 1
//! max_tenants = 10000       # tenants' buckets kept in memory (default 10 000)
//!
//! [tenant]                  # each tenant, for the calls of every plugin
//! calls = { limit = 1000, per = "1h", burst = 100 }
//! fuel = { limit = 50_000_000_000, per = "1h" }
//! wall_ms = { limit = 600_000, per = "1h" }      # guest wall time, ms
//! egress_bytes = { limit = 1_000_000_000, per = "1d" }
//!
//! [global]                  # every tenant that no token authenticated, together
//! calls = { limit = 100_000, per = "1h" }
//! ```
//!
//! Each quota is a token bucket: `limit` units come back per `per` (a
//! duration: `30s`, `1h`, `1d`; 1 s to 366 days), and at most `burst`
//! (default `limit`) can be spent at once after being idle. `calls` is
//! checked and taken before a call; `fuel`, `wall_ms` and `egress_bytes`
//! are checked before (refused while the bucket is empty or in debt) and
//! charged after, with what the call used.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

/// Tenants whose buckets are kept in this process when `max_tenants` is not
/// set: 10 000 (each quota of each tenant is one bucket of about 100 bytes).
pub const DEFAULT_MAX_TENANTS: u64 = 10_000;

/// The shortest window a quota may have: 1 s.
pub const MIN_WINDOW: Duration = Duration::from_secs(1);
/// The longest window a quota may have: 366 days.
pub const MAX_WINDOW: Duration = Duration::from_secs(366 * 86_400);

/// What a quota counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaKind {
    /// Calls, taken one before each call.
    Calls,
    /// Fuel units the guest consumed, charged after the call.
    Fuel,
    /// Guest wall time in milliseconds (the sandbox run, without reviews),
    /// charged after the call.
    WallMs,
    /// Outbound HTTP bytes, request plus response, charged after the call.
    EgressBytes,
}

impl QuotaKind {
    /// Every kind, in the order they are checked.
    pub const ALL: [QuotaKind; 4] = [Self::Calls, Self::Fuel, Self::WallMs, Self::EgressBytes];

    /// The key in the file: `calls`, `fuel`, `wall_ms`, `egress_bytes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Calls => "calls",
            Self::Fuel => "fuel",
            Self::WallMs => "wall_ms",
            Self::EgressBytes => "egress_bytes",
        }
    }

    /// The unit, in words: `calls`, `fuel units`, `ms of guest time`,
    /// `bytes of HTTP`.
    pub fn unit(self) -> &'static str {
        match self {
            Self::Calls => "calls",
            Self::Fuel => "fuel units",
            Self::WallMs => "ms of guest time",
            Self::EgressBytes => "bytes of HTTP",
        }
    }
}

/// One quota: `limit` units per `window`, at most `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// What it counts.
    pub kind: QuotaKind,
    /// Units that come back per window (≥ 1).
    pub limit: u64,
    /// The window ([`MIN_WINDOW`] to [`MAX_WINDOW`]).
    pub window: Duration,
    /// The most units spent at once (≥ 1; default `limit`).
    pub burst: u64,
}

impl std::fmt::Display for Quota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} {} per {}",
            self.kind.as_str(),
            self.limit,
            self.kind.unit(),
            humantime::format_duration(self.window)
        )?;
        if self.burst != self.limit {
            write!(f, ", burst {}", self.burst)?;
        }
        Ok(())
    }
}

/// A set of quotas, at most one per kind (a `[tenant]`, `[global]` or a
/// policy's `[quotas]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaSet {
    /// The quotas, in [`QuotaKind::ALL`] order.
    pub quotas: Vec<Quota>,
}

/// As the policy's `[quotas]` reads: `{"calls": {"limit": 2, "per": "1h",
/// "burst": 2}, ...}`.
impl serde::Serialize for QuotaSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(Some(self.quotas.len()))?;
        for q in &self.quotas {
            let per = humantime::format_duration(q.window).to_string();
            map.serialize_entry(
                q.kind.as_str(),
                &serde_json::json!({"limit": q.limit, "per": per, "burst": q.burst}),
            )?;
        }
        map.end()
    }
}

impl QuotaSet {
    /// Whether it has no quota.
    pub fn is_empty(&self) -> bool {
        self.quotas.is_empty()
    }
}

/// The host's quotas ([`QuotaRules::from_file`], or built in code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaRules {
    /// Each tenant's quotas, across every plugin.
    pub tenant: QuotaSet,
    /// The quotas of every tenant not authenticated by a token (client-
    /// asserted context keys and anonymous callers), together: the
    /// backstop against a client that rotates its context key.
    pub global: QuotaSet,
    /// Tenants' buckets kept in this process: the local store's bound, and
    /// the fallback's when the shared store is down (least useful dropped
    /// first). Default [`DEFAULT_MAX_TENANTS`].
    pub max_tenants: u64,
}

impl Default for QuotaRules {
    fn default() -> Self {
        Self {
            tenant: QuotaSet::default(),
            global: QuotaSet::default(),
            max_tenants: DEFAULT_MAX_TENANTS,
        }
    }
}

/// Why a quotas file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the quotas file {path}: {message}")]
pub struct QuotaFileError {
    /// The file.
    pub path: String,
    /// What is wrong, with the line where there is one, and the fix.
    pub message: String,
}

/// One quota as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQuota {
    limit: u64,
    per: String,
    burst: Option<u64>,
}

/// A set of quotas as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQuotaSet {
    calls: Option<Spanned<RawQuota>>,
    fuel: Option<Spanned<RawQuota>>,
    wall_ms: Option<Spanned<RawQuota>>,
    egress_bytes: Option<Spanned<RawQuota>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[allow(dead_code)] // checked by `versioned::read`
    version: u32,
    max_tenants: Option<u64>,
    #[serde(default)]
    tenant: RawQuotaSet,
    #[serde(default)]
    global: RawQuotaSet,
}

impl RawQuotaSet {
    /// The set, checked: each error is the span it is about and the text.
    pub(crate) fn check(self) -> Result<QuotaSet, (Range<usize>, String)> {
        let mut quotas = Vec::new();
        let each = [
            (QuotaKind::Calls, self.calls),
            (QuotaKind::Fuel, self.fuel),
            (QuotaKind::WallMs, self.wall_ms),
            (QuotaKind::EgressBytes, self.egress_bytes),
        ];
        for (kind, raw) in each {
            let Some(raw) = raw else { continue };
            let span = raw.span();
            let raw = raw.into_inner();
            let name = kind.as_str();
            let window = humantime::parse_duration(&raw.per).map_err(|err| {
                (
                    span.clone(),
                    format!(
                        "`{name}.per = {:?}` is not a duration ({err}); write e.g. \"30s\", \"1h\" or \"1d\"",
                        raw.per
                    ),
                )
            })?;
            if !(MIN_WINDOW..=MAX_WINDOW).contains(&window) {
                return Err((
                    span,
                    format!(
                        "`{name}.per = {:?}` is outside 1s to 366d; pick a window in that range",
                        raw.per
                    ),
                ));
            }
            if raw.limit == 0 {
                return Err((
                    span,
                    format!(
                        "`{name}.limit = 0` would refuse every call; remove the quota, or set a limit of 1 or more"
                    ),
                ));
            }
            let burst = raw.burst.unwrap_or(raw.limit);
            if burst == 0 {
                return Err((
                    span,
                    format!(
                        "`{name}.burst = 0` would refuse every call; set 1 or more, or leave it out (it defaults to the limit)"
                    ),
                ));
            }
            quotas.push(Quota {
                kind,
                limit: raw.limit,
                window,
                burst,
            });
        }
        Ok(QuotaSet { quotas })
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl QuotaRules {
    /// Reads the host's quotas file (see the module docs): version 1,
    /// unknown keys refused.
    ///
    /// # Errors
    /// [`QuotaFileError`] naming the file and, for a bad quota, its line:
    /// when it is missing or unreadable, of another version, not of this
    /// shape, or a quota has a zero limit or burst or a window outside
    /// [`MIN_WINDOW`]..=[`MAX_WINDOW`].
    pub fn from_file(path: &Path) -> Result<Self, QuotaFileError> {
        use super::versioned::{self, Format};
        let fail = |message: String| QuotaFileError {
            path: path.display().to_string(),
            message,
        };
        let raw: RawFile = versioned::read(path, corral_files::Kind::Quotas, Format::Toml, 1)
            .map_err(|err| fail(err.to_string()))?
            .ok_or_else(|| fail("there is no such file; check the path".into()))?;
        let text = corral_files::read_text(path, corral_files::Kind::Quotas)
            .ok()
            .flatten()
            .unwrap_or_default();
        let at = |(span, message): (Range<usize>, String)| {
            fail(format!("line {}: {message}", line_of(&text, span.start)))
        };
        let max_tenants = raw.max_tenants.unwrap_or(DEFAULT_MAX_TENANTS);
        if max_tenants == 0 {
            return Err(fail(
                "`max_tenants = 0` keeps no bucket; leave it out (10 000) or set 1 or more".into(),
            ));
        }
        Ok(Self {
            tenant: raw.tenant.check().map_err(at)?,
            global: raw.global.check().map_err(at)?,
            max_tenants,
        })
    }

    /// Whether no quota is set anywhere in these rules.
    pub fn is_empty(&self) -> bool {
        self.tenant.is_empty() && self.global.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Result<QuotaRules, QuotaFileError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("quotas.toml");
        std::fs::write(&path, text).expect("write");
        QuotaRules::from_file(&path)
    }

    #[test]
    fn a_quotas_file_reads_and_each_mistake_names_its_line() {
        let rules = file(
            "version = 1\n[tenant]\ncalls = { limit = 10, per = \"1m\", burst = 2 }\n\
             egress_bytes = { limit = 1000, per = \"1d\" }\n[global]\nfuel = { limit = 5, per = \"1s\" }\n",
        )
        .expect("valid");
        assert_eq!(rules.tenant.quotas.len(), 2);
        assert_eq!(
            rules.tenant.quotas[0].to_string(),
            "calls: 10 calls per 1m, burst 2"
        );
        assert_eq!(
            rules.tenant.quotas[1].to_string(),
            "egress_bytes: 1000 bytes of HTTP per 1day"
        );
        assert_eq!(rules.global.quotas[0].kind, QuotaKind::Fuel);
        assert_eq!(rules.max_tenants, DEFAULT_MAX_TENANTS);

        for (text, wanted) in [
            (
                "version = 1\n[tenant]\n\ncalls = { limit = 0, per = \"1h\" }\n",
                "line 4: `calls.limit = 0`",
            ),
            (
                "version = 1\n[tenant]\ncalls = { limit = 1, per = \"soon\" }\n",
                "line 3: `calls.per = \"soon\"` is not a duration",
            ),
            (
                "version = 1\n[global]\nwall_ms = { limit = 1, per = \"400d\" }\n",
                "outside 1s to 366d",
            ),
            ("version = 1\n[tenant]\ncpu = 3\n", "unknown field `cpu`"),
            ("version = 2\n", "version 2 is not supported"),
            ("version = 1\nmax_tenants = 0\n", "`max_tenants = 0`"),
        ] {
            let err = file(text).expect_err(text).to_string();
            assert!(err.contains("quotas.toml"), "{err}");
            assert!(err.contains(wanted), "{text}: {err}");
        }
    }
}
