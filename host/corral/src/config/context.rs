//! Which out-of-band context keys reach which plugin (Embabel's
//! `ToolCallContext`, its merge table and its allow/deny converters).
//!
//! Context comes from two places: the host (process level, set once with
//! [`HostBuilder::context`](crate::HostBuilder::context)) and the call
//! ([`CallOptions::context`](crate::CallOptions::context)). They are merged
//! with the call's values winning on conflict:
//!
//! | host           | call               | effective                      |
//! |----------------|--------------------|--------------------------------|
//! | `tenant=acme`  |                    | `tenant=acme`                  |
//! |                | `token=xyz`        | `token=xyz`                    |
//! | `tenant=acme`  | `token=xyz`        | `tenant=acme, token=xyz`       |
//! | `tenant=acme`  | `tenant=override`  | `tenant=override`              |
//!
//! Then, at the plugin boundary, the plugin's [`ContextPolicy`] filters the
//! merged context. Plans and pipelines pass the merged context to every step;
//! each step's plugin applies its own policy. Context never appears in a tool's
//! schema, so a model can neither see nor forge it.

use std::collections::{BTreeSet, HashMap};

use crate::call::CallContext;

/// Which context keys may cross into one plugin.
///
/// Default: [`ContextPolicy::Allow`] with no keys: for untrusted plugins,
/// nothing crosses unless allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContextPolicy {
    /// Only these keys cross (Embabel's `allowKeys`).
    Allow(BTreeSet<String>),
    /// Every key except these crosses (Embabel's `denyKeys`).
    Deny(BTreeSet<String>),
    /// Every key crosses (Embabel's `passThrough`): for plugins you trust
    /// as much as the host.
    PassThrough,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self::Allow(BTreeSet::new())
    }
}

impl ContextPolicy {
    /// Allows exactly `keys`.
    pub fn allow<I: IntoIterator<Item = S>, S: Into<String>>(keys: I) -> Self {
        Self::Allow(keys.into_iter().map(Into::into).collect())
    }

    /// Allows every key but `keys`.
    pub fn deny<I: IntoIterator<Item = S>, S: Into<String>>(keys: I) -> Self {
        Self::Deny(keys.into_iter().map(Into::into).collect())
    }

    /// Whether `key` may cross.
    pub fn admits(&self, key: &str) -> bool {
        match self {
            Self::Allow(keys) => keys.contains(key),
            Self::Deny(keys) => !keys.contains(key),
            Self::PassThrough => true,
        }
    }

    /// A one-line description for `corral describe` and logs, e.g.
    /// `only tenant, user` or `none`.
    pub fn describe(&self) -> String {
        let list = |keys: &BTreeSet<String>| keys.iter().cloned().collect::<Vec<_>>().join(", ");
        match self {
            Self::Allow(keys) if keys.is_empty() => "none".into(),
            Self::Allow(keys) => format!("only {}", list(keys)),
            Self::Deny(keys) if keys.is_empty() => "all".into(),
            Self::Deny(keys) => format!("all except {}", list(keys)),
            Self::PassThrough => "all".into(),
        }
    }
}

/// The host's side of context: its own pairs and which keys reach which
/// plugin. Holds the one precedence rule of context policies
/// ([`ContextConfig::policy_for`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct ContextConfig {
    /// Process-level pairs, under every call's own.
    pub host: CallContext,
    /// Per-plugin policies set by the host's configuration, by file stem.
    pub plugins: HashMap<String, ContextPolicy>,
    /// The policy of plugins with neither.
    pub default: ContextPolicy,
}

impl ContextConfig {
    /// The context policy of the plugin `name`: the host configuration's if
    /// set, else `from_file` (the plugin's policy file's `[context]`), else
    /// the host default.
    pub(crate) fn policy_for<'a>(
        &'a self,
        name: &str,
        from_file: Option<&'a ContextPolicy>,
    ) -> &'a ContextPolicy {
        self.plugins
            .get(name)
            .or(from_file)
            .unwrap_or(&self.default)
    }

    /// The pairs of a call's `context` (merged over the host's) that reach the
    /// plugin `name`; withheld keys are logged at DEBUG.
    pub(crate) fn for_plugin(
        &self,
        name: &str,
        from_file: Option<&ContextPolicy>,
        call: &CallContext,
    ) -> Vec<(String, String)> {
        let (pass, withheld) = effective(&self.host, call, self.policy_for(name, from_file));
        if !withheld.is_empty() {
            tracing::debug!(
                plugin = name,
                "context keys withheld by the plugin's policy: {}",
                withheld.join(", ")
            );
        }
        pass
    }
}

/// The host's context merged with the call's (the call wins), then filtered by
/// `policy`. Returns the pairs that cross and the keys that were withheld.
pub(crate) fn effective(
    host: &CallContext,
    call: &CallContext,
    policy: &ContextPolicy,
) -> (Vec<(String, String)>, Vec<String>) {
    let mut merged = host.clone();
    for (key, value) in call.iter() {
        merged.insert(key, value);
    }
    let mut pass = Vec::new();
    let mut withheld = Vec::new();
    for (key, value) in merged.iter() {
        if policy.admits(key) {
            pass.push((key.to_string(), value.to_string()));
        } else {
            withheld.push(key.to_string());
        }
    }
    (pass, withheld)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(pairs: &[(&str, &str)]) -> CallContext {
        pairs.iter().copied().collect()
    }

    #[test]
    fn merge_table_of_reference_004() {
        let all = ContextPolicy::PassThrough;
        type Pairs<'a> = &'a [(&'a str, &'a str)];
        let rows: [(Pairs, Pairs, Pairs); 4] = [
            (&[("tenant", "acme")], &[], &[("tenant", "acme")]),
            (&[], &[("token", "xyz")], &[("token", "xyz")]),
            (
                &[("tenant", "acme")],
                &[("token", "xyz")],
                &[("tenant", "acme"), ("token", "xyz")],
            ),
            (
                &[("tenant", "acme")],
                &[("tenant", "override")],
                &[("tenant", "override")],
            ),
        ];
        for (host, call, expected) in rows {
            let (pass, withheld) = effective(&ctx(host), &ctx(call), &all);
            let expected: Vec<(String, String)> = expected
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(pass, expected);
            assert!(withheld.is_empty());
        }
    }

    #[test]
    fn policies_filter_keys() {
        let merged = ctx(&[("tenant", "acme"), ("token", "secret"), ("user", "ana")]);
        let none = CallContext::new();
        let keys = |policy: &ContextPolicy| {
            let (pass, withheld) = effective(&none, &merged, policy);
            (
                pass.into_iter().map(|(k, _)| k).collect::<Vec<_>>(),
                withheld,
            )
        };
        assert_eq!(
            keys(&ContextPolicy::default()),
            (vec![], vec!["tenant".into(), "token".into(), "user".into()])
        );
        assert_eq!(
            keys(&ContextPolicy::allow(["tenant", "user"])),
            (vec!["tenant".into(), "user".into()], vec!["token".into()])
        );
        assert_eq!(
            keys(&ContextPolicy::deny(["token"])),
            (vec!["tenant".into(), "user".into()], vec!["token".into()])
        );
        assert_eq!(ContextPolicy::default().describe(), "none");
        assert_eq!(
            ContextPolicy::deny(["token"]).describe(),
            "all except token"
        );
    }
}
