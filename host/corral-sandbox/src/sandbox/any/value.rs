//! JSON to component values and back, by the component's own types
//! (wasmtime's, which are exact at run time), following the rules in
//! `schema.rs`. A value that does not fit says where (`a.b[2].value`), what
//! was expected, and what came.

use base64::Engine as _;
use serde::ser::{Serialize, SerializeMap as _, SerializeSeq as _, Serializer};
use serde_json::Value;
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
        Type::Float32 => number(value)
            .filter(|f| !f.is_finite() || (*f as f32).is_finite())
            .map(|f| Val::Float32(f as f32))
            .map_or_else(|| fail("a number within f32's range"), Ok),
        Type::Float64 => number(value)
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
    // JSON Schema counts `5.0` and `1e3` as integers, so they are: a whole
    // number within ±2^53, where a double is exact.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() <= EXACT)
                    .map(|f| f as i128)
            }),
        Value::String(s) => s.parse::<i128>().ok(),
        _ => None,
    }
}

/// A number, or one of the strings for NaN and the infinities.
fn number(value: &Value) -> Option<f64> {
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

/// A component value of `ty`, serialized by `schema.rs`'s rules straight
/// into JSON text, with no `serde_json::Value` in between (a result's
/// values are already in host memory once; they are not copied again into
/// a larger tree).
pub(crate) struct AsJson<'a> {
    /// Its type.
    pub ty: Option<Type>,
    /// The value; `None` (or no type) is JSON `null`.
    pub val: Option<&'a Val>,
}

impl<'a> AsJson<'a> {
    fn of(ty: Type, val: &'a Val) -> Self {
        Self {
            ty: Some(ty),
            val: Some(val),
        }
    }
}

fn float<S: Serializer>(f: f64, s: S) -> Result<S::Ok, S::Error> {
    if f.is_nan() {
        s.serialize_str("NaN")
    } else if f.is_infinite() {
        s.serialize_str(if f > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        s.serialize_f64(f)
    }
}

impl Serialize for AsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (Some(ty), Some(val)) = (&self.ty, self.val) else {
            return s.serialize_unit();
        };
        match (ty, val) {
            (_, Val::Bool(b)) => s.serialize_bool(*b),
            (_, Val::S8(n)) => s.serialize_i8(*n),
            (_, Val::U8(n)) => s.serialize_u8(*n),
            (_, Val::S16(n)) => s.serialize_i16(*n),
            (_, Val::U16(n)) => s.serialize_u16(*n),
            (_, Val::S32(n)) => s.serialize_i32(*n),
            (_, Val::U32(n)) => s.serialize_u32(*n),
            (_, Val::S64(n)) if n.unsigned_abs() <= EXACT => s.serialize_i64(*n),
            (_, Val::S64(n)) => s.collect_str(n),
            (_, Val::U64(n)) if *n <= EXACT => s.serialize_u64(*n),
            (_, Val::U64(n)) => s.collect_str(n),
            (_, Val::Float32(f)) => float(f64::from(*f), s),
            (_, Val::Float64(f)) => float(*f, s),
            (_, Val::Char(c)) => s.serialize_char(*c),
            (_, Val::String(text)) => s.serialize_str(text),
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
                    return s
                        .serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes));
                }
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&AsJson::of(inner.clone(), item))?;
                }
                seq.end()
            }
            (Type::Record(record), Val::Record(fields)) => {
                let mut map = s.serialize_map(None)?;
                for (field, (name, v)) in record.fields().zip(fields) {
                    if !matches!(v, Val::Option(None)) {
                        map.serialize_entry(name, &AsJson::of(field.ty, v))?;
                    }
                }
                map.end()
            }
            (Type::Tuple(tuple), Val::Tuple(items)) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for (t, v) in tuple.types().zip(items) {
                    seq.serialize_element(&AsJson::of(t, v))?;
                }
                seq.end()
            }
            (Type::Variant(variant), Val::Variant(tag, payload)) => {
                let case_ty = variant.cases().find(|c| c.name == tag).and_then(|c| c.ty);
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("tag", tag)?;
                if let (Some(v), Some(t)) = (payload, case_ty) {
                    map.serialize_entry("value", &AsJson::of(t, v))?;
                }
                map.end()
            }
            (_, Val::Enum(name)) => s.serialize_str(name),
            (_, Val::Option(None)) => s.serialize_unit(),
            (Type::Option(option), Val::Option(Some(v))) => {
                let inner = option.ty();
                if matches!(inner, Type::Option(_)) {
                    let mut map = s.serialize_map(Some(1))?;
                    map.serialize_entry("some", &AsJson::of(inner, v))?;
                    map.end()
                } else {
                    AsJson::of(inner, v).serialize(s)
                }
            }
            (Type::Result(result), Val::Result(arm)) => {
                let (tag, ty, v) = match arm {
                    Ok(v) => ("ok", result.ok(), v),
                    Err(v) => ("err", result.err(), v),
                };
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(
                    tag,
                    &AsJson {
                        ty,
                        val: v.as_deref(),
                    },
                )?;
                map.end()
            }
            (_, Val::Flags(names)) => s.collect_seq(names),
            _ => s.serialize_unit(),
        }
    }
}

/// `value` written as JSON text: `Ok` with all of it when it takes at most
/// `cap` bytes; else `Err` with the first `cap` bytes (cut to a character
/// boundary, so no longer JSON) and how many bytes all of it takes
/// (counted, never kept).
pub(crate) fn to_text(value: &AsJson<'_>, cap: usize) -> Result<String, (String, usize)> {
    /// Keeps the first `cap` bytes and counts the rest.
    struct Capped {
        kept: Vec<u8>,
        cap: usize,
        total: usize,
    }
    impl std::io::Write for Capped {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let room = self.cap.saturating_sub(self.kept.len());
            self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
            self.total = self.total.saturating_add(bytes.len());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Capped {
        kept: Vec::new(),
        cap,
        total: 0,
    };
    // Writing to memory cannot fail.
    let _ = serde_json::to_writer(&mut out, value);
    let text = match String::from_utf8(out.kept) {
        Ok(text) => text,
        Err(cut) => {
            let bytes = cut.into_bytes();
            let end = std::str::from_utf8(&bytes).map_or_else(|e| e.valid_up_to(), str::len);
            String::from_utf8_lossy(&bytes[..end]).into_owned()
        }
    };
    if out.total > cap {
        return Err((text, out.total));
    }
    Ok(text)
}

/// The invariant of the `wit_values` fuzz target and its property test
/// (not API): `value` as the component value of `ty`, written back as JSON
/// text, reads back as the same value and writes as the same text; and a
/// cap below that text's length keeps a prefix of it and counts all of it.
///
/// Answers `Ok(None)` when `value` does not fit `ty` (the error names the
/// path `x`), `Ok(Some(text))` when it fits.
///
/// # Errors
/// What broke the invariant, when it does not hold.
#[doc(hidden)]
pub fn round_trip(ty: &Type, value: &Value) -> Result<Option<String>, String> {
    let first = match from_json(ty, Some(value), "x") {
        Ok(val) => val,
        Err(message) if message.starts_with("x") => return Ok(None),
        Err(message) => return Err(format!("a refusal that names no path: {message}")),
    };
    let write = |val: &Val, cap: usize| {
        to_text(
            &AsJson {
                ty: Some(ty.clone()),
                val: Some(val),
            },
            cap,
        )
    };
    let text = write(&first, usize::MAX).map_err(|_| "uncapped text was cut".to_string())?;
    let parsed: Value =
        serde_json::from_str(&text).map_err(|e| format!("wrote `{text}`, not JSON: {e}"))?;
    let second = from_json(ty, Some(&parsed), "x")
        .map_err(|e| format!("wrote `{text}`, which reads back as an error: {e}"))?;
    let again = write(&second, usize::MAX).map_err(|_| "uncapped text was cut".to_string())?;
    if again != text {
        return Err(format!("`{text}` reads back and writes as `{again}`"));
    }
    if first != second && !text.contains("NaN") {
        return Err(format!("`{text}` reads back as {second:?}, not {first:?}"));
    }
    for cap in [0, text.len() / 2, text.len().saturating_sub(1)] {
        if cap >= text.len() {
            continue;
        }
        match write(&first, cap) {
            Ok(cut) => return Err(format!("cap {cap} kept all of `{cut}`")),
            Err((kept, total)) => {
                if kept.len() > cap || !text.starts_with(&kept) || total != text.len() {
                    return Err(format!(
                        "cap {cap} of `{text}` kept `{kept}` and counted {total}"
                    ));
                }
            }
        }
    }
    Ok(Some(text))
}
