use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: u32,
}

/// Bad name.
#[tool(name = "bad-name")]
fn bad(args: Args) -> Result<Value, ToolError> {
    Ok(Value::from(args.n))
}

fn main() {}
