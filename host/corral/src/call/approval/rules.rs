//! A reviewer that decides from a file a human writes: allow or deny by tool
//! name, plugin, gate and argument patterns, first matching rule wins, with a
//! required default.
//!
//! ```toml
//! version = 1
//! default = "deny"                    # "allow" or "deny", required
//! default_reason = "not on the list"  # optional
//!
//! [[rule]]
//! tool = "notes_*"         # glob on the tool name        (default "*")
//! plugin = "notes"         # glob on the plugin name      (default "*")
//! gate = "declared"        # "declared" or "requested"    (default: both)
//! decision = "allow"       # "allow" or "deny", required
//! reason = "drafts only"   # shown when denying           (optional)
//! # Every listed argument must match: JSON pointer -> glob on the value
//! # (strings as they are, other values as JSON text). A missing value
//! # does not match.
//! arguments = { "/name" = "draft-*" }
//! ```
//!
//! Globs are [`globset`] globs: `*` matches any run of characters (including
//! `/`), `?` one character, `[ab]` a class. Unknown keys are errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use serde_json::Value;

use super::{ApprovalDecision, Gate, ReviewFuture, ReviewRequest, Reviewer};

/// Version of the rules format.
pub const RULES_VERSION: u32 = 1;

/// Why a rules file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RulesError {
    /// The file cannot be read.
    #[error("cannot read approval rules {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not have the documented shape.
    #[error("approval rules {} are invalid: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line and how to fix it.
        message: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Allow,
    Deny,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    version: u32,
    default: Decision,
    default_reason: Option<String>,
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    tool: Option<String>,
    plugin: Option<String>,
    gate: Option<GateName>,
    decision: Decision,
    reason: Option<String>,
    #[serde(default)]
    arguments: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum GateName {
    Declared,
    Requested,
}

#[derive(Debug)]
struct Rule {
    tool: GlobMatcher,
    plugin: GlobMatcher,
    gate: Option<Gate>,
    decision: Decision,
    reason: Option<String>,
    arguments: Vec<(String, GlobMatcher)>,
}

impl Rule {
    fn matches(&self, request: &ReviewRequest) -> bool {
        self.tool.is_match(&request.tool)
            && self.plugin.is_match(&request.plugin)
            && self.gate.is_none_or(|g| g == request.gate)
            && self.arguments.iter().all(|(pointer, glob)| {
                match request.arguments.pointer(pointer) {
                    None => false,
                    Some(Value::String(s)) => glob.is_match(s),
                    Some(other) => glob.is_match(other.to_string()),
                }
            })
    }
}

/// Decides from rules; see the module docs for the file format.
#[derive(Debug)]
pub struct RulesReviewer {
    origin: String,
    rules: Vec<Rule>,
    default: Decision,
    default_reason: Option<String>,
}

impl RulesReviewer {
    /// Reads and checks the rules in `path`.
    ///
    /// # Errors
    /// [`RulesError`] naming the file, and for invalid content the line.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, RulesError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| RulesError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Checks rules given as text; `origin` names them in errors and reasons.
    ///
    /// # Errors
    /// [`RulesError::Invalid`] naming `origin` and what to fix.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, RulesError> {
        let invalid = |message: String| RulesError::Invalid {
            path: origin.to_path_buf(),
            message,
        };
        let raw: RawFile = toml::from_str(text).map_err(|err| invalid(err.to_string()))?;
        if raw.version != RULES_VERSION {
            return Err(invalid(format!(
                "version {} is not supported; write `version = {RULES_VERSION}`",
                raw.version
            )));
        }
        let glob = |i: usize, what: &str, pattern: &str| {
            Glob::new(pattern)
                .map(|g| g.compile_matcher())
                .map_err(|err| invalid(format!("rule {}: {what} `{pattern}`: {err}", i + 1)))
        };
        let mut rules = Vec::with_capacity(raw.rule.len());
        for (i, rule) in raw.rule.into_iter().enumerate() {
            let mut arguments = Vec::new();
            for (pointer, pattern) in rule.arguments {
                if !pointer.starts_with('/') {
                    return Err(invalid(format!(
                        "rule {}: argument key `{pointer}` is not a JSON pointer; \
                         write it as `/{pointer}`",
                        i + 1
                    )));
                }
                let matcher = glob(i, "argument pattern", &pattern)?;
                arguments.push((pointer, matcher));
            }
            rules.push(Rule {
                tool: glob(i, "tool pattern", rule.tool.as_deref().unwrap_or("*"))?,
                plugin: glob(i, "plugin pattern", rule.plugin.as_deref().unwrap_or("*"))?,
                gate: rule.gate.map(|g| match g {
                    GateName::Declared => Gate::Declared,
                    GateName::Requested => Gate::Requested,
                }),
                decision: rule.decision,
                reason: rule.reason,
                arguments,
            });
        }
        Ok(Self {
            origin: origin.display().to_string(),
            rules,
            default: raw.default,
            default_reason: raw.default_reason,
        })
    }

    /// The decision for `request`, without the async wrapper.
    pub fn decide(&self, request: &ReviewRequest) -> ApprovalDecision {
        let (decision, reason) = match self.rules.iter().position(|r| r.matches(request)) {
            Some(i) => {
                let rule = &self.rules[i];
                let reason = rule
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("denied by rule {} of {}", i + 1, self.origin));
                (rule.decision, reason)
            }
            None => (
                self.default,
                self.default_reason.clone().unwrap_or_else(|| {
                    format!("no rule of {} matches; the default is deny", self.origin)
                }),
            ),
        };
        match decision {
            Decision::Allow => ApprovalDecision::Continue,
            Decision::Deny => ApprovalDecision::ExitEarly(reason),
        }
    }
}

impl Reviewer for RulesReviewer {
    fn name(&self) -> &str {
        "rules"
    }

    fn review<'a>(&'a self, request: &'a ReviewRequest) -> ReviewFuture<'a> {
        Box::pin(async move { Ok(self.decide(request)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(tool: &str, plugin: &str, gate: Gate, arguments: Value) -> ReviewRequest {
        ReviewRequest::new(
            gate,
            tool,
            plugin,
            String::new(),
            String::new(),
            arguments,
            super::super::DEFAULT_REVIEW_TIMEOUT,
        )
    }

    const RULES: &str = r#"
version = 1
default = "deny"

[[rule]]
tool = "notes_delete"
arguments = { "/name" = "draft-*" }
decision = "allow"

[[rule]]
plugin = "notes"
gate = "requested"
decision = "allow"

[[rule]]
tool = "notes_*"
decision = "deny"
reason = "only drafts may go"
"#;

    #[test]
    fn first_matching_rule_wins_then_the_default() {
        let rules = RulesReviewer::parse(RULES, Path::new("rules.toml")).unwrap();
        let decide = |tool, plugin, gate, args| rules.decide(&request(tool, plugin, gate, args));
        assert_eq!(
            decide(
                "notes_delete",
                "notes",
                Gate::Declared,
                json!({"name": "draft-1"})
            ),
            ApprovalDecision::Continue
        );
        assert_eq!(
            decide(
                "notes_delete",
                "notes",
                Gate::Declared,
                json!({"name": "taxes"})
            ),
            ApprovalDecision::ExitEarly("only drafts may go".into())
        );
        assert_eq!(
            decide("notes_delete", "notes", Gate::Declared, json!({})),
            ApprovalDecision::ExitEarly("only drafts may go".into()),
            "a missing argument does not match"
        );
        assert_eq!(
            decide(
                "notes_delete",
                "notes",
                Gate::Requested,
                json!({"name": "taxes"})
            ),
            ApprovalDecision::Continue
        );
        assert_eq!(
            decide("sha256", "encode", Gate::Declared, json!({})),
            ApprovalDecision::ExitEarly(
                "no rule of rules.toml matches; the default is deny".into()
            )
        );
    }

    #[test]
    fn mistakes_are_reported_with_the_file_and_a_fix() {
        let err = |text: &str| {
            RulesReviewer::parse(text, Path::new("r.toml"))
                .unwrap_err()
                .to_string()
        };
        let e = err("version = 1\ndefault = \"maybe\"\n");
        assert!(e.starts_with("approval rules r.toml are invalid"), "{e}");
        assert!(e.contains("line 2"), "{e}");
        assert!(e.contains("allow") && e.contains("deny"), "{e}");
        let e =
            err("version = 1\ndefault = \"deny\"\n[[rule]]\ndecision = \"allow\"\ntools = \"x\"\n");
        assert!(e.contains("unknown field `tools`"), "{e}");
        let e = err("version = 2\ndefault = \"deny\"\n");
        assert!(e.contains("write `version = 1`"), "{e}");
        let e = err(
            "version = 1\ndefault = \"deny\"\n[[rule]]\ndecision = \"allow\"\narguments = { name = \"x\" }\n",
        );
        assert!(e.contains("write it as `/name`"), "{e}");
        let e =
            err("version = 1\ndefault = \"deny\"\n[[rule]]\ndecision = \"allow\"\ntool = \"[\"\n");
        assert!(e.contains("rule 1: tool pattern `[`"), "{e}");
    }
}
