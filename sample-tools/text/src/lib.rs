//! The `text` sample plugin: word statistics, URL slugs and regex extraction.

use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// The text to analyse.
    text: String,
}

/// Count the words, characters, lines and sentences of a text. Words are
/// whitespace-separated; characters are Unicode scalar values.
#[tool(category = "text", keywords("count", "words", "length"), idempotent)]
fn word_count(args: CountArgs) -> Result<Value, ToolError> {
    let text = &args.text;
    let sentences = text
        .split(['.', '!', '?'])
        .filter(|s| !s.trim().is_empty())
        .count();
    Ok(json!({
        "words": text.split_whitespace().count(),
        "characters": text.chars().count(),
        "lines": if text.is_empty() { 0 } else { text.lines().count() },
        "sentences": sentences,
    }))
}

#[derive(Deserialize, JsonSchema)]
struct SlugArgs {
    /// The title or phrase to turn into a slug, e.g. "Hello, Wörld!".
    text: String,
}

/// Turn a title into a URL slug: lowercase ASCII words joined by hyphens
/// ("Hello, Wörld!" becomes "hello-world").
#[tool(category = "text", keywords("url", "slug"), idempotent)]
fn slugify(args: SlugArgs) -> Result<Value, ToolError> {
    Ok(json!({ "slug": slug::slugify(&args.text) }))
}

#[derive(Deserialize, JsonSchema)]
struct ExtractArgs {
    /// The text to search.
    text: String,
    /// A regular expression in Rust `regex` syntax (no look-around or
    /// back-references). Named groups `(?P<name>...)` appear by name in the result.
    pattern: String,
    /// Return at most this many matches.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 10000))]
    limit: usize,
}

fn default_limit() -> usize {
    100
}

/// Find every match of a regular expression in a text. Returns each match with
/// its byte offset and capture groups, so later steps can use the pieces.
#[tool(
    category = "text",
    keywords("regex", "extract", "search", "match"),
    idempotent
)]
fn regex_extract(args: ExtractArgs) -> Result<Value, ToolError> {
    let re = regex::Regex::new(&args.pattern)
        .map_err(|err| ToolError::invalid(format!("invalid `pattern`: {err}")))?;
    let names: Vec<Option<&str>> = re.capture_names().collect();
    let mut matches = Vec::new();
    for caps in re.captures_iter(&args.text).take(args.limit) {
        let Some(whole) = caps.get(0) else { continue };
        let mut groups = serde_json::Map::new();
        for (i, name) in names.iter().enumerate().skip(1) {
            let key = name.map_or_else(|| i.to_string(), str::to_string);
            let value = caps.get(i).map_or(Value::Null, |m| json!(m.as_str()));
            groups.insert(key, value);
        }
        matches.push(json!({ "match": whole.as_str(), "start": whole.start(), "groups": groups }));
    }
    Ok(json!({ "count": matches.len(), "matches": matches }))
}

corral_guest::plugin!(word_count, slugify, regex_extract);
