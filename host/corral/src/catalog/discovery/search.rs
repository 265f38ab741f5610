//! The built-in `tool_search` tool (TnsAI, "Tool Discovery"): a model
//! that sees only a few tools asks this one which others exist, by fuzzy
//! text, by category, or for one tool's full description.
//!
//! Query forms (the `query` argument):
//!
//! | query | result |
//! |---|---|
//! | free text, e.g. `encode base64` | up to `limit` tools above the relevance floor, best first, each with its name, one-line description, category and score |
//! | `category:<name>` | every tool of that category (or, for an unknown one, the categories that exist) |
//! | `info:<tool>` | one tool's full description, parameter schema, output schema, keywords, metadata, approval and health, and its TypeScript declaration for code mode (`typescript`) |
//! | `list` | every category with its tool count |
//!
//! Free text is ranked by BM25 over the name, keywords, category and
//! description, with stemming, a synonym table and typo correction for tool
//! names ([`rank`](super::rank)); `execute_tool_plan` takes part, this tool
//! does not. `category:` and `list` cover the tools a host serves besides
//! the built-ins, which are in every `tools/list` already.

use serde_json::{Value, json};

use crate::catalog::registry::{Provider, Tool};
use crate::model::names::SEARCH_TOOL;
use crate::model::spec::ToolSpec;
use corral_sandbox::ToolMetadata;

/// Results of a free-text query when the call gives no `limit`.
pub const DEFAULT_LIMIT: usize = 10;
/// The largest `limit` a call may ask for.
pub const MAX_LIMIT: usize = 50;
/// Characters of a description shown in a result line.
const SUMMARY_CHARS: usize = 160;

/// The built-in `tool_search` spec: `{"query": string, "limit"?: 1..=50}`.
pub(crate) fn spec() -> ToolSpec {
    let mut metadata = ToolMetadata::new("builtin");
    metadata.keywords = vec!["search".into(), "discover".into(), "tools".into()];
    metadata.version = env!("CARGO_PKG_VERSION").into();
    metadata.idempotent = true;
    ToolSpec {
        name: SEARCH_TOOL.to_string(),
        description: "Finds tools this server offers beyond the ones listed. Query forms: \
            free text (e.g. `convert to base64`) returns the best matching tools; \
            `category:<name>` lists one category's tools; `info:<tool>` returns one \
            tool's full description and parameter schema, enough to call it; `list` \
            returns the categories with their tool counts. Call a tool you found \
            directly by its name."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "Free text, `category:<name>`, `info:<tool>` or `list`."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": "Free-text results to return (default 10)."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        }),
        output_schema: None,
        metadata,
    }
}

/// What `info:` adds about a tool beyond its spec, from the host.
pub(crate) struct Extra<'a> {
    /// Whether calls pass the approval gate.
    pub requires_approval: &'a dyn Fn(&Tool) -> bool,
    /// The tool's health, as JSON.
    pub health: &'a dyn Fn(&str) -> Value,
}

/// Answers one `tool_search` call with validated arguments, over `served`
/// (every tool of the call's catalog snapshot, built-ins included).
///
/// # Errors
/// A list of problems (for `InvalidArguments`) when `info:` names a tool
/// that is not served.
pub(crate) fn answer(
    served: &[&Tool],
    index: &super::rank::Index,
    arguments: &Value,
    extra: &Extra<'_>,
) -> Result<Value, Vec<String>> {
    let query = arguments["query"].as_str().unwrap_or_default().trim();
    let limit = arguments["limit"]
        .as_u64()
        .map_or(DEFAULT_LIMIT, |l| (l as usize).clamp(1, MAX_LIMIT));
    let tools: Vec<&Tool> = served
        .iter()
        .copied()
        .filter(|t| !matches!(t.provider(), Provider::Builtin(_)))
        .collect();
    if query == "list" {
        return Ok(categories(&tools));
    }
    if let Some(category) = query.strip_prefix("category:") {
        let category = category.trim();
        let members: Vec<Value> = tools
            .iter()
            .filter(|t| t.spec().metadata.category == category)
            .map(|t| line(t.spec()))
            .collect();
        if members.is_empty() {
            let mut answer = categories(&tools);
            answer["note"] = json!(format!(
                "no tools in category `{category}`; pick one of these"
            ));
            return Ok(answer);
        }
        return Ok(json!({"category": category, "count": members.len(), "tools": members}));
    }
    if let Some(name) = query.strip_prefix("info:") {
        let name = name.trim();
        let Some(tool) = served.iter().find(|t| t.spec().name == name) else {
            let hint =
                crate::model::names::suggest(name, tools.iter().map(|t| t.spec().name.as_str()))
                    .map_or(String::new(), |s| format!("; did you mean `{s}`?"));
            return Err(vec![format!(
                "info: no tool named `{name}` is served{hint}"
            )]);
        };
        return Ok(info(tool, extra));
    }
    Ok(free_text(served, index, query, limit))
}

/// `list`: categories with counts, sorted by name.
fn categories(tools: &[&Tool]) -> Value {
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for tool in tools {
        *counts
            .entry(tool.spec().metadata.category.as_str())
            .or_default() += 1;
    }
    let list: Vec<Value> = counts
        .iter()
        .map(|(name, count)| json!({"name": name, "count": count}))
        .collect();
    json!({"categories": list, "total_tools": tools.len()})
}

/// One result line: name, first line of the description (capped), category.
fn line(spec: &ToolSpec) -> Value {
    let first = spec.description.lines().next().unwrap_or_default();
    let summary: String = if first.chars().count() > SUMMARY_CHARS {
        first.chars().take(SUMMARY_CHARS - 1).chain(['…']).collect()
    } else {
        first.to_string()
    };
    json!({"name": spec.name, "description": summary, "category": spec.metadata.category})
}

/// `info:<tool>`: everything needed to call it.
fn info(tool: &Tool, extra: &Extra<'_>) -> Value {
    let spec = tool.spec();
    let (provider, sha256) = tool.provider_identity();
    let m = &spec.metadata;
    json!({
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        "outputSchema": spec.output_schema,
        "category": m.category,
        "keywords": m.keywords,
        "metadata": {
            "version": m.version,
            "idempotent": m.idempotent,
            "parallelizable": m.parallelizable,
            "latency": m.latency,
            "returnBehavior": m.return_behavior,
            "priority": m.priority,
            "dependsOn": m.depends_on,
        },
        "provider": provider,
        "sha256": sha256,
        "requiresApproval": (extra.requires_approval)(tool),
        "health": (extra.health)(&spec.name),
        // How a script calls it (`execute_code`), when the catalog's
        // declarations are too large for that tool's description.
        "typescript": crate::call::code::typescript::declarations([spec]),
    })
}

/// Free text: the tools [`rank`](super::rank) finds, best first, at most
/// `limit`; `total_matches` counts every tool above the floor.
fn free_text(served: &[&Tool], index: &super::rank::Index, query: &str, limit: usize) -> Value {
    let ranked = index.rank(query);
    let total = ranked.len();
    let matches: Vec<Value> = ranked
        .into_iter()
        .take(limit)
        .filter_map(|(name, score)| {
            let tool = served.iter().find(|t| t.spec().name == name)?;
            let mut entry = line(tool.spec());
            entry["score"] = json!((f64::from(score) * 100.0).round() / 100.0);
            Some(entry)
        })
        .collect();
    json!({
        "query": query,
        "matches": matches,
        "total_matches": total,
        "hint": "call a tool by its name; `info:<name>` gives its full description and parameters",
    })
}
