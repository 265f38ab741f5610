//! `#[tool]` with every option, and `plugin!` over the tools: the
//! macros' output compiles, every option reaches the description the host
//! reads, and a call reaches its tool. (The misuses are compile errors,
//! checked in `ui.rs`.)

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
#[tool(
    name = "tenant_of",
    sequential,
    requires_approval,
    return_behavior = "immediate"
)]
fn tenant(_args: Args, context: &corral_guest::Context) -> Result<String, String> {
    context
        .get("tenant")
        .map(str::to_string)
        .ok_or_else(|| "no tenant".to_string())
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

use corral_guest::__private::{Guest, WitToolError};

#[test]
fn every_option_reaches_the_description() {
    let specs = <__CorralPlugin as Guest>::describe();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["double", "tenant_of", "double_typed"]);
    let (double, tenant, typed) = (&specs[0].metadata, &specs[1].metadata, &specs[2].metadata);
    assert_eq!(specs[0].description, "Double a number.");
    assert_eq!(double.category, "math");
    assert_eq!(double.keywords, ["double"]);
    assert!(double.idempotent && !tenant.idempotent);
    assert!(!tenant.parallelizable && double.parallelizable);
    assert!(tenant.requires_approval && !double.requires_approval);
    assert_eq!(typed.priority, 80);
    assert_eq!(typed.depends_on, ["double"]);
    let schema: Value =
        serde_json::from_str(typed.output_schema.as_deref().expect("output schema"))
            .expect("output schema is JSON");
    assert!(schema["properties"]["n"].is_object(), "{schema}");
    let hints = typed.resilience.as_ref().expect("resilience hints");
    assert_eq!(
        (
            hints.max_attempts,
            hints.cache_ttl_ms,
            hints.requests_per_second
        ),
        (Some(3), Some(60000), Some(10))
    );
    let parameters: Value = serde_json::from_str(&specs[0].parameters).expect("schema");
    assert_eq!(parameters["properties"]["n"]["description"], "A number.");
}

#[test]
fn a_call_reaches_its_tool_with_its_context() {
    // One JSON part per call of a tool that returns a `T: Serialize`.
    let call = |name: &str, arguments: &str, context: Vec<(String, String)>| {
        <__CorralPlugin as Guest>::call(name.into(), arguments.into(), context).map(|parts| {
            match &parts[..] {
                [part] => match &part.content {
                    corral_guest::__bindings::corral::tool::types::Content::Json(json) => {
                        json.clone()
                    }
                    other => panic!("a json part, not {other:?}"),
                },
                other => panic!("one part, not {other:?}"),
            }
        })
    };
    assert_eq!(
        call("double", r#"{"n":21}"#, vec![]).expect("double"),
        r#"{"n":42}"#
    );
    let tenant = call(
        "tenant_of",
        r#"{"n":1}"#,
        vec![("tenant".into(), "acme".into())],
    );
    assert_eq!(tenant.expect("tenant"), r#""acme""#);
    match call("double_typed", r#"{"n":5000}"#, vec![]) {
        Err(WitToolError::ExecutionFailed(info)) => {
            assert!(info.retryable, "{}", info.message);
            assert_eq!(info.message, "too big, try later");
        }
        other => panic!("a retryable failure, not {other:?}"),
    }
}
