//! Typed stubs for code mode: TypeScript declarations of the tools a script
//! can call, from each tool's parameters schema and output schema, with its
//! description as JSDoc. A model reads them (in `execute_code`'s
//! description, or `corral describe --typescript`) to write the calls.
//!
//! The mapping (JSON Schema → TypeScript): `string`, `number`/`integer`
//! (`number`), `boolean`, `null`; `array` with `items` (`T[]`); `object`
//! with `properties` (optional unless `required`; required ones first, then
//! by name) and
//! `additionalProperties` (an index signature); `enum` and `const`
//! (literal unions); `anyOf`/`oneOf` and type lists (unions); local `$ref`s
//! into `$defs` or `definitions`. Anything else, and anything nested more
//! than [`MAX_DEPTH`] deep, is `unknown`. A tool without an output schema
//! returns `unknown` (its text or parsed JSON).
//!
//! Descriptions and property names are guest text: a description is cut
//! to [`MAX_DOC_CHARS`], escaped (`corral_names::text`) and kept from
//! closing its comment; a property name that is not an identifier is
//! written as a JSON string.

use serde_json::Value;

use crate::model::spec::ToolSpec;

/// Deepest schema nesting written out; deeper parts are `unknown`.
pub const MAX_DEPTH: usize = 8;

/// Longest description kept in a declaration's JSDoc, in characters.
pub const MAX_DOC_CHARS: usize = 400;

/// The declaration of `tools`, with one method per tool in `specs` and
/// `parallel`.
pub fn declarations<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> String {
    let mut out = String::from("declare const tools: {\n");
    for spec in specs {
        out.push_str(&method(spec));
    }
    out.push_str(
        "  /** One wave; results in order; the first failure throws. */\n  \
         parallel(calls: [name: string, args: object][]): Promise<unknown[]>;\n",
    );
    out.push_str("};\n");
    out
}

/// One tool's method: its JSDoc, name, argument type and result type.
pub fn method(spec: &ToolSpec) -> String {
    let args = type_of(&spec.parameters, &spec.parameters, 2, 0);
    let result = spec
        .output_schema
        .as_ref()
        .map_or_else(|| "unknown".to_string(), |s| type_of(s, s, 2, 0));
    format!(
        "{}  {}(args: {args}): Promise<{result}>;\n",
        doc(&spec.description, 2),
        key(&spec.name)
    )
}

/// A JSDoc comment of guest text at `indent`, or nothing for an empty text.
fn doc(text: &str, indent: usize) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let cut: String = text.chars().take(MAX_DOC_CHARS).collect();
    let cut = if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    };
    // One line, escaped, and unable to close the comment early.
    let line =
        corral_names::text::escape(&cut.replace(['\n', '\r', '\t'], " ")).replace("*/", "*\\/");
    format!("{}/** {line} */\n", " ".repeat(indent))
}

/// A property or method name: as it is when it is an identifier, else a
/// JSON string.
fn key(name: &str) -> String {
    let mut chars = name.chars();
    let identifier = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_string()
    } else {
        Value::String(name.to_string()).to_string()
    }
}

/// The TypeScript type of `schema` (a part of `root`), its object members
/// indented to `indent`.
fn type_of(schema: &Value, root: &Value, indent: usize, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    let Some(object) = schema.as_object() else {
        // `true` (anything) and `false` (nothing).
        return if schema == &Value::Bool(false) {
            "never"
        } else {
            "unknown"
        }
        .into();
    };
    if let Some(target) = object.get("$ref").and_then(Value::as_str) {
        return match resolve(target, root) {
            Some(resolved) => type_of(resolved, root, indent, depth + 1),
            None => "unknown".into(),
        };
    }
    if let Some(value) = object.get("const") {
        return literal(value);
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return union(values.iter().map(literal).collect());
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(options) = object.get(keyword).and_then(Value::as_array) {
            return union(
                options
                    .iter()
                    .map(|o| type_of(o, root, indent, depth + 1))
                    .collect(),
            );
        }
    }
    match object.get("type") {
        Some(Value::String(kind)) => typed(kind, object, root, indent, depth),
        Some(Value::Array(kinds)) => union(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| typed(kind, object, root, indent, depth))
                .collect(),
        ),
        _ if object.contains_key("properties") => typed("object", object, root, indent, depth),
        _ => "unknown".into(),
    }
}

fn typed(
    kind: &str,
    object: &serde_json::Map<String, Value>,
    root: &Value,
    indent: usize,
    depth: usize,
) -> String {
    match kind {
        "string" => "string".into(),
        "number" | "integer" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        // A tuple (JSON Schema 2020-12 `prefixItems`, how any-component mode
        // writes WIT's `tuple<…>`): `[A, B]`.
        "array" if object.get("prefixItems").is_some_and(Value::is_array) => {
            let items = object["prefixItems"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            let items: Vec<String> = items
                .iter()
                .map(|item| type_of(item, root, indent, depth + 1))
                .collect();
            format!("[{}]", items.join(", "))
        }
        "array" => match object.get("items") {
            Some(items) => {
                let item = type_of(items, root, indent, depth + 1);
                if union_at_top(&item) {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            None => "unknown[]".into(),
        },
        "object" => members(object, root, indent, depth),
        _ => "unknown".into(),
    }
}

/// Whether `ty` is a union at its top level (`A | B`, not `{ a: A | B }`),
/// so that `[]` after it needs parentheses.
fn union_at_top(ty: &str) -> bool {
    let (mut depth, mut quoted) = (0i32, false);
    let mut chars = ty.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' if quoted => {
                chars.next();
            }
            '{' | '[' | '(' if !quoted => depth += 1,
            '}' | ']' | ')' if !quoted => depth -= 1,
            '|' if !quoted && depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// `{ name: T; other?: U; [key: string]: V }`, one member a line.
fn members(
    object: &serde_json::Map<String, Value>,
    root: &Value,
    indent: usize,
    depth: usize,
) -> String {
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = indent + 2;
    let mut lines = Vec::new();
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        // Required members first, in the order `required` lists them, then
        // the rest by name: the same text whatever order a map keeps.
        let mut names: Vec<&String> = properties.keys().collect();
        names.sort_by_key(|n| {
            (
                required.iter().position(|r| r == n).unwrap_or(usize::MAX),
                n.as_str(),
            )
        });
        for name in names {
            let schema = &properties[name.as_str()];
            let description = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            lines.push(format!(
                "{}{}{}{optional}: {};",
                doc(description, inner),
                " ".repeat(inner),
                key(name),
                type_of(schema, root, inner, depth + 1)
            ));
        }
    }
    match object.get("additionalProperties") {
        Some(Value::Bool(false)) | None if !lines.is_empty() => {}
        Some(Value::Bool(false)) => return "{}".into(),
        Some(extra @ Value::Object(_)) => lines.push(format!(
            "{}[key: string]: {};",
            " ".repeat(inner),
            type_of(extra, root, inner, depth + 1)
        )),
        _ => lines.push(format!("{}[key: string]: unknown;", " ".repeat(inner))),
    }
    format!("{{\n{}\n{}}}", lines.join("\n"), " ".repeat(indent))
}

/// A local `$ref` (`#/$defs/x`, `#/definitions/x`) into `root`.
fn resolve<'a>(target: &str, root: &'a Value) -> Option<&'a Value> {
    let pointer = target.strip_prefix('#')?;
    root.pointer(pointer)
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        _ => "unknown".into(),
    }
}

fn union(mut types: Vec<String>) -> String {
    types.dedup();
    match types.len() {
        0 => "never".into(),
        1 => types.remove(0),
        _ => types.join(" | "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolMetadata;
    use serde_json::json;

    fn spec(name: &str, description: &str, parameters: Value, output: Option<Value>) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
            output_schema: output,
            metadata: ToolMetadata::new("test"),
        }
    }

    #[test]
    fn schemas_map_to_their_typescript_types() {
        let tool = spec(
            "lookup",
            "Find records.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to find."},
                    "limit": {"type": "integer"},
                    "mode": {"enum": ["fast", "exact"]},
                    "tags": {"type": "array", "items": {"type": ["string", "null"]}},
                    "where": {"$ref": "#/$defs/filter"},
                    "weird-name": {"const": 3}
                },
                "required": ["query"],
                "$defs": {"filter": {"type": "object", "additionalProperties": {"type": "number"}}}
            }),
            Some(
                json!({"type": "object", "properties": {"hits": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}, "required": ["hits"]}),
            ),
        );
        let expected = "  /** Find records. */
  lookup(args: {
    /** What to find. */
    query: string;
    limit?: number;
    mode?: \"fast\" | \"exact\";
    tags?: (string | null)[];
    \"weird-name\"?: 3;
    where?: {
      [key: string]: number;
    };
  }): Promise<{
    hits: {
      id: string;
    }[];
  }>;
";
        assert_eq!(method(&tool), expected);
    }

    #[test]
    fn guest_text_cannot_break_out_of_its_comment_or_the_terminal() {
        let tool = spec(
            "evil",
            "Nice tool. */ declare const x: 1; /* \u{1b}[31m",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            None,
        );
        let text = method(&tool);
        assert_eq!(text.matches("*/").count(), 1, "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(
            text.ends_with("evil(args: {}): Promise<unknown>;\n"),
            "{text}"
        );
    }

    #[test]
    fn a_tuple_is_a_typescript_tuple() {
        let tool = spec(
            "pairs",
            "Takes a pair.",
            json!({"type": "object", "properties": {
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                         "items": false, "minItems": 2, "maxItems": 2}
            }, "required": ["pair"]}),
            None,
        );
        let text = method(&tool);
        assert!(text.contains("pair: [string, number];"), "{text}");
        // An array of a union needs parentheses; of an object that holds
        // one, not.
        assert!(union_at_top("{ tag: \"a\" } | { tag: \"b\" }"));
        assert!(!union_at_top("{ a: string | null }"));
        assert!(!union_at_top("\"x | y\""));
    }

    #[test]
    fn deep_or_unknown_schemas_end_in_unknown() {
        let mut deep = json!({"type": "string"});
        for _ in 0..20 {
            deep = json!({"type": "array", "items": deep});
        }
        let text = type_of(&deep, &deep, 0, 0);
        assert!(text.starts_with("unknown"), "{text}");
        assert_eq!(
            type_of(&json!({"$ref": "#/nowhere"}), &json!({}), 0, 0),
            "unknown"
        );
        assert_eq!(type_of(&json!({"not": {}}), &json!({}), 0, 0), "unknown");
    }
}
