use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: u32,
}

#[derive(Deserialize)]
struct Plain {
    n: u32,
}

/// Arguments without a schema.
#[tool]
fn plain(args: Plain) -> Result<Value, ToolError> {
    Ok(Value::from(args.n))
}

fn main() {}
