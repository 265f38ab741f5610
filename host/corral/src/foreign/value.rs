//! JSON to component values and back, by the component's own types
//! (wasmtime's, which are exact at run time), following the rules in
//! `schema.rs`. A value that does not fit says where (`a.b[2].value`), what
//! was expected, and what came.

use base64::Engine as _;
use serde_json::{Map, Value, json};
use wasmtime::component::Val;
use wasmtime::component::types::Type;

/// Where in the arguments a value sits, for errors.
pub(crate) type Path<'a> = &'a str;

/// `value` (at `path`) as a component value of `ty`.
///
/// # Errors
/// `"<path>: expected <what>, got <value>"`.
pub(crate) fn from_json(ty: &Type, value: Option<&Value>, path: Path<'_>) -> Result<Val, String> {
    let fail = |expected: &str| {
        let got = value.map_or("nothing".to_string(), |v| {
            let text = v.to_string();
            if text.chars().count() > 60 {
                format!("{}…", text.chars().take(60).collect::<String>())
            } else {
                text
            }
        });
        Err(format!("{path}: expected {expected}, got {got}"))
    };
    if let Type::Option(option) = ty {
        let inner = option.ty();
        return match value {
            None | Some(Value::Null) => Ok(Val::Option(None)),
            Some(v) if matches!(inner, Type::Option(_)) => match v.get("some") {
                Some(some) => Ok(Val::Option(Some(Box::new(from_json(
                    &inner,
                    Some(some),
                    &format!("{path}.some"),
                )?)))),
                None => fail("null or {\"some\": value}"),
            },
            Some(v) => Ok(Val::Option(Some(Box::new(from_json(
                &inner,
                Some(v),
                path,
            )?)))),
        };
    }
    let Some(value) = value else {
        return fail("a value");
    };
    macro_rules! int {
        ($variant:ident, $t:ty) => {
            match integer(value).and_then(|n| <$t>::try_from(n).ok()) {
                Some(n) => Ok(Val::$variant(n)),
                None => fail(concat!("an integer that fits ", stringify!($t))),
            }
        };
    }
    match ty {
        Type::Bool => value
            .as_bool()
            .map(Val::Bool)
            .map_or_else(|| fail("true or false"), Ok),
        Type::S8 => int!(S8, i8),
        Type::U8 => int!(U8, u8),
        Type::S16 => int!(S16, i16),
        Type::U16 => int!(U16, u16),
        Type::S32 => int!(S32, i32),
        Type::U32 => int!(U32, u32),
        Type::S64 => int!(S64, i64),
        Type::U64 => int!(U64, u64),
        // A finite number beyond f32's range is refused, not made infinite.
        Type::Float32 => float(value)
            .filter(|f| !f.is_finite() || (*f as f32).is_finite())
            .map(|f| Val::Float32(f as f32))
            .map_or_else(|| fail("a number within f32's range"), Ok),
        Type::Float64 => float(value)
            .map(Val::Float64)
            .map_or_else(|| fail("a number"), Ok),
        Type::Char => {
            let mut chars = value.as_str().unwrap_or_default().chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Ok(Val::Char(c)),
                _ => fail("a string of one character"),
            }
        }
        Type::String => value
            .as_str()
            .map(|s| Val::String(s.to_string()))
            .map_or_else(|| fail("a string"), Ok),
        Type::List(list) => {
            let inner = list.ty();
            if matches!(inner, Type::U8) {
                let Some(text) = value.as_str() else {
                    return fail("a base64 string");
                };
                return match base64::engine::general_purpose::STANDARD.decode(text) {
                    Ok(bytes) => Ok(Val::List(bytes.into_iter().map(Val::U8).collect())),
                    Err(_) => fail("a base64 string"),
                };
            }
            let Some(items) = value.as_array() else {
                return fail("an array");
            };
            items
                .iter()
                .enumerate()
                .map(|(i, item)| from_json(&inner, Some(item), &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()
                .map(Val::List)
        }
        Type::Record(record) => {
            let Some(object) = value.as_object() else {
                return fail("an object");
            };
            if let Some(unknown) = object
                .keys()
                .find(|k| !record.fields().any(|f| f.name == k.as_str()))
            {
                return Err(format!("{path}: unknown field `{unknown}`"));
            }
            record
                .fields()
                .map(|field| {
                    let val = from_json(
                        &field.ty,
                        object.get(field.name),
                        &format!("{path}.{}", field.name),
                    )?;
                    Ok((field.name.to_string(), val))
                })
                .collect::<Result<_, String>>()
                .map(Val::Record)
        }
        Type::Tuple(tuple) => {
            let types: Vec<Type> = tuple.types().collect();
            match value.as_array() {
                Some(items) if items.len() == types.len() => types
                    .iter()
                    .zip(items)
                    .enumerate()
                    .map(|(i, (t, item))| from_json(t, Some(item), &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()
                    .map(Val::Tuple),
                _ => fail(&format!("an array of {} items", types.len())),
            }
        }
        Type::Variant(variant) => {
            let tag = value.get("tag").and_then(Value::as_str).unwrap_or_default();
            let Some(case) = variant.cases().find(|c| c.name == tag) else {
                let names: Vec<&str> = variant.cases().map(|c| c.name).collect();
                return fail(&format!("{{\"tag\": one of {}}}", names.join(", ")));
            };
            let payload = match &case.ty {
                Some(t) => Some(Box::new(from_json(
                    t,
                    value.get("value"),
                    &format!("{path}.value"),
                )?)),
                None => None,
            };
            Ok(Val::Variant(tag.to_string(), payload))
        }
        Type::Enum(e) => match value.as_str().filter(|s| e.names().any(|n| n == *s)) {
            Some(name) => Ok(Val::Enum(name.to_string())),
            None => fail(&format!(
                "one of {}",
                e.names().collect::<Vec<_>>().join(", ")
            )),
        },
        Type::Flags(flags) => {
            let Some(items) = value.as_array() else {
                return fail("an array of flag names");
            };
            let mut set = Vec::new();
            for item in items {
                match item.as_str().filter(|s| flags.names().any(|n| n == *s)) {
                    Some(name) if !set.iter().any(|s: &String| s == name) => {
                        set.push(name.to_string())
                    }
                    _ => {
                        return fail(&format!(
                            "names among {}, each once",
                            flags.names().collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
            }
            Ok(Val::Flags(set))
        }
        Type::Result(result) => {
            let arm = |t: Option<Type>,
                       v: Option<&Value>,
                       at: &str|
             -> Result<Option<Box<Val>>, String> {
                match t {
                    Some(t) => Ok(Some(Box::new(from_json(&t, v, at)?))),
                    None => Ok(None),
                }
            };
            if let Some(ok) = value.get("ok") {
                Ok(Val::Result(Ok(arm(
                    result.ok(),
                    Some(ok),
                    &format!("{path}.ok"),
                )?)))
            } else if let Some(err) = value.get("err") {
                Ok(Val::Result(Err(arm(
                    result.err(),
                    Some(err),
                    &format!("{path}.err"),
                )?)))
            } else {
                fail("{\"ok\": value} or {\"err\": value}")
            }
        }
        Type::Option(_) => unreachable!("handled above"),
        _ => fail("a value of a type with no JSON form"),
    }
}

/// An integer from a JSON integer or a string of decimal digits.
fn integer(value: &Value) -> Option<i128> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        Value::String(s) => s.parse::<i128>().ok(),
        _ => None,
    }
}

/// A number, or one of the strings for NaN and the infinities.
fn float(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// The largest integer a JSON number carries exactly in common clients.
const EXACT: u64 = 1 << 53;

fn float_json(f: f64) -> Value {
    if f.is_nan() {
        json!("NaN")
    } else if f.is_infinite() {
        json!(if f > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(f)
    }
}

/// A component value of `ty` as JSON (`schema.rs`'s rules).
pub(crate) fn to_json(ty: &Type, val: &Val) -> Value {
    match (ty, val) {
        (_, Val::Bool(b)) => json!(b),
        (_, Val::S8(n)) => json!(n),
        (_, Val::U8(n)) => json!(n),
        (_, Val::S16(n)) => json!(n),
        (_, Val::U16(n)) => json!(n),
        (_, Val::S32(n)) => json!(n),
        (_, Val::U32(n)) => json!(n),
        (_, Val::S64(n)) if n.unsigned_abs() <= EXACT => json!(n),
        (_, Val::S64(n)) => json!(n.to_string()),
        (_, Val::U64(n)) if *n <= EXACT => json!(n),
        (_, Val::U64(n)) => json!(n.to_string()),
        (_, Val::Float32(f)) => float_json(f64::from(*f)),
        (_, Val::Float64(f)) => float_json(*f),
        (_, Val::Char(c)) => json!(c.to_string()),
        (_, Val::String(s)) => json!(s),
        (Type::List(list), Val::List(items)) => {
            let inner = list.ty();
            if matches!(inner, Type::U8) {
                let bytes: Vec<u8> = items
                    .iter()
                    .filter_map(|v| match v {
                        Val::U8(b) => Some(*b),
                        _ => None,
                    })
                    .collect();
                return json!(base64::engine::general_purpose::STANDARD.encode(bytes));
            }
            Value::Array(items.iter().map(|v| to_json(&inner, v)).collect())
        }
        (Type::Record(record), Val::Record(fields)) => Value::Object(
            record
                .fields()
                .zip(fields)
                .filter(|(_, (_, v))| !matches!(v, Val::Option(None)))
                .map(|(field, (name, v))| (name.clone(), to_json(&field.ty, v)))
                .collect::<Map<_, _>>(),
        ),
        (Type::Tuple(tuple), Val::Tuple(items)) => Value::Array(
            tuple
                .types()
                .zip(items)
                .map(|(t, v)| to_json(&t, v))
                .collect(),
        ),
        (Type::Variant(variant), Val::Variant(tag, payload)) => {
            let case_ty = variant.cases().find(|c| c.name == tag).and_then(|c| c.ty);
            match (payload, case_ty) {
                (Some(v), Some(t)) => json!({"tag": tag, "value": to_json(&t, v)}),
                _ => json!({"tag": tag}),
            }
        }
        (_, Val::Enum(name)) => json!(name),
        (_, Val::Option(None)) => Value::Null,
        (Type::Option(option), Val::Option(Some(v))) => {
            let inner = option.ty();
            if matches!(inner, Type::Option(_)) {
                json!({"some": to_json(&inner, v)})
            } else {
                to_json(&inner, v)
            }
        }
        (Type::Result(result), Val::Result(Ok(v))) => {
            json!({"ok": arm(result.ok(), v.as_deref())})
        }
        (Type::Result(result), Val::Result(Err(v))) => {
            json!({"err": arm(result.err(), v.as_deref())})
        }
        (_, Val::Flags(names)) => json!(names),
        _ => Value::Null,
    }
}

/// One arm of a `result` as JSON (`null` for an arm without a payload).
pub(crate) fn arm(ty: Option<Type>, val: Option<&Val>) -> Value {
    match (ty, val) {
        (Some(t), Some(v)) => to_json(&t, v),
        _ => Value::Null,
    }
}
