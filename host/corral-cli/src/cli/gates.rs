//! Flags of the commands that run calls (`call`, `plan`): who approves gated
//! calls, where decisions are recorded, and which context reaches which plugin.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use corral::{
    AuditLog, AutoApprove, CallContext, ConsoleReviewer, ContextPolicy, DenyAll, HostBuilder,
    RulesReviewer, StandingApprovals,
};

/// Who decides gated calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approve {
    /// Approve everything.
    Auto,
    /// Deny everything.
    Deny,
    /// Ask at the terminal (`/dev/tty`).
    Console,
    /// Decide from a rules file.
    Rules(PathBuf),
}

impl FromStr for Approve {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        match raw {
            "auto" => Ok(Self::Auto),
            "deny" => Ok(Self::Deny),
            "console" => Ok(Self::Console),
            _ => match raw.strip_prefix("rules:") {
                Some(path) if !path.is_empty() => Ok(Self::Rules(path.into())),
                _ => Err(format!(
                    "expected auto, deny, console or rules:FILE, got `{raw}`"
                )),
            },
        }
    }
}

/// Approval and context flags.
#[derive(Args, Debug, Clone)]
pub struct GateArgs {
    /// Who decides calls that need approval: auto, deny, console (prompts on
    /// the terminal) or rules:FILE [default: none, so gated calls fail with a
    /// configuration error]
    #[arg(long, value_name = "MODE")]
    approve: Option<Approve>,
    /// Also require approval for this tool, whatever its spec says
    /// (repeatable)
    #[arg(long, value_name = "TOOL")]
    require_approval: Vec<String>,
    /// How long a review may take before it counts as deny, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 120_000)]
    review_timeout_ms: u64,
    /// Append every gated call and decision to this JSON-lines file;
    /// `{replica}` in it is replaced by the replica id (one file per
    /// replica on a shared volume)
    #[arg(long, value_name = "FILE")]
    audit_log: Option<PathBuf>,

    /// Keep "always allow" decisions in this file (bound to each plugin's
    /// sha256), shared with every process using it: read again when it
    /// changes, merged under a lock when written [default: they last for
    /// this process only]
    #[arg(long, value_name = "FILE")]
    standing_approvals: Option<PathBuf>,
    /// Only read the --standing-approvals file (a read-only volume, a
    /// Kubernetes ConfigMap): "always" answers then last for this process
    #[arg(long, requires = "standing_approvals")]
    standing_approvals_read_only: bool,
    /// Out-of-band context for the call, as KEY=VALUE (repeatable); reaches a
    /// plugin only if its context policy admits the key
    #[arg(long = "context", value_name = "KEY=VALUE", value_parser = parse_pair)]
    context: Vec<(String, String)>,
    /// Let these context keys reach PLUGIN, as PLUGIN=KEY[,KEY...]
    /// (repeatable; by default no key reaches any plugin)
    #[arg(long, value_name = "PLUGIN=KEYS", value_parser = parse_pair)]
    context_allow: Vec<(String, String)>,
    /// Let every context key but these reach PLUGIN, as PLUGIN=KEY[,KEY...]
    /// (repeatable)
    #[arg(long, value_name = "PLUGIN=KEYS", value_parser = parse_pair)]
    context_deny: Vec<(String, String)>,
}

/// Parses `KEY=VALUE`; the value may contain `=`.
pub fn parse_pair(raw: &str) -> Result<(String, String), String> {
    match raw.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got `{raw}`")),
    }
}

fn keys(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(String::from)
        .collect()
}

impl GateArgs {
    /// Whether `--approve` named a reviewer.
    pub fn has_reviewer(&self) -> bool {
        self.approve.is_some()
    }

    /// The call's own context.
    pub fn call_context(&self) -> CallContext {
        self.context.iter().cloned().collect()
    }

    /// Applies the flags to `builder`; `replica` names this process in the
    /// audit log.
    pub fn configure(
        &self,
        mut builder: HostBuilder,
        replica: &str,
    ) -> anyhow::Result<HostBuilder> {
        builder = match &self.approve {
            None => builder,
            Some(Approve::Auto) => builder.reviewer(AutoApprove),
            Some(Approve::Deny) => builder.reviewer(DenyAll),
            Some(Approve::Console) => builder.reviewer(ConsoleReviewer::new()),
            Some(Approve::Rules(path)) => builder.reviewer(
                RulesReviewer::from_file(path).context("--approve rules:FILE is unusable")?,
            ),
        };
        for tool in &self.require_approval {
            builder = builder.require_approval(tool);
        }
        builder = builder.review_timeout(Duration::from_millis(self.review_timeout_ms));
        if let Some(path) = &self.audit_log {
            // A file name, whatever the id holds.
            let name = replica.replace(['/', '\\', '\0'], "_");
            let path = PathBuf::from(path.to_string_lossy().replace("{replica}", &name));
            builder = builder.audit_log(AuditLog::open(path)?.with_replica(replica));
        }
        if let Some(path) = &self.standing_approvals {
            builder = builder.standing_approvals(if self.standing_approvals_read_only {
                StandingApprovals::file_read_only(path)?
            } else {
                StandingApprovals::file(path)?
            });
        }
        for (plugin, list) in &self.context_allow {
            builder = builder.context_policy(plugin, ContextPolicy::allow(keys(list)));
        }
        for (plugin, list) in &self.context_deny {
            builder = builder.context_policy(plugin, ContextPolicy::deny(keys(list)));
        }
        Ok(builder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approve_modes_parse() {
        assert_eq!("auto".parse(), Ok(Approve::Auto));
        assert_eq!(
            "rules:a=b.toml".parse(),
            Ok(Approve::Rules("a=b.toml".into()))
        );
        assert!("rules:".parse::<Approve>().is_err());
        assert!("yes".parse::<Approve>().unwrap_err().contains("rules:FILE"));
    }

    #[test]
    fn context_pairs_need_a_key() {
        assert_eq!(parse_pair("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert!(parse_pair("=x").is_err());
        assert!(parse_pair("novalue").is_err());
        assert_eq!(keys("a, b,,c"), ["a", "b", "c"]);
    }
}
