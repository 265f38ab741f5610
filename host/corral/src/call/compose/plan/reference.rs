//! `$ref` references between plan steps: finding them in a step's arguments
//! and substituting the referenced output (the tool-planning guide's reference syntax and
//! insertion rules).
//!
//! Syntax: `$ref:STEP`, `$ref:STEP.field`, `$ref:STEP.a.b`, with array indexes
//! as path segments (`$ref:STEP.items.0`). A step id is `[A-Za-z0-9_-]` (`step_id.rs`); a
//! path segment is `[A-Za-z0-9_]`.
//!
//! Insertion, when a JSON string in the arguments is exactly one reference:
//!
//! | referenced value | inserted as |
//! |---|---|
//! | JSON object or array | the structured JSON, unquoted |
//! | plain text (output that is not JSON) | a JSON string |
//! | a JSON string | that string |
//! | a number or boolean | the JSON primitive |
//! | a missing field (or any path into plain text) | `null` |
//!
//! A reference embedded in a longer string (`"total: $ref:a.count items"`) is
//! interpolated as text: strings are inserted without quotes, every other value
//! as compact JSON, a missing field as `null`. The result stays a string.

use serde_json::Value;

/// One parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The referenced step id.
    pub step: String,
    /// Field names and array indexes below the step's output; empty for the
    /// whole output.
    pub path: Vec<String>,
}

const PREFIX: &str = "$ref:";

fn is_field_char(c: char) -> bool {
    corral_names::ident::FIELD.allows_char(c)
}

/// Parses the reference at the start of `text` (just after `$ref:`), returning
/// it and the number of bytes it spans.
fn parse_at(text: &str) -> Option<(Reference, usize)> {
    let id_len = text
        .find(|c| !super::step_id::is_char(c))
        .unwrap_or(text.len());
    if id_len == 0 {
        return None;
    }
    let mut reference = Reference {
        step: text[..id_len].to_string(),
        path: Vec::new(),
    };
    let mut end = id_len;
    while text[end..].starts_with('.') {
        let rest = &text[end + 1..];
        let len = rest.find(|c| !is_field_char(c)).unwrap_or(rest.len());
        if len == 0 {
            break; // a trailing dot is punctuation, not a path
        }
        reference.path.push(rest[..len].to_string());
        end += 1 + len;
    }
    Some((reference, end))
}

/// The pieces of a string: literal text and references, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Ref(Reference),
}

fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(PREFIX) {
        let after = &rest[start + PREFIX.len()..];
        match parse_at(after) {
            Some((reference, len)) => {
                if start > 0 {
                    out.push(Piece::Text(&rest[..start]));
                }
                out.push(Piece::Ref(reference));
                rest = &after[len..];
            }
            None => {
                out.push(Piece::Text(&rest[..start + PREFIX.len()]));
                rest = after;
            }
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// Every reference anywhere in `value` (in strings, at any depth).
pub fn find(value: &Value) -> Vec<Reference> {
    let mut found = Vec::new();
    walk_strings(value, &mut |s| {
        for piece in pieces(s) {
            if let Piece::Ref(r) = piece {
                found.push(r);
            }
        }
    });
    found
}

fn walk_strings(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| walk_strings(v, f)),
        Value::Object(map) => {
            for (k, v) in map {
                f(k);
                walk_strings(v, f);
            }
        }
        _ => {}
    }
}

/// A finished step's output, as references see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// The output parsed as JSON.
    Json(Value),
    /// Output that is not JSON.
    Text(String),
}

impl Output {
    /// Classifies raw output text.
    pub fn from_text(text: &str) -> Self {
        match serde_json::from_str(text) {
            Ok(value) => Output::Json(value),
            Err(_) => Output::Text(text.to_string()),
        }
    }

    /// The value a reference with `path` selects, per the insertion table.
    pub fn select(&self, path: &[String]) -> Value {
        match self {
            Output::Text(text) if path.is_empty() => Value::String(text.clone()),
            Output::Text(_) => Value::Null,
            Output::Json(value) => {
                let mut current = value;
                for segment in path {
                    let next = match current {
                        Value::Object(map) => map.get(segment),
                        Value::Array(items) => {
                            segment.parse::<usize>().ok().and_then(|i| items.get(i))
                        }
                        _ => None,
                    };
                    match next {
                        Some(v) => current = v,
                        None => return Value::Null,
                    }
                }
                current.clone()
            }
        }
    }
}

/// Replaces every reference in `value` using `lookup` (step id to output).
/// References to steps `lookup` does not know become `null`; validation has
/// already rejected unknown steps, so that only happens for a caller's bug.
pub fn substitute(value: &Value, lookup: &impl Fn(&str) -> Option<Output>) -> Value {
    match value {
        Value::String(s) => substitute_string(s, lookup),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, lookup)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, lookup)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn resolve(reference: &Reference, lookup: &impl Fn(&str) -> Option<Output>) -> Value {
    lookup(&reference.step)
        .map(|out| out.select(&reference.path))
        .unwrap_or(Value::Null)
}

fn substitute_string(text: &str, lookup: &impl Fn(&str) -> Option<Output>) -> Value {
    let parts = pieces(text);
    match parts.as_slice() {
        [] => Value::String(String::new()),
        [Piece::Ref(reference)] => resolve(reference, lookup),
        _ if !parts.iter().any(|p| matches!(p, Piece::Ref(_))) => Value::String(text.to_string()),
        _ => {
            let mut out = String::new();
            for piece in parts {
                match piece {
                    Piece::Text(t) => out.push_str(t),
                    Piece::Ref(reference) => match resolve(&reference, lookup) {
                        Value::String(s) => out.push_str(&s),
                        other => out.push_str(&other.to_string()),
                    },
                }
            }
            Value::String(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(step: &str, path: &[&str]) -> Reference {
        Reference {
            step: step.into(),
            path: path.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn parses_the_three_syntax_rows_and_indexes() {
        assert_eq!(
            find(&json!("$ref:weather_tokyo")),
            [r("weather_tokyo", &[])]
        );
        assert_eq!(
            find(&json!("$ref:weather_tokyo.temp")),
            [r("weather_tokyo", &["temp"])]
        );
        assert_eq!(
            find(&json!("$ref:user_data.address.city")),
            [r("user_data", &["address", "city"])]
        );
        assert_eq!(
            find(&json!("$ref:s.items.0.name")),
            [r("s", &["items", "0", "name"])]
        );
        assert_eq!(
            find(&json!({"a": ["$ref:x", {"b": "see $ref:y.z."}], "n": 1})),
            [r("x", &[]), r("y", &["z"])]
        );
        assert!(find(&json!("$ref: nothing, $ref:")).is_empty());
    }

    fn lookup(step: &str) -> Option<Output> {
        match step {
            "obj" => Some(Output::from_text(
                r#"{"temp": 21.5, "ok": true, "tags": ["a", "b"], "city": "Oslo"}"#,
            )),
            "arr" => Some(Output::from_text("[1, 2, 3]")),
            "plain" => Some(Output::from_text("sunny and warm")),
            "num" => Some(Output::from_text("42")),
            _ => None,
        }
    }

    #[test]
    fn insertion_follows_the_table() {
        // Object or array: structured JSON.
        assert_eq!(
            substitute(&json!("$ref:obj"), &lookup),
            json!({"temp": 21.5, "ok": true, "tags": ["a", "b"], "city": "Oslo"})
        );
        assert_eq!(substitute(&json!("$ref:arr"), &lookup), json!([1, 2, 3]));
        assert_eq!(
            substitute(&json!("$ref:obj.tags"), &lookup),
            json!(["a", "b"])
        );
        // Plain text: a JSON string.
        assert_eq!(
            substitute(&json!("$ref:plain"), &lookup),
            json!("sunny and warm")
        );
        // Numbers and booleans: primitives.
        assert_eq!(substitute(&json!("$ref:obj.temp"), &lookup), json!(21.5));
        assert_eq!(substitute(&json!("$ref:obj.ok"), &lookup), json!(true));
        assert_eq!(substitute(&json!("$ref:num"), &lookup), json!(42));
        // Missing field: null.
        assert_eq!(substitute(&json!("$ref:obj.nope"), &lookup), Value::Null);
        assert_eq!(
            substitute(&json!("$ref:obj.city.deeper"), &lookup),
            Value::Null
        );
        assert_eq!(substitute(&json!("$ref:plain.field"), &lookup), Value::Null);
        assert_eq!(substitute(&json!("$ref:arr.7"), &lookup), Value::Null);
        // Array index.
        assert_eq!(substitute(&json!("$ref:obj.tags.1"), &lookup), json!("b"));
        // Nested positions keep their structure.
        assert_eq!(
            substitute(&json!({"data": ["$ref:num", "$ref:obj.city"]}), &lookup),
            json!({"data": [42, "Oslo"]})
        );
    }

    #[test]
    fn embedded_references_interpolate_as_text() {
        assert_eq!(
            substitute(
                &json!("It is $ref:obj.temp degrees in $ref:obj.city."),
                &lookup
            ),
            json!("It is 21.5 degrees in Oslo.")
        );
        assert_eq!(
            substitute(&json!("tags=$ref:obj.tags missing=$ref:obj.x"), &lookup),
            json!(r#"tags=["a","b"] missing=null"#)
        );
        assert_eq!(
            substitute(&json!("no refs here"), &lookup),
            json!("no refs here")
        );
    }
}
