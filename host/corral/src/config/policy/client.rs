//! `[client]` of a policy: what the plugin's guest may ask the MCP client
//! that made a call (WIT 0.3.0 `corral:tool/client`). Deny by default: a
//! policy without the section grants nothing, and a request without its
//! grant gets `denied`.
//!
//! ```toml
//! [client]
//! elicitation = true                                   # elicit: ask the person
//! sampling = { max_tokens = 500, calls_per_call = 2 }  # sample: ask the client's model
//! roots = true                                         # roots: the client's workspace roots
//! ```
//!
//! `sampling.required_by = ["tool"]` names the plugin's tools that cannot
//! work without sampling: an MCP client that does not declare the
//! capability is refused before their calls (`MissingRequiredClientCapability`,
//! -32021). `sampling.tokens_per_hour = N` is a budget per tenant (the
//! context key `tenant`) for the plugin's calls: each request counts the
//! `max-tokens` it asks for, and one past the budget gets `over-budget`
//! without reaching the client. It is kept per process (per replica) and
//! starts afresh when the plugin's file or policy changes.

use std::collections::BTreeSet;

use serde::Deserialize;
use toml::Spanned;

use corral_sandbox::{ClientGrants, SamplingGrant};

use super::PolicyError;

/// Makes the error at a span of the file (the caller's, with the line).
type At<'a> = &'a dyn Fn(std::ops::Range<usize>, String) -> PolicyError;

/// The most tokens `sampling.max_tokens` may allow per request: 100 000.
pub const MAX_SAMPLING_TOKENS: u32 = 100_000;
/// The most requests `sampling.calls_per_call` may allow per call: 100.
pub const MAX_SAMPLING_CALLS: u32 = 100;
/// The most tokens `sampling.tokens_per_hour` may allow a tenant: 10 000 000.
pub const MAX_SAMPLING_TOKENS_PER_HOUR: u32 = 10_000_000;

/// `[client]` as TOML gives it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClient {
    #[serde(default)]
    elicitation: bool,
    sampling: Option<Spanned<RawSampling>>,
    #[serde(default)]
    roots: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSampling {
    max_tokens: u32,
    calls_per_call: u32,
    tokens_per_hour: Option<u32>,
    #[serde(default)]
    required_by: BTreeSet<String>,
}

/// The grants of `[client]`, and the tools that require sampling.
///
/// # Errors
/// `sampling.max_tokens` outside 1..=[`MAX_SAMPLING_TOKENS`],
/// `sampling.calls_per_call` outside 1..=[`MAX_SAMPLING_CALLS`], or
/// `sampling.tokens_per_hour` outside `max_tokens`..=[`MAX_SAMPLING_TOKENS_PER_HOUR`],
/// with the line.
pub(super) fn grants(
    raw: Option<RawClient>,
    at: At<'_>,
) -> Result<(ClientGrants, BTreeSet<String>), PolicyError> {
    let Some(raw) = raw else {
        return Ok((ClientGrants::default(), BTreeSet::new()));
    };
    let mut required_by = BTreeSet::new();
    let sampling = match raw.sampling {
        None => None,
        Some(spanned) => {
            let span = spanned.span();
            let sampling = spanned.into_inner();
            let within = |value: u32, most: u32, key: &str| {
                if (1..=most).contains(&value) {
                    Ok(())
                } else {
                    Err(at(
                        span.clone(),
                        format!(
                            "[client] sampling.{key} must be between 1 and {most}, not {value}"
                        ),
                    ))
                }
            };
            within(sampling.max_tokens, MAX_SAMPLING_TOKENS, "max_tokens")?;
            within(
                sampling.calls_per_call,
                MAX_SAMPLING_CALLS,
                "calls_per_call",
            )?;
            required_by = sampling.required_by;
            let grant = SamplingGrant::new(sampling.max_tokens, sampling.calls_per_call);
            match sampling.tokens_per_hour {
                None => Some(grant),
                Some(tokens)
                    if (sampling.max_tokens..=MAX_SAMPLING_TOKENS_PER_HOUR).contains(&tokens) =>
                {
                    Some(grant.with_tokens_per_hour(tokens))
                }
                Some(tokens) => {
                    return Err(at(
                        span,
                        format!(
                            "[client] sampling.tokens_per_hour must be between max_tokens ({}) \
                             and {MAX_SAMPLING_TOKENS_PER_HOUR}, not {tokens}: a smaller budget \
                             could never pay for one request",
                            sampling.max_tokens
                        ),
                    ));
                }
            }
        }
    };
    Ok((
        ClientGrants::new(raw.elicitation, sampling, raw.roots),
        required_by,
    ))
}
