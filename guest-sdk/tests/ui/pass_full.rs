use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: u32,
}

/// Double a number.
#[tool(category = "math", keywords("double"), idempotent, latency = "fast")]
fn double(args: Args) -> Result<Value, ToolError> {
    Ok(serde_json::json!({ "n": args.n * 2 }))
}

/// Echo the tenant from the call context.
#[tool(name = "tenant_of", sequential, requires_approval, return_behavior = "immediate")]
fn tenant(_args: Args, context: &corral_guest::Context) -> Result<String, String> {
    context.get("tenant").map(str::to_string).ok_or_else(|| "no tenant".to_string())
}

#[derive(serde::Serialize, JsonSchema)]
struct Doubled {
    /// Twice the input.
    n: u32,
}

/// Double a number, with a declared output schema and resilience hints.
#[tool(
    idempotent,
    priority = 80,
    depends_on("double"),
    output_schema,
    max_attempts = 3,
    cache_ttl_ms = 60000,
    requests_per_second = 10
)]
fn double_typed(args: Args) -> Result<Doubled, ToolError> {
    if args.n > 1000 {
        return Err(ToolError::failed("too big, try later").retryable());
    }
    Ok(Doubled { n: args.n * 2 })
}

corral_guest::plugin!(double, tenant, double_typed);

fn main() {}
