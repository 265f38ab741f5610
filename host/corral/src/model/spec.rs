//! A tool's checked specification ([`ToolSpec`]), what `corral describe
//! --json` and `tools/list` print: a raw spec from the sandbox
//! (`corral_sandbox::RawSpec`) once the resolver accepted it, its schemas
//! parsed.

use corral_sandbox::ToolMetadata;
use serde::{Deserialize, Serialize};

/// One tool as a plugin describes it, after the resolver accepted it.
///
/// JSON shape: `{"name", "description", "parameters": <schema object>,
/// "output_schema": <schema object> (only when declared), "metadata": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// `[A-Za-z0-9_]{1,64}`, unique in the host.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
    /// JSON Schema every successful result must satisfy (WIT 0.2.0
    /// `output-schema`; MCP `outputSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// Descriptive metadata.
    pub metadata: ToolMetadata,
}
