use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: u32,
}

/// Wrong second parameter.
#[tool]
fn two(args: Args, extra: u32) -> Result<Value, ToolError> {
    Ok(Value::from(args.n + extra))
}

fn main() {}
