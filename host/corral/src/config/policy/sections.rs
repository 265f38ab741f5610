//! The policy's sections other than `[presentation]` (which has its own
//! module), one function each: `[limits]`, `[describe]`, `[[filesystem]]`,
//! `[environment]`, `[context]`, `[resilience]` and `[one_shot]`. Each
//! validates its raw table into the [`Policy`] and reports the first problem
//! with its line, through the `at` of [`Policy::parse`].

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::Path;

use serde::Serialize;
use toml::Spanned;

use super::raw::{Access, RawContext, RawDescribe, RawDir, RawEnv, RawLimits, RawResilience};
use super::{DirGrant, EnvGrant, Policy, PolicyError};
use crate::config::caps::DescribeOverrides;
use crate::config::context::ContextPolicy;
use corral_sandbox::LimitOverrides;

/// Builds the error for a span of the policy text.
type At<'a> = &'a dyn Fn(Range<usize>, String) -> PolicyError;

/// A knob that must be positive when set: `None` keeps the host's default.
fn positive(at: At<'_>, v: &Option<Spanned<u64>>, name: &str) -> Result<Option<u64>, PolicyError> {
    match v {
        None => Ok(None),
        Some(s) if *s.get_ref() == 0 => Err(at(
            s.span(),
            format!("{name} must be greater than 0; remove it to keep the host's default"),
        )),
        Some(s) => Ok(Some(*s.get_ref())),
    }
}

fn size(v: Option<u64>) -> Option<usize> {
    v.map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// `[limits]`: fuel, timeout, memory (MiB in the file, bytes in the
/// policy), output bytes; each positive.
pub(super) fn limits(
    raw: Option<RawLimits>,
    policy: &mut Policy,
    at: At<'_>,
) -> Result<(), PolicyError> {
    let Some(limits) = raw else {
        return Ok(());
    };
    // In the file's order, so the first problem reported is the first one.
    let fuel = positive(at, &limits.fuel, "limits.fuel")?;
    let timeout_ms = positive(at, &limits.timeout_ms, "limits.timeout_ms")?;
    let memory_bytes = match positive(at, &limits.memory_mib, "limits.memory_mib")? {
        None => None,
        Some(mib) => Some(
            usize::try_from(mib)
                .ok()
                .and_then(|m| m.checked_mul(1 << 20))
                .ok_or_else(|| {
                    at(
                        limits.memory_mib.as_ref().map_or(0..0, Spanned::span),
                        format!("limits.memory_mib = {mib} is too large"),
                    )
                })?,
        ),
    };
    let mut overrides = LimitOverrides::default();
    overrides.fuel = fuel;
    overrides.timeout_ms = timeout_ms;
    overrides.memory_bytes = memory_bytes;
    overrides.output_bytes = size(positive(at, &limits.output_bytes, "limits.output_bytes")?);
    policy.limits = overrides;
    Ok(())
}

/// `[describe]`: the plugin's own caps on what its `describe` may declare;
/// each positive.
pub(super) fn describe(
    raw: Option<RawDescribe>,
    policy: &mut Policy,
    at: At<'_>,
) -> Result<(), PolicyError> {
    let Some(d) = raw else {
        return Ok(());
    };
    policy.describe = DescribeOverrides {
        timeout_ms: positive(at, &d.timeout_ms, "describe.timeout_ms")?,
        max_tools: size(positive(at, &d.max_tools, "describe.max_tools")?),
        max_description_chars: size(positive(
            at,
            &d.max_description_chars,
            "describe.max_description_chars",
        )?),
        max_schema_bytes: size(positive(
            at,
            &d.max_schema_bytes,
            "describe.max_schema_bytes",
        )?),
        max_output_bytes: size(positive(
            at,
            &d.max_output_bytes,
            "describe.max_output_bytes",
        )?),
    };
    Ok(())
}

/// `[[filesystem]]`: each host directory (relative to the policy file's
/// directory `base`) must exist; each guest path is granted once.
pub(super) fn filesystem(
    raw: Vec<RawDir>,
    base: &Path,
    policy: &mut Policy,
    at: At<'_>,
) -> Result<(), PolicyError> {
    let mut guests = BTreeSet::new();
    for dir in raw {
        let guest =
            corral_sandbox::guest_path(dir.guest.get_ref()).map_err(|m| at(dir.guest.span(), m))?;
        if !guests.insert(guest.clone()) {
            return Err(at(
                dir.guest.span(),
                format!(
                    "guest path `{guest}` is granted twice; keep one [[filesystem]] entry for it"
                ),
            ));
        }
        let written = dir.host.get_ref().clone();
        let host = base.join(&written).canonicalize().map_err(|err| {
            at(
                dir.host.span(),
                format!(
                    "host directory `{written}` (relative to this file) cannot be used: {err}; \
                     create it or fix the path"
                ),
            )
        })?;
        if !host.is_dir() {
            return Err(at(
                dir.host.span(),
                format!("host path `{written}` is not a directory"),
            ));
        }
        policy.filesystem.push(DirGrant {
            host_as_written: written,
            host,
            guest,
            writable: dir.access == Access::ReadWrite,
        });
    }
    Ok(())
}

/// `[environment]`: variables set to a value or passed through from the
/// host, never both for one name.
pub(super) fn environment(
    raw: Option<RawEnv>,
    policy: &mut Policy,
    at: At<'_>,
) -> Result<(), PolicyError> {
    let Some(env) = raw else {
        return Ok(());
    };
    for (name, value) in env.set {
        let name = corral_sandbox::env_name(name.get_ref()).map_err(|m| at(name.span(), m))?;
        policy.environment.push(EnvGrant::Set { name, value });
    }
    for name in env.pass {
        let checked = corral_sandbox::env_name(name.get_ref()).map_err(|m| at(name.span(), m))?;
        if policy
            .environment
            .iter()
            .any(|g| matches!(g, EnvGrant::Set { name: n, .. } if *n == checked))
        {
            return Err(at(
                name.span(),
                format!("`{checked}` is both set and passed through; keep one"),
            ));
        }
        policy.environment.push(EnvGrant::Pass { name: checked });
    }
    Ok(())
}

/// `[context]`: one of `allow`, `deny` or `pass_through = true`.
pub(super) fn context(
    raw: Option<Spanned<RawContext>>,
    policy: &mut Policy,
    at: At<'_>,
) -> Result<(), PolicyError> {
    let Some(context) = raw else {
        return Ok(());
    };
    let span = context.span();
    let c = context.into_inner();
    policy.context = Some(match (c.allow, c.deny, c.pass_through) {
        (Some(keys), None, false) => ContextPolicy::allow(keys),
        (None, Some(keys), false) => ContextPolicy::deny(keys),
        (None, None, true) => ContextPolicy::PassThrough,
        (None, None, false) => ContextPolicy::default(),
        _ => {
            return Err(at(
                span,
                "[context] takes one of `allow`, `deny` or `pass_through = true`, not several"
                    .into(),
            ));
        }
    });
    Ok(())
}

/// `[resilience]`: the plugin-wide table and `[resilience.tools.NAME]`, each
/// checked by the resilience configuration's own rule.
pub(super) fn resilience(
    raw: Option<Spanned<RawResilience>>,
    policy: &mut Policy,
    at: At<'_>,
) -> Result<(), PolicyError> {
    let Some(table) = raw else {
        return Ok(());
    };
    let span = table.span();
    let r = table.into_inner();
    let plugin = crate::config::resilience::ResilienceTable {
        retry: r.retry,
        circuit_breaker: r.circuit_breaker,
        rate_limit: r.rate_limit,
        cache: r.cache,
        health: r.health,
        audit: r.audit,
    };
    for (name, table) in std::iter::once(("(the plugin)", &plugin))
        .chain(r.tools.iter().map(|(n, t)| (n.as_str(), t)))
    {
        crate::config::resilience::check_table(table)
            .map_err(|m| at(span.clone(), format!("[resilience] {name}: {m}")))?;
    }
    policy.resilience = crate::config::resilience::ResiliencePolicy {
        plugin,
        tools: r.tools,
    };
    Ok(())
}

/// `[one_shot]`: each tool's advice, text a model reads, so checked like
/// any text a plugin declares.
pub(super) fn one_shot(
    raw: BTreeMap<String, Spanned<String>>,
    policy: &mut Policy,
    at: At<'_>,
) -> Result<(), PolicyError> {
    for (tool, advice) in raw {
        corral_names::text::check(
            &format!("the one-shot advice of `{tool}`"),
            advice.get_ref(),
        )
        .map_err(|m| at(advice.span(), m))?;
        policy.one_shot.insert(tool, advice.into_inner());
    }
    Ok(())
}

/// `[metadata.<tool>]`: texts checked like a spec's own.
pub(super) fn metadata(
    raw: BTreeMap<String, super::raw::RawMetadata>,
    policy: &mut Policy,
    at: At<'_>,
) -> Result<(), PolicyError> {
    for (tool, m) in raw {
        let text = |field: &str, value: &Spanned<String>| {
            corral_names::text::check(&format!("[metadata.{tool}] {field}"), value.get_ref())
                .map_err(|msg| at(value.span(), msg))
                .map(|()| value.get_ref().clone())
        };
        let category = m
            .category
            .as_ref()
            .map(|c| text("category", c))
            .transpose()?;
        let keywords = m
            .keywords
            .as_ref()
            .map(|list| {
                list.iter()
                    .map(|k| text("keyword", k))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        policy.metadata.insert(
            tool,
            MetadataOverride {
                category,
                keywords,
                idempotent: m.idempotent,
                parallelizable: m.parallelizable,
                latency: m.latency,
            },
        );
    }
    Ok(())
}

/// `[quotas]`: each tenant's quotas for the plugin's tools, checked by the
/// rules of the host's quotas file (`config::quota`).
pub(super) fn quotas(
    raw: Option<crate::config::quota::RawQuotaSet>,
    policy: &mut Policy,
    at: At<'_>,
) -> Result<(), PolicyError> {
    if let Some(raw) = raw {
        policy.quotas = raw
            .check()
            .map_err(|(span, message)| at(span, format!("[quotas]: {message}")))?;
    }
    Ok(())
}

/// `[metadata.<tool>]` of a policy: each field set replaces the tool's own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct MetadataOverride {
    /// The tool's category.
    pub category: Option<String>,
    /// Its search keywords.
    pub keywords: Option<Vec<String>>,
    /// Calling twice with the same arguments does what calling once does.
    pub idempotent: Option<bool>,
    /// Several calls may run at once.
    pub parallelizable: Option<bool>,
    /// How long a call usually takes.
    pub latency: Option<corral_sandbox::Latency>,
}

impl MetadataOverride {
    /// Applies the fields set to `metadata`.
    pub fn apply(&self, metadata: &mut corral_sandbox::ToolMetadata) {
        if let Some(category) = &self.category {
            metadata.category = category.clone();
        }
        if let Some(keywords) = &self.keywords {
            metadata.keywords = keywords.clone();
        }
        if let Some(idempotent) = self.idempotent {
            metadata.idempotent = idempotent;
        }
        if let Some(parallelizable) = self.parallelizable {
            metadata.parallelizable = parallelizable;
        }
        if let Some(latency) = self.latency {
            metadata.latency = latency;
        }
    }
}
