//! Tool specifications as the sandbox reads them: the WIT `tool-spec` record
//! (of either contract version) decoded into plain Rust ([`RawSpec`], the
//! schemas still text) with its metadata in a stable JSON shape. The
//! library's resolver checks a raw spec into `corral::ToolSpec`.

use serde::{Deserialize, Serialize};

/// How long a call usually takes (WIT `latency-hint`, TnsAI's `latency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Latency {
    /// Well under 100 ms.
    Fast,
    /// Up to about a second.
    Medium,
    /// Seconds or more.
    Slow,
}

/// Where a result goes (WIT `return-behavior`, LangChain4j's `ReturnBehavior`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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

/// A tool's own suggestions for the resilience layers (WIT 0.2.0
/// `resilience-hints`). A plugin's policy overrides each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResilienceHints {
    /// Attempts in all for transient failures (idempotent tools only).
    pub max_attempts: Option<u32>,
    /// Milliseconds a result may be reused for the same arguments
    /// (idempotent tools only).
    pub cache_ttl_ms: Option<u64>,
    /// Calls per second the upstream tolerates.
    pub requests_per_second: Option<u32>,
}

/// Descriptive metadata of a tool (WIT `tool-metadata`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// Preference among similar tools, 0 to 100 (WIT 0.2.0; 50 for 0.1.0
    /// plugins).
    pub priority: u8,
    /// Tools whose results this one usually consumes (WIT 0.2.0 `depends-on`).
    pub depends_on: Vec<String>,
    /// The tool's resilience hints, if it gave any (WIT 0.2.0).
    pub resilience: Option<ResilienceHints>,
}

impl ToolMetadata {
    /// The priority of a tool that states none: 50.
    pub const DEFAULT_PRIORITY: u8 = 50;

    /// Metadata with every default: no category, keywords or version, not
    /// idempotent, parallelizable, medium latency, no approval, `to_llm`,
    /// priority 50, no dependencies, no hints.
    pub fn new(category: impl Into<String>) -> Self {
        Self {
            category: category.into(),
            keywords: Vec::new(),
            version: String::new(),
            idempotent: false,
            parallelizable: true,
            latency: Latency::Medium,
            requires_approval: false,
            return_behavior: ReturnBehavior::ToLlm,
            priority: Self::DEFAULT_PRIORITY,
            depends_on: Vec::new(),
            resilience: None,
        }
    }
}

/// A spec exactly as the guest returned it, before validation: the schema is
/// still text.
#[derive(Debug, Clone)]
pub struct RawSpec {
    /// The name the guest gave (unchecked).
    pub name: String,
    /// The description the guest gave (unchecked text).
    pub description: String,
    /// JSON Schema of the arguments, as text.
    pub parameters: String,
    /// JSON Schema of a successful result, as text, when declared (0.2.0).
    pub output_schema: Option<String>,
    /// The declared metadata.
    pub metadata: ToolMetadata,
}

impl RawSpec {
    /// Bytes of every string in the spec, for the `describe` output cap.
    pub fn text_bytes(&self) -> usize {
        let m = &self.metadata;
        self.name.len()
            + self.description.len()
            + self.parameters.len()
            + self.output_schema.as_ref().map_or(0, String::len)
            + m.depends_on.iter().map(String::len).sum::<usize>()
            + m.category.len()
            + m.version.len()
            + m.keywords.iter().map(String::len).sum::<usize>()
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
