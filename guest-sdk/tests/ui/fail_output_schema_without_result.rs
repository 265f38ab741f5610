use corral_guest::tool;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: u32,
}

/// No result type to take a schema from.
#[tool(output_schema)]
fn odd(args: Args) -> Option<u32> {
    Some(args.n)
}

fn main() {}
