//! The plan executor behind the built-in `execute_tool_plan` tool (after the
//! tool-planning guide, docs/references.md): a batch of tool calls with
//! `$ref` data flow between them, validated as
//! a whole, sorted into waves, run wave by wave with the steps of a wave in
//! parallel, failing forward, returning only the `output_steps`.
//!
//! - [`reference`](mod@reference): `$ref` syntax and insertion rules;
//! - [`graph`]: dependencies, Kahn waves, cycles, DOT;
//! - [`execute`]: running a validated plan through a
//!   [`Caller`](crate::call::compose::Caller).

pub mod execute;
pub mod graph;
pub mod reference;
pub mod step_id;

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::Value;

use graph::Graph;

use crate::model::names::CODE_TOOL;
pub use crate::model::names::PLAN_TOOL;

/// Limits of one plan, on top of the per-call limits of each step.
///
/// | knob | unit | default |
/// |---|---|---|
/// | [`max_steps`](Self::max_steps) | steps | 64 |
/// | [`max_plan_bytes`](Self::max_plan_bytes) | bytes of plan JSON | 256 KiB |
/// | [`deadline_ms`](Self::deadline_ms) | milliseconds for the whole plan | 60 000 |
/// | [`max_concurrency`](Self::max_concurrency) | steps running at once | 8 |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlanLimits {
    /// Most steps a plan may have.
    pub max_steps: usize,
    /// Largest plan text accepted, in bytes.
    pub max_plan_bytes: usize,
    /// Wall-clock budget of the whole plan in milliseconds. Each step's own
    /// deadline is cut to what remains; steps that cannot start in time are
    /// skipped.
    pub deadline_ms: u64,
    /// Most steps of one wave running at the same time.
    pub max_concurrency: usize,
}

impl Default for PlanLimits {
    fn default() -> Self {
        Self {
            max_steps: 64,
            max_plan_bytes: 256 << 10,
            deadline_ms: 60_000,
            max_concurrency: 8,
        }
    }
}

impl PlanLimits {
    /// These limits with at most `steps` steps per plan.
    #[must_use]
    pub fn with_max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps;
        self
    }

    /// These limits with plans of at most `bytes` bytes of JSON.
    #[must_use]
    pub fn with_max_plan_bytes(mut self, bytes: usize) -> Self {
        self.max_plan_bytes = bytes;
        self
    }

    /// These limits with a whole-plan deadline of `ms` milliseconds.
    #[must_use]
    pub fn with_deadline_ms(mut self, ms: u64) -> Self {
        self.deadline_ms = ms;
        self
    }

    /// These limits with at most `steps` steps of a wave running at once.
    #[must_use]
    pub fn with_max_concurrency(mut self, steps: usize) -> Self {
        self.max_concurrency = steps;
        self
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    steps: Vec<RawStep>,
    #[serde(default)]
    output_steps: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    id: String,
    tool: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// One validated step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Unique id: 1 to 64 characters from `[A-Za-z0-9_-]` (the rule is in
    /// `compose/plan/step_id.rs`).
    pub id: String,
    /// The tool to call.
    pub tool: String,
    /// The arguments object, `$ref`s still in place.
    pub arguments: Value,
}

/// A validated plan: every reference resolves, no cycles, ready to run.
#[derive(Debug, Clone)]
pub struct Plan {
    steps: Vec<Step>,
    output_steps: Option<Vec<String>>,
    graph: Graph,
    waves: Vec<Vec<usize>>,
}

/// Why a plan was refused before anything ran: every problem found, each
/// naming its step where there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid plan: {}", .problems.join("; "))]
pub struct PlanError {
    /// Each problem, for example "step `b`: unknown tool `nope`". What the
    /// plan named (ids, tools, fields) is shown with forbidden characters
    /// escaped ([`crate::untrusted_text::escape`]): a plan is model-written
    /// text, and its problems reach terminals and logs.
    pub problems: Vec<String>,
}

impl PlanError {
    /// The error of `problems`, each escaped.
    fn new(problems: Vec<String>) -> Self {
        Self {
            problems: problems
                .into_iter()
                .map(|p| corral_names::text::escape(&p).into_owned())
                .collect(),
        }
    }
}

/// The error of arguments that do not have the plan's shape.
fn not_a_plan(err: serde_json::Error) -> PlanError {
    PlanError::new(vec![format!(
        "the plan is not valid plan JSON ({err}); expected {{\"steps\": [{{\"id\", \"tool\", \"arguments\"}}], \"output_steps\": [...]}}"
    )])
}

/// Refuses a plan of more than [`PlanLimits::max_plan_bytes`].
fn check_size(bytes: usize, limits: &PlanLimits) -> Result<(), PlanError> {
    if bytes > limits.max_plan_bytes {
        return Err(PlanError::new(vec![format!(
            "the plan is {bytes} bytes, more than the limit of {}; split it into smaller plans",
            limits.max_plan_bytes
        )]));
    }
    Ok(())
}

impl Plan {
    /// Parses and validates plan JSON text (the `execute_tool_plan`
    /// arguments). `is_tool` says whether a tool name is loaded.
    ///
    /// # Errors
    /// [`PlanError`] listing every problem: malformed JSON or fields, too many
    /// steps or bytes, no steps, a bad or duplicate id, an unknown tool, a step
    /// calling `execute_tool_plan`, arguments that are not an object (or JSON
    /// text of one), a `$ref` to an unknown step, a dependency cycle, an
    /// `output_steps` entry that is not a step.
    pub fn parse(
        text: &str,
        limits: &PlanLimits,
        is_tool: impl Fn(&str) -> bool,
    ) -> Result<Plan, PlanError> {
        check_size(text.len(), limits)?;
        let raw: RawPlan = serde_json::from_str(text).map_err(not_a_plan)?;
        Self::from_raw(raw, limits, is_tool)
    }

    /// Like [`Plan::parse`], for plan arguments already parsed into `value`;
    /// `bytes` is the length of the JSON text it came from, checked against
    /// [`PlanLimits::max_plan_bytes`].
    ///
    /// # Errors
    /// As [`Plan::parse`].
    pub fn from_value(
        value: Value,
        bytes: usize,
        limits: &PlanLimits,
        is_tool: impl Fn(&str) -> bool,
    ) -> Result<Plan, PlanError> {
        check_size(bytes, limits)?;
        let raw: RawPlan = serde_json::from_value(value).map_err(not_a_plan)?;
        Self::from_raw(raw, limits, is_tool)
    }

    fn from_raw(
        raw: RawPlan,
        limits: &PlanLimits,
        is_tool: impl Fn(&str) -> bool,
    ) -> Result<Plan, PlanError> {
        let mut problems = Vec::new();
        if raw.steps.is_empty() {
            problems.push("the plan has no steps; add at least one".to_string());
        }
        if raw.steps.len() > limits.max_steps {
            problems.push(format!(
                "the plan has {} steps, more than the limit of {}",
                raw.steps.len(),
                limits.max_steps
            ));
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, step) in raw.steps.iter().enumerate() {
            if !step_id::is_valid(&step.id) {
                problems.push(format!("step `{}`: {}", step.id, step_id::rule()));
            }
            if index.insert(&step.id, i).is_some() {
                problems.push(format!(
                    "step `{}`: duplicate id; ids must be unique",
                    step.id
                ));
            }
        }
        let mut steps = Vec::with_capacity(raw.steps.len());
        let mut deps = Vec::with_capacity(raw.steps.len());
        for step in &raw.steps {
            let at = format!("step `{}`", step.id);
            if step.tool == PLAN_TOOL {
                problems.push(format!(
                    "{at}: a plan cannot call `{PLAN_TOOL}` (no recursive plans); list the steps directly"
                ));
            } else if step.tool == CODE_TOOL {
                problems.push(format!(
                    "{at}: a plan cannot call `{CODE_TOOL}`; call it on its own, or make the \
                     script's tool calls steps of the plan"
                ));
            } else if !is_tool(&step.tool) {
                problems.push(format!("{at}: unknown tool `{}`", step.tool));
            }
            let arguments = match &step.arguments {
                None => Value::Object(Default::default()),
                Some(Value::Object(map)) => Value::Object(map.clone()),
                Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
                    Ok(Value::Object(map)) => Value::Object(map),
                    Ok(_) => {
                        problems.push(format!("{at}: `arguments` must encode a JSON object"));
                        Value::Null
                    }
                    Err(err) => {
                        problems.push(format!("{at}: `arguments` is not valid JSON: {err}"));
                        Value::Null
                    }
                },
                Some(_) => {
                    problems.push(format!(
                        "{at}: `arguments` must be a JSON object or a string of JSON"
                    ));
                    Value::Null
                }
            };
            let mut step_deps = BTreeSet::new();
            for r in reference::find(&arguments) {
                match index.get(r.step.as_str()) {
                    Some(&d) => {
                        step_deps.insert(d);
                    }
                    None => problems.push(format!("{at}: `$ref:{}` names no step", r.step)),
                }
            }
            deps.push(step_deps);
            steps.push(Step {
                id: step.id.clone(),
                tool: step.tool.clone(),
                arguments,
            });
        }
        if let Some(outputs) = &raw.output_steps {
            for id in outputs {
                if !index.contains_key(id.as_str()) {
                    problems.push(format!("output_steps: `{id}` is not a step"));
                }
            }
        }
        let graph = Graph::new(steps.iter().map(|s| s.id.clone()).collect(), deps);
        let waves = match graph.waves() {
            Ok(waves) => waves,
            Err(cycle) => {
                problems.push(format!("dependency cycle: {}", cycle.join(" -> ")));
                Vec::new()
            }
        };
        if !problems.is_empty() {
            return Err(PlanError::new(problems));
        }
        Ok(Plan {
            steps,
            output_steps: raw.output_steps,
            graph,
            waves,
        })
    }

    /// The steps, in plan order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The waves as step ids: wave 0 first.
    pub fn waves(&self) -> Vec<Vec<String>> {
        self.waves
            .iter()
            .map(|w| w.iter().map(|&i| self.steps[i].id.clone()).collect())
            .collect()
    }

    /// The dependency graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The plan as Graphviz DOT.
    pub fn to_dot(&self) -> String {
        let tools: Vec<String> = self.steps.iter().map(|s| s.tool.clone()).collect();
        self.graph.to_dot(&tools, &self.waves)
    }

    /// The JSON Schema of `execute_tool_plan`'s arguments.
    pub fn schema() -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "description": "The tool calls to make. Steps run in parallel unless one references another's output.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "pattern": step_id::pattern(), "description": "Unique step id, used by $ref from other steps."},
                            "tool": {"type": "string", "description": "The tool to call."},
                            "arguments": {
                                "type": ["object", "string"],
                                "description": "The tool's arguments: an object, or a string of JSON. Any string value may be \"$ref:step_id\", \"$ref:step_id.field\" or \"$ref:step_id.a.b\" (array indexes as numbers) to use another step's output; objects and arrays are inserted as JSON, a missing field as null."
                            }
                        },
                        "required": ["id", "tool"],
                        "additionalProperties": false
                    }
                },
                "output_steps": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Ids of the steps whose results to return. Omit to return every step."
                }
            },
            "required": ["steps"],
            "additionalProperties": false
        })
    }

    /// The description of `execute_tool_plan` shown to models.
    pub const DESCRIPTION: &'static str = "Run several tool calls in one go. Steps that do not depend on each other run in parallel; a step can use another step's output by writing \"$ref:step_id\" or \"$ref:step_id.field\" as an argument value. If a step fails, the steps that depend on it are skipped and the rest still run. Returns each requested step's status and output (or error). Use it instead of calling tools one at a time when you already know the calls you need.";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Plan, PlanError> {
        Plan::parse(text, &PlanLimits::default(), |t| {
            ["get", "sum"].contains(&t)
        })
    }

    #[test]
    fn arguments_may_be_a_string_or_an_object() {
        let plan = parse(
            r#"{"steps": [
                {"id": "a", "tool": "get", "arguments": "{\"x\": 1}"},
                {"id": "b", "tool": "get", "arguments": {"y": "$ref:a.x"}},
                {"id": "c", "tool": "sum"}
            ]}"#,
        )
        .expect("valid");
        assert_eq!(plan.steps()[0].arguments, serde_json::json!({"x": 1}));
        assert_eq!(plan.waves(), vec![vec!["a", "c"], vec!["b"]]);
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let err = parse(
            r#"{"steps": [
                {"id": "a", "tool": "get", "arguments": "{"},
                {"id": "a", "tool": "nope"},
                {"id": "r", "tool": "execute_tool_plan"},
                {"id": "b", "tool": "get", "arguments": {"v": "$ref:ghost"}},
                {"id": "n", "tool": "get", "arguments": 5},
                {"id": "s", "tool": "get", "arguments": "[1]"},
                {"id": "bad id", "tool": "get"}
            ], "output_steps": ["zzz"]}"#,
        )
        .unwrap_err();
        let expected = [
            "step `a`: duplicate id",
            "step `a`: `arguments` is not valid JSON",
            "step `a`: unknown tool `nope`",
            "step `r`: a plan cannot call `execute_tool_plan`",
            "step `b`: `$ref:ghost` names no step",
            "step `n`: `arguments` must be a JSON object or a string of JSON",
            "step `s`: `arguments` must encode a JSON object",
            "step `bad id`: ids use 1 to 64 letters, digits, `_` and `-`",
            "output_steps: `zzz` is not a step",
        ];
        for e in expected {
            assert!(
                err.problems.iter().any(|p| p.starts_with(e)),
                "{e}\n{:#?}",
                err.problems
            );
        }
        assert_eq!(err.problems.len(), expected.len(), "{:#?}", err.problems);
    }

    #[test]
    fn what_a_plan_names_is_escaped_in_its_problems() {
        let err = parse(
            r#"{"steps": [
                {"id": "a\u001b[2J", "tool": "bad\u001b]0;pwned\u0007"},
                {"id": "b", "tool": "get", "arguments": {"v": "$ref:\u009bghost"}}
            ], "output_steps": ["\u202ez"]}"#,
        )
        .unwrap_err();
        assert_eq!(err.problems.len(), 3, "{:#?}", err.problems);
        // Refused by the JSON shape: serde's message names the field.
        let shape = parse(r#"{"steps": [], "extra\u001b": 1}"#).unwrap_err();
        for problem in err.problems.iter().chain(&shape.problems) {
            assert!(
                !problem.chars().any(corral_names::text::is_forbidden),
                "raw control character in {problem:?}"
            );
        }
        let err = parse(r#"{"steps": [{"id": "a", "tool": "bad\u001b[2J"}]}"#).unwrap_err();
        assert_eq!(err.problems, ["step `a`: unknown tool `bad\\u{1b}[2J`"]);
    }

    #[test]
    fn cycles_name_their_steps() {
        let err = parse(
            r#"{"steps": [
                {"id": "a", "tool": "get", "arguments": {"v": "$ref:b"}},
                {"id": "b", "tool": "get", "arguments": {"v": "$ref:a.x"}}
            ]}"#,
        )
        .unwrap_err();
        assert_eq!(err.problems, ["dependency cycle: a -> b -> a"]);
    }

    #[test]
    fn limits_and_shape() {
        let limits = PlanLimits {
            max_steps: 1,
            max_plan_bytes: 200,
            ..PlanLimits::default()
        };
        let two = r#"{"steps": [{"id": "a", "tool": "get"}, {"id": "b", "tool": "get"}]}"#;
        let err = Plan::parse(two, &limits, |_| true).unwrap_err();
        assert!(err.problems[0].contains("2 steps, more than the limit of 1"));
        let big = format!(r#"{{"steps": [], "pad": "{}"}}"#, "x".repeat(300));
        assert!(Plan::parse(&big, &limits, |_| true).unwrap_err().problems[0].contains("bytes"));
        assert!(parse(r#"{"steps": []}"#).unwrap_err().problems[0].contains("no steps"));
        assert!(parse(r#"{"stepz": []}"#).unwrap_err().problems[0].contains("not valid plan JSON"));
        assert!(jsonschema::meta::validate(&Plan::schema()).is_ok());
    }
}
