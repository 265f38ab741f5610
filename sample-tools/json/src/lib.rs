//! The `json` sample plugin: JSONPath queries (RFC 9535) and document statistics.

use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use serde_json_path::JsonPath;

#[derive(Deserialize, JsonSchema)]
struct QueryArgs {
    /// The JSON document to query: any JSON value (object, array, ...).
    document: Value,
    /// An RFC 9535 JSONPath expression, e.g. "$.store.book[?@.price < 10].title".
    path: String,
}

/// Query a JSON document with JSONPath (RFC 9535) and return every matching
/// value, so you can pick fields out of large tool results.
#[tool(
    category = "data",
    keywords("json", "jsonpath", "query", "select"),
    idempotent
)]
fn json_query(args: QueryArgs) -> Result<Value, ToolError> {
    let path = JsonPath::parse(&args.path)
        .map_err(|err| ToolError::invalid(format!("invalid JSONPath `{}`: {err}", args.path)))?;
    let matches: Vec<&Value> = path.query(&args.document).all();
    Ok(json!({ "count": matches.len(), "matches": matches }))
}

#[derive(Deserialize, JsonSchema)]
struct StatsArgs {
    /// The JSON document to inspect.
    document: Value,
}

/// Describe the shape of a JSON document: its depth, how many values of each
/// type it holds, and the top-level keys.
#[tool(
    category = "data",
    keywords("json", "shape", "schema", "inspect"),
    idempotent
)]
fn json_stats(args: StatsArgs) -> Result<Value, ToolError> {
    #[derive(Default)]
    struct Counts {
        objects: u64,
        arrays: u64,
        strings: u64,
        numbers: u64,
        booleans: u64,
        nulls: u64,
        depth: usize,
    }
    fn walk(value: &Value, depth: usize, counts: &mut Counts) {
        counts.depth = counts.depth.max(depth);
        match value {
            Value::Object(map) => {
                counts.objects += 1;
                map.values().for_each(|v| walk(v, depth + 1, counts));
            }
            Value::Array(items) => {
                counts.arrays += 1;
                items.iter().for_each(|v| walk(v, depth + 1, counts));
            }
            Value::String(_) => counts.strings += 1,
            Value::Number(_) => counts.numbers += 1,
            Value::Bool(_) => counts.booleans += 1,
            Value::Null => counts.nulls += 1,
        }
    }
    let mut counts = Counts::default();
    walk(&args.document, 1, &mut counts);
    let keys: Vec<&String> = args
        .document
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    Ok(json!({
        "depth": counts.depth,
        "objects": counts.objects,
        "arrays": counts.arrays,
        "strings": counts.strings,
        "numbers": counts.numbers,
        "booleans": counts.booleans,
        "nulls": counts.nulls,
        "top_level_keys": keys,
    }))
}

corral_guest::plugin!(json_query, json_stats);
