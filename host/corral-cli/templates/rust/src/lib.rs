//! {{name}}: a corral tool. Each `#[tool]` function is one tool: its doc
//! comment is the description the model reads, and its argument struct's
//! fields (with their doc comments) are the JSON Schema of its arguments.

use corral_guest::{Part, ToolError, ToolOutput, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The text to reverse.
    text: String,
}

/// Reverse a text, character by character.
#[tool(category = "text", keywords("reverse", "example"), idempotent)]
fn {{tool}}(args: Args) -> Result<ToolOutput, ToolError> {
    if args.text.is_empty() {
        return Err(ToolError::invalid("`text` is empty: give some text to reverse"));
    }
    let reversed: String = args.text.chars().rev().collect();
    // A result of parts: a sentence for the model, and the structured data
    // (which plans reference with $ref). Returning any `T: Serialize`
    // instead gives one JSON part.
    Ok(ToolOutput::new()
        .with(Part::text(format!("Reversed: {reversed}")))
        .with(Part::json(&json!({ "reversed": reversed, "characters": args.text.chars().count() }))?))
}

corral_guest::plugin!({{tool}});
