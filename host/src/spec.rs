//! Tool specifications as the host sees them: the WIT `tool-spec` record decoded
//! into plain Rust with a stable JSON shape (what `corral describe --json` and
//! later `tools/list` print).

use serde::{Deserialize, Serialize};

use crate::bindings::corral::tool::types as wit;

/// How long a call usually takes (WIT `latency-hint`, reference 003's `latency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Latency {
    /// Well under 100 ms.
    Fast,
    /// Up to about a second.
    Medium,
    /// Seconds or more.
    Slow,
}

/// Where a result goes (WIT `return-behavior`, reference 002's `ReturnBehavior`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReturnBehavior {
    /// Back to the model.
    ToLlm,
    /// Straight to the user, bypassing the model.
    Immediate,
}

/// The JSON name (`fast`, `medium`, `slow`), so text and `--json` output agree.
impl std::fmt::Display for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Latency::Fast => "fast",
            Latency::Medium => "medium",
            Latency::Slow => "slow",
        })
    }
}

/// The JSON name (`to_llm`, `immediate`), so text and `--json` output agree.
impl std::fmt::Display for ReturnBehavior {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReturnBehavior::ToLlm => "to_llm",
            ReturnBehavior::Immediate => "immediate",
        })
    }
}

/// Descriptive metadata of a tool (WIT `tool-metadata`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolMetadata {
    /// Free-form grouping; empty means none.
    pub category: String,
    /// Search keywords.
    pub keywords: Vec<String>,
    /// The tool's own version; empty means unversioned.
    pub version: String,
    /// Repeating a call has no further effect.
    pub idempotent: bool,
    /// Calls may run concurrently.
    pub parallelizable: bool,
    /// Latency hint.
    pub latency: Latency,
    /// Each call needs approval (enforced by the approval gates).
    pub requires_approval: bool,
    /// Where the result goes.
    pub return_behavior: ReturnBehavior,
}

/// One tool as a plugin describes it, after the resolver accepted it.
///
/// JSON shape: `{"name", "description", "parameters": <schema object>,
/// "metadata": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// `[A-Za-z0-9_]{1,64}`, unique in the host.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
    /// Descriptive metadata.
    pub metadata: ToolMetadata,
}

/// A spec exactly as the guest returned it, before validation: the schema is
/// still text.
#[derive(Debug, Clone)]
pub(crate) struct RawSpec {
    pub name: String,
    pub description: String,
    pub parameters: String,
    pub metadata: ToolMetadata,
}

impl From<wit::ToolSpec> for RawSpec {
    fn from(spec: wit::ToolSpec) -> Self {
        let m = spec.metadata;
        Self {
            name: spec.name,
            description: spec.description,
            parameters: spec.parameters,
            metadata: ToolMetadata {
                category: m.category,
                keywords: m.keywords,
                version: m.version,
                idempotent: m.idempotent,
                parallelizable: m.parallelizable,
                latency: match m.latency {
                    wit::LatencyHint::Fast => Latency::Fast,
                    wit::LatencyHint::Medium => Latency::Medium,
                    wit::LatencyHint::Slow => Latency::Slow,
                },
                requires_approval: m.requires_approval,
                return_behavior: match m.return_behavior {
                    wit::ReturnBehavior::ToLlm => ReturnBehavior::ToLlm,
                    wit::ReturnBehavior::Immediate => ReturnBehavior::Immediate,
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Latency, ReturnBehavior};

    #[test]
    fn text_names_are_the_json_names() {
        for latency in [Latency::Fast, Latency::Medium, Latency::Slow] {
            assert_eq!(
                serde_json::json!(latency),
                serde_json::json!(latency.to_string())
            );
        }
        for behavior in [ReturnBehavior::ToLlm, ReturnBehavior::Immediate] {
            assert_eq!(
                serde_json::json!(behavior),
                serde_json::json!(behavior.to_string())
            );
        }
    }
}
