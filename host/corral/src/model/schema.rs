//! JSON Schema helpers, in one place: checking a tool's `parameters` text and
//! compiling it once, and validating a value against a compiled schema with
//! messages a model can act on.
//!
//! Rules for a tool's arguments schema (WIT `tool-spec.parameters`, and MCP's
//! requirement that an `inputSchema` describes an object): it is JSON, a valid
//! JSON Schema (draft 2020-12 unless its `$schema` says otherwise), and has
//! `"type": "object"`. An object schema without `properties` gets an empty
//! `"properties": {}` (a tool with no parameters), which some MCP clients
//! require.

use serde_json::Value;

/// Parses, checks and compiles an arguments schema.
///
/// # Errors
/// A message naming the rule the schema breaks and how to fix it.
pub fn compile_parameters(text: &str) -> Result<(Value, jsonschema::Validator), String> {
    let mut schema: Value = serde_json::from_str(text)
        .map_err(|err| format!("the parameters schema is not JSON: {err}"))?;
    if let Err(err) = jsonschema::meta::validate(&schema) {
        return Err(format!(
            "the parameters schema is not a valid JSON Schema: {err} (at `{}`)",
            err.instance_path()
        ));
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(
            "the parameters schema must describe an object (`\"type\": \"object\"`): \
             arguments are always a JSON object"
                .into(),
        );
    }
    if let Some(object) = schema.as_object_mut() {
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    let validator = compile(&schema, "parameters")?;
    Ok((schema, validator))
}

/// Parses, checks and compiles a result schema (WIT 0.2.0 `output-schema`):
/// any valid JSON Schema.
///
/// # Errors
/// A message naming the rule the schema breaks and how to fix it.
pub(crate) fn compile_output(text: &str) -> Result<(Value, jsonschema::Validator), String> {
    let schema: Value = serde_json::from_str(text)
        .map_err(|err| format!("the output schema is not JSON: {err}"))?;
    if let Err(err) = jsonschema::meta::validate(&schema) {
        return Err(format!(
            "the output schema is not a valid JSON Schema: {err} (at `{}`)",
            err.instance_path()
        ));
    }
    let validator = compile(&schema, "output")?;
    Ok((schema, validator))
}

/// Compiles `schema` (the `what` schema of a tool), refusing external
/// references with a message that says why.
fn compile(schema: &Value, what: &str) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema).map_err(|err| {
        let text = err.to_string();
        match text.split('\'').nth(1) {
            // corral never fetches a schema: no network, no files.
            Some(target) if text.contains("is not present in a registry") => format!(
                "the {what} schema refers to an external document (`{target}`), which \
                 corral never fetches; inline it, or use a local `#/$defs/...` reference"
            ),
            _ => format!("the {what} schema does not compile: {text}"),
        }
    })
}

/// Checks `value` against `validator`.
///
/// # Errors
/// Every violation, each as "`<json pointer>`: `<problem>`" (the root is shown
/// as `(root)`).
pub fn problems(validator: &jsonschema::Validator, value: &Value) -> Result<(), Vec<String>> {
    // The common case first: `is_valid` stops at the first failure and
    // builds no error values.
    if validator.is_valid(value) {
        return Ok(());
    }
    let problems: Vec<String> = validator
        .iter_errors(value)
        .map(|err| {
            let path = err.instance_path().to_string();
            let path = if path.is_empty() {
                "(root)".to_string()
            } else {
                path
            };
            format!("`{path}`: {err}")
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Every string in a JSON value (object keys included), with a JSON pointer
/// to where it is, for checking a schema's text ([`corral_names::text::check`]).
pub(crate) fn json_strings(value: &serde_json::Value) -> Vec<(String, &str)> {
    fn walk<'a>(value: &'a serde_json::Value, at: String, out: &mut Vec<(String, &'a str)>) {
        match value {
            serde_json::Value::String(s) => out.push((at, s)),
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{at}/{i}"), out);
                }
            }
            serde_json::Value::Object(map) => {
                for (key, item) in map {
                    let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                    out.push((here.clone(), key));
                    walk(item, here, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_must_be_valid_object_schemas() {
        assert!(compile_parameters(r#"{"type":"object"}"#).is_ok());
        let (schema, _) = compile_parameters(r#"{"type":"object"}"#).expect("valid");
        assert_eq!(schema["properties"], serde_json::json!({}));
        assert!(compile_parameters("{").unwrap_err().contains("not JSON"));
        let invalid = compile_parameters(r#"{"type":"object","minLength":"x"}"#).unwrap_err();
        assert!(invalid.contains("not a valid JSON Schema"), "{invalid}");
        let not_object = compile_parameters(r#"{"type":"string"}"#).unwrap_err();
        assert!(
            not_object.contains("must describe an object"),
            "{not_object}"
        );
    }

    #[test]
    fn problems_name_the_path() {
        let (_, validator) =
            compile_parameters(r#"{"type":"object","properties":{"n":{"type":"integer"}}}"#)
                .expect("valid");
        let found = problems(&validator, &serde_json::json!({"n": "ten"})).unwrap_err();
        assert!(found[0].starts_with("`/n`:"), "{found:?}");
        let root = problems(&validator, &serde_json::json!([])).unwrap_err();
        assert!(root[0].starts_with("`(root)`:"), "{root:?}");
    }

    #[test]
    fn strings_of_a_schema_carry_their_pointer() {
        let schema = serde_json::json!({"properties": {"a/b": {"description": "d"}}});
        let found = json_strings(&schema);
        assert!(found.contains(&("/properties/a~1b/description".to_string(), "d")));
        assert!(found.contains(&("/properties/a~1b".to_string(), "a/b")));
    }
}

#[cfg(test)]
mod hostile_schemas {
    //! Schemas a hostile plugin might declare: each is refused at load or
    //! validated in bounded time and stack.
    use super::*;

    #[test]
    fn external_refs_are_refused_not_fetched() {
        for target in ["https://example.com/s.json", "file:///etc/passwd"] {
            let schema =
                format!(r#"{{"type":"object","properties":{{"a":{{"$ref":"{target}"}}}}}}"#);
            let err = compile_parameters(&schema).unwrap_err();
            assert!(err.contains("refers to an external document"), "{err}");
            assert!(err.contains(target), "{err}");
        }
    }

    #[test]
    fn recursive_refs_validate_without_looping() {
        for schema in [
            r##"{"type":"object","$ref":"#"}"##,
            r##"{"type":"object","properties":{"a":{"$ref":"#"}}}"##,
        ] {
            let (_, validator) = compile_parameters(schema).expect("a recursive schema compiles");
            // As deep as serde_json parses (128 levels).
            let mut deep = serde_json::json!({});
            for _ in 0..120 {
                deep = serde_json::json!({ "a": deep });
            }
            assert!(problems(&validator, &deep).is_ok(), "{schema}");
        }
    }

    #[test]
    fn a_catastrophic_pattern_matches_in_linear_time() {
        // `^(a+)+$` against "aaa…a!" takes exponential time in a backtracking
        // engine; the validator's regex engine has none. The thread bound
        // only turns a hang into a failure.
        let (_, validator) = compile_parameters(
            r#"{"type":"object","properties":{"a":{"type":"string","pattern":"^(a+)+$"}}}"#,
        )
        .expect("compiles");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let value = serde_json::json!({ "a": format!("{}!", "a".repeat(5_000)) });
            let _ = tx.send(problems(&validator, &value).is_err());
        });
        let rejected = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the pattern check returns");
        assert!(rejected);
    }
}
