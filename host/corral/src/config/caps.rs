//! Caps on what a plugin's `describe` may declare: every tool, description
//! and schema goes into a model's context on every turn, so a plugin that
//! declares 10 000 tools or an 8 MB description floods it (and the host's
//! memory) before anyone calls anything. Over a cap, the plugin fails to load
//! with a message naming the cap and the knob that raises it.
//!
//! | knob | unit | default |
//! |---|---|---|
//! | [`max_tools`](DescribeCaps::max_tools) | tools per plugin | 128 |
//! | [`max_description_chars`](DescribeCaps::max_description_chars) | characters of one tool description | 4096 |
//! | [`max_schema_bytes`](DescribeCaps::max_schema_bytes) | bytes of one tool's parameters schema (JSON text) | 65 536 (64 KiB) |
//! | [`max_output_bytes`](DescribeCaps::max_output_bytes) | bytes of everything one `describe` returns | 1 048 576 (1 MiB) |
//!
//! LangChain4j's tool guidance (`docs/references.md`) recommends descriptions
//! of at most 1024 characters; the default allows four times that. The host
//! sets the caps ([`HostBuilder::describe_caps`](crate::HostBuilder::describe_caps));
//! a plugin's policy can raise or lower them for that plugin (`[describe]`).
//! The wall-clock deadline of `describe` is a separate limit
//! ([`Limits::DEFAULT_DESCRIBE_TIMEOUT_MS`](crate::Limits::DEFAULT_DESCRIBE_TIMEOUT_MS)).

use serde::Serialize;

/// Caps on one plugin's `describe` output; see the module table for units
/// and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DescribeCaps {
    /// Most tools one plugin may declare.
    pub max_tools: usize,
    /// Longest tool description, in characters (after a policy's note).
    pub max_description_chars: usize,
    /// Largest parameters schema of one tool, in bytes of JSON text.
    pub max_schema_bytes: usize,
    /// Largest total of every string one `describe` returns, in bytes.
    pub max_output_bytes: usize,
}

impl Default for DescribeCaps {
    fn default() -> Self {
        Self {
            max_tools: 128,
            max_description_chars: 4096,
            max_schema_bytes: 64 << 10,
            max_output_bytes: 1 << 20,
        }
    }
}

impl DescribeCaps {
    /// These caps with at most `n` tools per plugin.
    #[must_use]
    pub fn with_max_tools(mut self, n: usize) -> Self {
        self.max_tools = n;
        self
    }

    /// These caps with descriptions of at most `n` characters.
    #[must_use]
    pub fn with_max_description_chars(mut self, n: usize) -> Self {
        self.max_description_chars = n;
        self
    }

    /// These caps with schemas of at most `n` bytes.
    #[must_use]
    pub fn with_max_schema_bytes(mut self, n: usize) -> Self {
        self.max_schema_bytes = n;
        self
    }

    /// These caps with at most `n` bytes of `describe` output in all.
    #[must_use]
    pub fn with_max_output_bytes(mut self, n: usize) -> Self {
        self.max_output_bytes = n;
        self
    }
}

/// A plugin policy's `[describe]` table: its own `describe` deadline and
/// caps; `None` keeps the host's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DescribeOverrides {
    /// Wall-clock deadline of this plugin's `describe`, in milliseconds
    /// (within the host's maximum timeout).
    pub timeout_ms: Option<u64>,
    /// See [`DescribeCaps::max_tools`].
    pub max_tools: Option<usize>,
    /// See [`DescribeCaps::max_description_chars`].
    pub max_description_chars: Option<usize>,
    /// See [`DescribeCaps::max_schema_bytes`].
    pub max_schema_bytes: Option<usize>,
    /// See [`DescribeCaps::max_output_bytes`].
    pub max_output_bytes: Option<usize>,
}

impl DescribeOverrides {
    /// `caps` with these overrides applied.
    pub fn apply(&self, caps: DescribeCaps) -> DescribeCaps {
        DescribeCaps {
            max_tools: self.max_tools.unwrap_or(caps.max_tools),
            max_description_chars: self
                .max_description_chars
                .unwrap_or(caps.max_description_chars),
            max_schema_bytes: self.max_schema_bytes.unwrap_or(caps.max_schema_bytes),
            max_output_bytes: self.max_output_bytes.unwrap_or(caps.max_output_bytes),
        }
    }
}

/// A cap a plugin went over, for [`LoadErrorReason::OverCap`](crate::LoadErrorReason::OverCap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Over {
    /// What was counted, e.g. "tools".
    pub what: String,
    /// How many there were.
    pub found: usize,
    /// The cap.
    pub cap: usize,
    /// The policy key that raises it.
    pub knob: &'static str,
}

impl DescribeCaps {
    /// Checks the number of tools and the total size of `describe`'s output.
    pub(crate) fn check_output(&self, tools: usize, bytes: usize) -> Result<(), Over> {
        if tools > self.max_tools {
            return Err(Over {
                what: "tools".into(),
                found: tools,
                cap: self.max_tools,
                knob: "max_tools",
            });
        }
        if bytes > self.max_output_bytes {
            return Err(Over {
                what: "bytes of `describe` output".into(),
                found: bytes,
                cap: self.max_output_bytes,
                knob: "max_output_bytes",
            });
        }
        Ok(())
    }

    /// Checks one tool's description and schema text.
    pub(crate) fn check_spec(
        &self,
        tool: &str,
        description: &str,
        schema: &str,
    ) -> Result<(), Over> {
        let chars = description.chars().count();
        if chars > self.max_description_chars {
            return Err(Over {
                what: format!("characters of description in tool `{tool}`"),
                found: chars,
                cap: self.max_description_chars,
                knob: "max_description_chars",
            });
        }
        if schema.len() > self.max_schema_bytes {
            return Err(Over {
                what: format!("bytes of parameters schema in tool `{tool}`"),
                found: schema.len(),
                cap: self.max_schema_bytes,
                knob: "max_schema_bytes",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cap_names_its_knob() {
        let caps = DescribeCaps::default();
        assert!(caps.check_output(128, 1 << 20).is_ok());
        assert_eq!(caps.check_output(10_000, 10).unwrap_err().knob, "max_tools");
        assert_eq!(
            caps.check_output(1, 8 << 20).unwrap_err().knob,
            "max_output_bytes"
        );
        let long = "x".repeat(4097);
        assert_eq!(
            caps.check_spec("t", &long, "{}").unwrap_err().knob,
            "max_description_chars"
        );
        let big = "x".repeat(65_537);
        assert_eq!(
            caps.check_spec("t", "d", &big).unwrap_err().knob,
            "max_schema_bytes"
        );
        // Characters, not bytes: 4096 two-byte characters fit.
        assert!(caps.check_spec("t", &"é".repeat(4096), "{}").is_ok());
    }
}
