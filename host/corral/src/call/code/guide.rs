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
                "description": "The body of an async JavaScript function. Call tools as \
                    `await tools.NAME({...})`; run several at once with \
                    `await tools.parallel([[\"NAME\", {...}], ...])`. `return` a JSON value."
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "description": "A shorter deadline for the whole script, in milliseconds \
                    (it can only tighten the host's)."
            }
        },
        "required": ["code"],
        "additionalProperties": false
    })
}

/// The description of `execute_code` shown to models.
pub(crate) const DESCRIPTION: &str = "Run a JavaScript script that calls tools, and get back \
what it returns. Use it for work of several steps: loops, filtering and combining tool \
results happen inside the script, and only the return value comes back. The code is the \
body of an async function: `const r = await tools.NAME({...}); return r.field;`. \
`tools.parallel([[\"a\", {...}], [\"b\", {...}]])` runs calls as one wave. A failed call \
throws a ToolError with `kind` (invalid_arguments, execution_failed, denied, limit), `code` \
and `message`. `console.log` lines come back in `logs`. There is no network, file system or \
real clock; Math.random and Date are deterministic per run.";

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
            "{DESCRIPTION}\n\nA script can call any of the {} tools this server serves, \
             with the arguments a direct call takes (each tool's input schema). Find tools with \
             `tool_search`; its `info:NAME` query gives a tool's TypeScript declaration \
             (`typescript`) for a script. `corral describe --typescript NAME` prints it too.",
            specs.len()
        )
    }
}
