//! What a model is told about `execute_code`: its arguments' schema, the
//! guide in its description, and the TypeScript declarations of the tools a
//! script can call, within a budget.

use serde_json::{Value, json};

use super::typescript;

/// The JSON Schema of `execute_code`'s arguments.
pub(crate) fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "An async function body."
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "description": "A shorter deadline (ms)."
            }
        },
        "required": ["code"],
        "additionalProperties": false
    })
}

/// The description of `execute_code` shown to models: short, since a model
/// reads it in every session (its tokens are code mode's fixed cost).
pub(crate) const DESCRIPTION: &str = "Run JavaScript that calls tools; only its return value \
comes back. For work of several steps: loops, filters, joins. The code is an async function \
body: `const r = await tools.NAME({...}); return r.x;`. `await tools.parallel([[\"a\", \
{...}], ...])` runs calls at once. A failed call throws a ToolError (kind, code, message). \
console.log goes to `logs`. No network, files or real clock.";

/// Most bytes of TypeScript declarations `execute_code`'s description
/// carries: 12 KiB. A catalog whose declarations are larger gets none in
/// the description (which then says where to find each tool's schema), so
/// that progressive disclosure keeps a large catalog's first list small.
pub const DECLARATIONS_BUDGET: usize = 12 << 10;

/// `execute_code`'s description for a catalog serving `specs`: the guide,
/// then the declarations of every tool a script can call (in name order)
/// when they fit in [`DECLARATIONS_BUDGET`], or else where a model finds
/// them.
pub(crate) fn description<'a>(specs: impl IntoIterator<Item = &'a crate::ToolSpec>) -> String {
    let mut specs: Vec<&crate::ToolSpec> = specs
        .into_iter()
        .filter(|s| !crate::model::names::RESERVED_NAMES.contains(&s.name.as_str()))
        .collect();
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    let declarations = typescript::declarations(specs.iter().copied());
    if declarations.len() <= DECLARATIONS_BUDGET {
        format!("{DESCRIPTION}\n\nThe tools a script can call:\n```ts\n{declarations}```")
    } else {
        format!(
            "{DESCRIPTION}\n\nAny of the {} tools served here can be called; \
             `tool_search` with `info:NAME` gives a tool's TypeScript declaration.",
            specs.len()
        )
    }
}
