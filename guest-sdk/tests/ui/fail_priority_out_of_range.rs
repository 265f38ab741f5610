use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: u32,
}

/// Too eager.
#[tool(priority = 101)]
fn quick(args: Args) -> Result<Value, ToolError> {
    Ok(Value::from(args.n))
}

fn main() {}
