use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: u32,
}

/// Nothing in.
#[tool]
fn nothing() -> Result<Value, ToolError> {
    Ok(Value::Null)
}

fn main() {}
