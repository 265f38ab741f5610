//! The policy file as TOML gives it, before validation: every field spanned
//! where a message needs its line, unknown keys refused.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    pub(super) version: Spanned<u32>,
    pub(super) sha256: Option<Spanned<String>>,
    pub(super) integrity: Option<RawIntegrity>,
    pub(super) limits: Option<RawLimits>,
    pub(super) describe: Option<RawDescribe>,
    #[serde(default)]
    pub(super) filesystem: Vec<RawDir>,
    pub(super) environment: Option<RawEnv>,
    pub(super) http: Option<RawHttp>,
    pub(super) approval: Option<RawApproval>,
    pub(super) context: Option<Spanned<RawContext>>,
    pub(super) presentation: Option<RawPresentation>,
    pub(super) resilience: Option<Spanned<RawResilience>>,
    pub(super) one_shot: Option<BTreeMap<String, Spanned<String>>>,
    pub(super) any_component: Option<bool>,
    pub(super) metadata: Option<BTreeMap<String, RawMetadata>>,
    pub(super) tasks: Option<super::TaskPolicy>,
    pub(super) client: Option<super::client::RawClient>,
    pub(super) quotas: Option<crate::config::quota::RawQuotaSet>,
    pub(super) record: Option<super::record::RawRecord>,
}

/// `[integrity]`: who must have signed the plugin.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIntegrity {
    #[serde(default)]
    pub(super) signed_by: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) identities: Vec<Spanned<RawIdentity>>,
}

/// `[integrity] identities = [{ subject, issuer }]`: a keyless signer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIdentity {
    pub(super) subject: String,
    pub(super) issuer: String,
}

/// `[metadata.<tool>]`: what a tool's own spec does not say (components
/// outside corral's world declare none of it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMetadata {
    pub(super) category: Option<Spanned<String>>,
    pub(super) keywords: Option<Vec<Spanned<String>>>,
    pub(super) idempotent: Option<bool>,
    pub(super) parallelizable: Option<bool>,
    pub(super) latency: Option<corral_sandbox::Latency>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDescribe {
    pub(super) timeout_ms: Option<Spanned<u64>>,
    pub(super) max_tools: Option<Spanned<u64>>,
    pub(super) max_description_chars: Option<Spanned<u64>>,
    pub(super) max_schema_bytes: Option<Spanned<u64>>,
    pub(super) max_output_bytes: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) fuel: Option<Spanned<u64>>,
    pub(super) timeout_ms: Option<Spanned<u64>>,
    pub(super) memory_mib: Option<Spanned<u64>>,
    pub(super) output_bytes: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDir {
    pub(super) host: Spanned<String>,
    pub(super) guest: Spanned<String>,
    #[serde(default)]
    pub(super) access: Access,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Access {
    #[default]
    ReadOnly,
    ReadWrite,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEnv {
    #[serde(default)]
    pub(super) set: BTreeMap<Spanned<String>, String>,
    #[serde(default)]
    pub(super) pass: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttp {
    pub(super) allow: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) allow_private_networks: bool,
    #[serde(default)]
    pub(super) credentials: Vec<RawCredential>,
}

/// `[[http.credentials]]`: a header the host sets with secrets.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCredential {
    pub(super) host: Spanned<String>,
    pub(super) header: Spanned<String>,
    pub(super) value: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApproval {
    pub(super) require: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawContext {
    pub(super) allow: Option<Vec<String>>,
    pub(super) deny: Option<Vec<String>>,
    #[serde(default)]
    pub(super) pass_through: bool,
}

/// `[resilience]`: the plugin-wide table's entries and `tools`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawResilience {
    pub(super) retry: Option<crate::config::resilience::RetryConfig>,
    pub(super) circuit_breaker: Option<crate::config::resilience::BreakerConfig>,
    pub(super) rate_limit: Option<crate::config::resilience::RateLimitConfig>,
    pub(super) cache: Option<crate::config::resilience::CacheConfig>,
    pub(super) health: Option<crate::config::resilience::HealthThresholds>,
    pub(super) audit: Option<crate::config::resilience::AuditConfig>,
    #[serde(default)]
    pub(super) tools: BTreeMap<String, crate::config::resilience::ResilienceTable>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPresentation {
    pub(super) prefix: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) rename: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub(super) notes: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub(super) descriptions: BTreeMap<String, Spanned<String>>,
}
