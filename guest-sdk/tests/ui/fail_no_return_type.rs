use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: u32,
}

/// Returns nothing.
#[tool]
fn silent(args: Args) {
    let _ = args;
}

fn main() {}
