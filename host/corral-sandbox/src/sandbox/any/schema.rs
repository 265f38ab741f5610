//! WIT types to JSON Schema (draft 2020-12), with their doc comments: the
//! shapes a foreign component's arguments and results take in JSON. The
//! values themselves are converted by `value.rs`, which follows the same
//! rules:
//!
//! | WIT | JSON |
//! |---|---|
//! | `bool` | `true` / `false` |
//! | `s8` … `u32` | an integer within the type's range |
//! | `s64`, `u64` | an integer within the range, or its decimal digits as a string (JSON numbers lose precision past 2^53 in many clients); results beyond ±2^53 come back as strings |
//! | `f32`, `f64` | a number (for `f32`, within its range: a larger one is refused, not made infinite); NaN and the infinities as the strings `"NaN"`, `"Infinity"`, `"-Infinity"` |
//! | `char` | a string of one character |
//! | `string` | a string |
//! | `list<u8>` | a base64 string (`contentEncoding: base64`) |
//! | `list<T>` | an array |
//! | `option<T>` | the value, or `null`; an `option` of something that can itself be `null` (`option<option<T>>`) is tagged: `null` or `{"some": value}` |
//! | `result<T, E>` | `{"ok": value}` or `{"err": value}` (as a result of the call: the value of `ok`, and `err` fails the call) |
//! | `tuple<…>` | an array of exactly its items (`prefixItems`) |
//! | `record` | an object; every field required except `option` fields (missing is `none`) |
//! | `variant` | `{"tag": "case"}`, or `{"tag": "case", "value": value}` for a case with a payload |
//! | `enum` | the case's name |
//! | `flags` | an array of the names that are set, each at most once (results list them in declaration order) |
//!
//! Names (parameters, fields, cases) are the WIT's, in kebab-case.
//! Descriptions come from the doc comments of types, fields and cases, and
//! for a parameter from its line in the function's doc comment
//! ([`param_doc`]: WIT has no syntax for a parameter's own doc).
//! Resources, futures, streams, maps and fixed-length lists have no JSON
//! form: a function using one is not offered (`types.rs`).
//!
//! **Shared types.** A type is inlined where it is used, unless it is used
//! more than once in one tool's arguments and its inlined schema would take
//! more than [`SHARE_ABOVE`] bytes: then it is written once under `$defs`
//! and each use is a `$ref` to it. Small shared types (a `point`, a colour)
//! stay inline for readability; no type is ever copied large, so a schema's
//! size stays linear in the component's types whatever they are.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};
use wit_parser::{Function, Handle, Type, TypeDefKind, TypeId};

use super::docs::{self, Docs};
use super::types::TypeFacts;

/// Above this many bytes of inlined schema (about; docs included), a type
/// used more than once in one tool's arguments goes to `$defs`: 1 KiB.
pub(crate) const SHARE_ABOVE: usize = 1024;

/// Builds schemas for the types of one component.
pub(crate) struct Schemas<'a> {
    /// What is known about its types.
    pub facts: TypeFacts<'a>,
    /// Their doc comments.
    pub docs: &'a Docs,
}

/// One tool's schema being built: the types it writes under `$defs`, and
/// those written so far by key.
struct Build<'s, 'a> {
    schemas: &'s Schemas<'a>,
    to_define: HashMap<TypeId, String>,
    defs: RefCell<Map<String, Value>>,
}

/// The doc of the parameter `name` in a function's doc comment `doc`. WIT
/// has no syntax for documenting a parameter, so the convention of Rust and
/// WASI docs is read: a line that starts with `` `name`: ``, `` `name` - ``,
/// or either after a `-` or `*` bullet, documents the parameter `name` (the
/// rest of the line, and the indented lines after it).
pub(crate) fn param_doc(doc: &str, name: &str) -> Option<String> {
    let quoted = format!("`{name}`");
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let start = line.trim_start();
        let start = start
            .strip_prefix("- ")
            .or_else(|| start.strip_prefix("* "))
            .unwrap_or(start)
            .trim_start();
        let Some(rest) = start.strip_prefix(&quoted) else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(text) = rest
            .strip_prefix(':')
            .or_else(|| rest.strip_prefix('-'))
            .or_else(|| rest.strip_prefix('\u{2014}'))
        else {
            continue;
        };
        let mut text = text.trim().to_string();
        for more in lines.by_ref() {
            if !more.starts_with("  ") || more.trim().is_empty() {
                break;
            }
            text.push(' ');
            text.push_str(more.trim());
        }
        return (!text.is_empty()).then_some(text);
    }
    None
}

fn with_description(mut schema: Value, description: Option<&str>) -> Value {
    if let (Some(text), Value::Object(map)) = (description, &mut schema) {
        map.insert("description".into(), Value::String(text.to_string()));
    }
    schema
}

impl<'a> Schemas<'a> {
    /// Schemas for the types `facts` knows, described by `docs`.
    pub fn new(facts: TypeFacts<'a>, docs: &'a Docs) -> Self {
        Self { facts, docs }
    }

    /// The schema of a function's parameters: an object of them by name,
    /// every parameter required except `option` ones.
    /// `doc` is the function's doc comment, whose parameter lines
    /// ([`param_doc`]) describe the parameters.
    pub fn params(&self, function: &Function, doc: Option<&str>) -> Value {
        let types: Vec<Type> = function.params.iter().map(|p| p.ty).collect();
        let mut to_define = HashMap::new();
        let mut taken = HashSet::new();
        let mut shared = self.facts.shared(&types);
        shared.sort_by_key(|id| id.index());
        for id in shared {
            if self.facts.weight(&Type::Id(id)) <= SHARE_ABOVE {
                continue;
            }
            let name = self.facts.resolve().types[id]
                .name
                .clone()
                .unwrap_or_else(|| "type".into());
            let key = if taken.insert(name.clone()) {
                name
            } else {
                format!("{name}-{}", id.index())
            };
            to_define.insert(id, key);
        }
        let build = Build {
            schemas: self,
            to_define,
            defs: RefCell::default(),
        };
        let mut properties = Map::new();
        let mut required = Vec::new();
        for param in &function.params {
            let mut schema = build.schema(&param.ty);
            if let Some(text) = doc.and_then(|d| param_doc(d, &param.name)) {
                schema = with_description(schema, Some(&text));
            }
            properties.insert(param.name.clone(), schema);
            if !self.facts.nullable(&param.ty) {
                required.push(Value::String(param.name.clone()));
            }
        }
        let mut schema = json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        });
        let defs = build.defs.into_inner();
        if !defs.is_empty() {
            schema["$defs"] = Value::Object(defs);
        }
        schema
    }
}

impl Build<'_, '_> {
    /// The schema of a value of `ty` (whose types nest at most
    /// [`MAX_DEPTH`](super::types::MAX_DEPTH) deep: `TypeFacts::unsupported`
    /// refused the rest).
    fn schema(&self, ty: &Type) -> Value {
        let range = |min: i64, max: u64| json!({"type": "integer", "minimum": min, "maximum": max});
        match ty {
            Type::Bool => json!({"type": "boolean"}),
            Type::U8 => range(0, u8::MAX.into()),
            Type::U16 => range(0, u16::MAX.into()),
            Type::U32 => range(0, u32::MAX.into()),
            Type::S8 => range(i8::MIN.into(), i8::MAX as u64),
            Type::S16 => range(i16::MIN.into(), i16::MAX as u64),
            Type::S32 => range(i32::MIN.into(), i32::MAX as u64),
            Type::U64 => json!({"type": ["integer", "string"], "minimum": 0, "maximum": u64::MAX,
                "pattern": "^[0-9]+$"}),
            Type::S64 => json!({"type": ["integer", "string"], "minimum": i64::MIN,
                "maximum": i64::MAX, "pattern": "^-?[0-9]+$"}),
            Type::F32 => json!({"anyOf": [
                {"type": "number", "minimum": -f32::MAX, "maximum": f32::MAX},
                {"enum": ["NaN", "Infinity", "-Infinity"]}]}),
            Type::F64 => json!({"anyOf": [{"type": "number"},
                {"enum": ["NaN", "Infinity", "-Infinity"]}]}),
            Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
            Type::String => json!({"type": "string"}),
            Type::ErrorContext => json!({}),
            Type::Id(id) => self.use_of(*id),
        }
    }

    /// The schema of a use of the type definition `id`: a `$ref` to its
    /// entry in `$defs` (written on its first use) when it is shared and
    /// large, or else the definition inlined.
    fn use_of(&self, id: TypeId) -> Value {
        let Type::Id(id) = self.schemas.facts.base(&Type::Id(id)) else {
            return self.schema(&self.schemas.facts.base(&Type::Id(id)));
        };
        let Some(key) = self.to_define.get(&id) else {
            return self.named(id);
        };
        if !self.defs.borrow().contains_key(key) {
            // Claimed before it is built, so a use inside it (there is none:
            // component types are not recursive) could not build it twice.
            self.defs.borrow_mut().insert(key.clone(), json!({}));
            let schema = self.named(id);
            self.defs.borrow_mut().insert(key.clone(), schema);
        }
        json!({ "$ref": format!("#/$defs/{key}") })
    }

    /// The schema of a type definition, with its own doc comment.
    fn named(&self, id: TypeId) -> Value {
        let resolve = self.schemas.facts.resolve();
        let ty = &resolve.types[id];
        let owner = docs::owner_of(resolve, ty.owner);
        let name = ty.name.clone().unwrap_or_default();
        let doc = |path: &[&str]| self.schemas.docs.get(&docs::key(&owner, path));
        let own = ty.name.as_deref().and_then(|n| doc(&[n]));
        let schema = match &ty.kind {
            TypeDefKind::Record(record) => {
                let mut properties = Map::new();
                let mut required = Vec::new();
                for field in &record.fields {
                    let described =
                        with_description(self.schema(&field.ty), doc(&[&name, &field.name]));
                    properties.insert(field.name.clone(), described);
                    if !self.schemas.facts.nullable(&field.ty) {
                        required.push(Value::String(field.name.clone()));
                    }
                }
                json!({"type": "object", "properties": properties, "required": required,
                    "additionalProperties": false})
            }
            TypeDefKind::Variant(variant) => {
                let cases: Vec<Value> = variant
                    .cases
                    .iter()
                    .map(|case| {
                        let mut properties = Map::new();
                        properties.insert("tag".into(), json!({"const": case.name}));
                        let mut required = vec![json!("tag")];
                        if let Some(payload) = &case.ty {
                            properties.insert("value".into(), self.schema(payload));
                            required.push(json!("value"));
                        }
                        with_description(
                            json!({"type": "object", "properties": properties,
                                "required": required, "additionalProperties": false}),
                            doc(&[&name, &case.name]),
                        )
                    })
                    .collect();
                json!({"oneOf": cases})
            }
            TypeDefKind::Enum(e) => {
                let cases: Vec<Value> = e
                    .cases
                    .iter()
                    .map(|case| {
                        with_description(json!({"const": case.name}), doc(&[&name, &case.name]))
                    })
                    .collect();
                json!({"type": "string", "oneOf": cases})
            }
            TypeDefKind::Flags(flags) => {
                let names: Vec<&str> = flags.flags.iter().map(|f| f.name.as_str()).collect();
                let mut schema =
                    json!({"type": "array", "items": {"enum": names}, "uniqueItems": true});
                let described: Vec<String> = flags
                    .flags
                    .iter()
                    .filter_map(|f| doc(&[&name, &f.name]).map(|d| format!("`{}`: {d}", f.name)))
                    .collect();
                if !described.is_empty() {
                    schema["items"]["description"] = json!(described.join("; "));
                }
                schema
            }
            TypeDefKind::Tuple(tuple) => {
                let items: Vec<Value> = tuple.types.iter().map(|t| self.schema(t)).collect();
                let n = items.len();
                json!({"type": "array", "prefixItems": items, "items": false,
                    "minItems": n, "maxItems": n})
            }
            TypeDefKind::Option(inner) => {
                if self.schemas.facts.nullable(inner) {
                    json!({"anyOf": [{"type": "null"}, {"type": "object",
                        "properties": {"some": self.schema(inner)}, "required": ["some"],
                        "additionalProperties": false}]})
                } else {
                    json!({"anyOf": [self.schema(inner), {"type": "null"}]})
                }
            }
            TypeDefKind::Result(result) => {
                let arm = |tag: &str, ty: &Option<Type>| {
                    let value = ty
                        .as_ref()
                        .map_or(json!({"type": "null"}), |t| self.schema(t));
                    json!({"type": "object", "properties": {tag: value}, "required": [tag],
                        "additionalProperties": false})
                };
                json!({"oneOf": [arm("ok", &result.ok), arm("err", &result.err)]})
            }
            TypeDefKind::List(inner) if self.schemas.facts.base(inner) == Type::U8 => {
                json!({"type": "string", "contentEncoding": "base64"})
            }
            TypeDefKind::List(inner) => json!({"type": "array", "items": self.schema(inner)}),
            TypeDefKind::Type(inner) => self.schema(inner),
            TypeDefKind::Resource
            | TypeDefKind::Handle(Handle::Own(_) | Handle::Borrow(_))
            | TypeDefKind::Future(_)
            | TypeDefKind::Stream(_)
            | TypeDefKind::Map(..)
            | TypeDefKind::FixedLengthList(..)
            | TypeDefKind::Unknown => json!({}),
        };
        with_description(schema, own)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Schemas, param_doc};
    use crate::sandbox::any::docs::Docs;
    use crate::sandbox::any::types::TypeFacts;

    /// The WIT text `wit` parsed, and its function `f`.
    fn function_f(wit: &str) -> (wit_parser::Resolve, wit_parser::Function) {
        let mut resolve = wit_parser::Resolve::default();
        resolve.push_str("deep.wit", wit).expect("parses");
        let function = resolve
            .interfaces
            .iter()
            .find_map(|(_, i)| i.functions.get("f"))
            .expect("f")
            .clone();
        (resolve, function)
    }

    #[test]
    fn a_type_used_twice_at_every_level_is_defined_once() {
        // r0 is a u8; each r<n> holds two r<n-1>: r40 inlined would be 2^40
        // copies of r0.
        let mut wit = String::from("package t:deep;\ninterface i {\n  record r0 { v: u8 }\n");
        for n in 1..=40 {
            wit.push_str(&format!(
                "  record r{n} {{ a: r{}, b: r{} }}\n",
                n - 1,
                n - 1
            ));
        }
        wit.push_str("  f: func(x: r40, y: r40);\n}\n");
        let (resolve, function) = function_f(&wit);
        let docs = Docs::default();
        let schemas = Schemas::new(TypeFacts::new(&resolve, &docs), &docs);
        let ty = function.params[0].ty;
        assert_eq!(schemas.facts.depth(&ty), 41);
        assert_eq!(schemas.facts.unsupported(&ty), None);
        let schema = schemas.params(&function, None);
        let text = schema.to_string();
        assert!(
            text.len() < 64 << 10,
            "linear, not exponential: {} bytes",
            text.len()
        );
        // The large shared types are defined once and referred to.
        assert_eq!(schema["properties"]["x"], json!({"$ref": "#/$defs/r40"}));
        assert_eq!(schema["properties"]["y"], json!({"$ref": "#/$defs/r40"}));
        assert_eq!(
            schema["$defs"]["r40"]["properties"]["a"],
            json!({"$ref": "#/$defs/r39"})
        );
        // Small ones stay inline.
        assert!(schema["$defs"].get("r0").is_none(), "{text}");
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        assert!(!validator.is_valid(&json!({"x": 1, "y": 2})));
    }

    #[test]
    fn types_nested_too_deep_are_refused_without_recursion() {
        let mut wit = String::from("package t:deep;\ninterface i {\n");
        wit.push_str("  f: func(x: ");
        // 80 levels: WIT text allows up to 100, a binary component more.
        for _ in 0..80 {
            wit.push_str("list<");
        }
        wit.push_str("u8");
        for _ in 0..80 {
            wit.push('>');
        }
        wit.push_str(");\n}\n");
        let (resolve, function) = function_f(&wit);
        let docs = Docs::default();
        let facts = TypeFacts::new(&resolve, &docs);
        assert_eq!(facts.depth(&function.params[0].ty), 80);
        assert_eq!(
            facts.unsupported(&function.params[0].ty),
            Some("types nested more than 64 deep")
        );
    }

    #[test]
    fn parameter_lines_of_a_doc_comment_describe_parameters() {
        let doc = "Lists a directory.\n\n# Parameters\n- `path`: the directory,\n  as the \
                   component sees it\n* `depth` - how deep\n`all`: hidden files too\n\
                   `pathology` is not `path`";
        assert_eq!(
            param_doc(doc, "path").as_deref(),
            Some("the directory, as the component sees it")
        );
        assert_eq!(param_doc(doc, "depth").as_deref(), Some("how deep"));
        assert_eq!(param_doc(doc, "all").as_deref(), Some("hidden files too"));
        assert_eq!(param_doc(doc, "pathology"), None, "no `:` or `-` after it");
        assert_eq!(param_doc(doc, "missing"), None);
        assert_eq!(param_doc("`x`:", "x"), None, "an empty doc is none");
    }
}
