//! The `math` sample plugin: arithmetic expressions and descriptive statistics.

use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct EvalArgs {
    /// An arithmetic expression such as "(2 + 3) * 4 ^ 2" or "math::sqrt(2.0)".
    /// Integer division truncates (7 / 2 is 3); write 7.0 / 2 for 3.5.
    #[schemars(length(min = 1, max = 10000))]
    expression: String,
}

/// Evaluate an arithmetic expression exactly, instead of doing the arithmetic in
/// your head. Supports + - * / % ^, parentheses, comparisons, booleans and
/// functions like math::sqrt, math::ln, min, max, floor, round.
#[tool(
    category = "math",
    keywords("calculate", "arithmetic", "expression"),
    idempotent
)]
fn evaluate(args: EvalArgs) -> Result<Value, ToolError> {
    let value = evalexpr::eval(&args.expression).map_err(|err| {
        ToolError::invalid(format!("cannot evaluate `{}`: {err}", args.expression))
    })?;
    let result = match value {
        evalexpr::Value::Int(i) => json!(i),
        evalexpr::Value::Float(f) if f.is_finite() => json!(f),
        evalexpr::Value::Float(f) => {
            return Err(ToolError::failed(format!(
                "the result is not a finite number ({f})"
            )));
        }
        evalexpr::Value::Boolean(b) => json!(b),
        evalexpr::Value::String(s) => json!(s),
        other => json!(other.to_string()),
    };
    Ok(json!({ "expression": args.expression, "result": result }))
}

#[derive(Deserialize, JsonSchema)]
struct StatsArgs {
    /// The numbers to summarise.
    #[schemars(length(min = 1, max = 100000))]
    values: Vec<f64>,
}

/// Summarise a list of numbers: count, sum, min, max, mean, median, population
/// standard deviation.
#[tool(
    category = "math",
    keywords("statistics", "mean", "median", "average"),
    idempotent
)]
fn statistics(args: StatsArgs) -> Result<Value, ToolError> {
    let mut values = args.values;
    if values.is_empty() {
        return Err(ToolError::invalid(
            "`values` must contain at least one number",
        ));
    }
    values.sort_by(f64::total_cmp);
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    let mean = sum / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let mid = values.len() / 2;
    let median = if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    };
    Ok(json!({
        "count": values.len(),
        "sum": sum,
        "min": values[0],
        "max": values[values.len() - 1],
        "mean": mean,
        "median": median,
        "stddev": variance.sqrt(),
    }))
}

corral_guest::plugin!(evaluate, statistics);
