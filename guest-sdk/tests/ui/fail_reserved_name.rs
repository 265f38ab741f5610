use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: u32,
}

/// A name the host keeps for its built-in plan tool.
#[tool(name = "execute_tool_plan")]
fn bad(args: Args) -> Result<Value, ToolError> {
    Ok(Value::from(args.n))
}

fn main() {}
