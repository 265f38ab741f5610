//! The component types of `wit/values.wit` (every kind of value
//! any-component mode converts), read from a component built in memory from
//! that WIT with `wit-component`'s dummy module: the inputs of the
//! `wit_values` property test. The fuzz target builds them the same way.

use serde_json::{Value, json};
use wasmtime::component::types::{ComponentItem, Type};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{LiftLowerAbi, ManglingAndAbi, Resolve};

/// The WIT text: one function, `everything`, whose parameters are the types.
pub const VALUES_WIT: &str = include_str!("../wit/values.wit");

/// The parameters (name, type) of every function `wit`'s first world
/// exports, as wasmtime reads them from a component of that world.
///
/// # Panics
/// When `wit` does not parse or its component does not build (a broken
/// test input).
pub fn exported_params(wit: &str) -> Vec<(String, Type)> {
    let mut resolve = Resolve::default();
    let package = resolve
        .push_str("values.wit", wit)
        .expect("the test WIT parses");
    let world = resolve
        .select_world(&[package], None)
        .expect("the test WIT has one world");
    let mut module =
        wit_component::dummy_module(&resolve, world, ManglingAndAbi::Legacy(LiftLowerAbi::Sync));
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
        .expect("metadata embeds");
    let bytes = ComponentEncoder::default()
        .module(&module)
        .expect("the dummy module is a core module")
        .validate(true)
        .encode()
        .expect("the dummy component encodes");
    let engine = wasmtime::Engine::default();
    let component = wasmtime::component::Component::new(&engine, &bytes).expect("it compiles");
    let mut params = Vec::new();
    for (_, export) in component.component_type().exports(&engine) {
        if let ComponentItem::ComponentFunc(func) = export.ty {
            params.extend(func.params().map(|(n, t)| (n.to_string(), t)));
        }
    }
    params
}

/// A JSON value for `ty`, its shape chosen by `choices` (a property test's
/// or fuzzer's numbers; `0` once they run out): mostly one that fits
/// `ty`, near each kind's edges (integer limits and one past them, huge,
/// tiny and non-finite floats, multi-byte characters, bad base64), and now
/// and then one that does not (a wrong kind, an unknown field or case, a
/// repeated flag, a tuple of the wrong length).
pub fn value_for(ty: &Type, choices: &mut impl Iterator<Item = u32>) -> Value {
    let n = choices.next().unwrap_or(0);
    let pick = |options: &[Value]| options[n as usize / 31 % options.len()].clone();
    if n % 31 == 30 {
        return pick(&[
            Value::Null,
            json!(true),
            json!(1.5),
            json!("x"),
            json!([]),
            json!({}),
        ]);
    }
    match ty {
        Type::Bool => json!(n.is_multiple_of(2)),
        Type::S8
        | Type::U8
        | Type::S16
        | Type::U16
        | Type::S32
        | Type::U32
        | Type::S64
        | Type::U64 => {
            let edges: [i128; 16] = [
                0,
                1,
                -1,
                127,
                128,
                -129,
                255,
                256,
                65_535,
                65_536,
                i128::from(i32::MIN),
                i128::from(u32::MAX),
                i128::from(i64::MIN),
                i128::from(u64::MAX),
                1 << 53,
                (1 << 53) + 1,
            ];
            let k = edges[n as usize / 31 % edges.len()];
            match n % 3 {
                0 => json!(k.to_string()),
                _ => serde_json::from_str(&k.to_string()).unwrap_or(Value::Null),
            }
        }
        Type::Float32 | Type::Float64 => pick(&[
            json!(0.0),
            json!(-0.0),
            json!(0.1),
            json!(3.5e38),
            json!(1e300),
            json!(5e-324),
            json!("NaN"),
            json!("Infinity"),
            json!("-Infinity"),
            json!(-7),
        ]),
        Type::Char => pick(&[
            json!("a"),
            json!("é"),
            json!("😀"),
            json!(""),
            json!("ab"),
            json!("\u{0}"),
        ]),
        Type::String => pick(&[
            json!(""),
            json!("hi"),
            json!("\u{1b}[2J"),
            json!("😀x"),
            json!("\"q\""),
        ]),
        Type::List(list) if matches!(list.ty(), Type::U8) => pick(&[
            json!(""),
            json!("AAEC"),
            json!("/w=="),
            json!("not base64!"),
        ]),
        Type::List(list) => {
            let inner = list.ty();
            Value::Array((0..n % 4).map(|_| value_for(&inner, choices)).collect())
        }
        Type::Record(record) => {
            let mut object = serde_json::Map::new();
            for field in record.fields() {
                if !choices.next().unwrap_or(0).is_multiple_of(5) {
                    object.insert(field.name.to_string(), value_for(&field.ty, choices));
                }
            }
            if n % 23 == 22 {
                object.insert("unknown".into(), json!(1));
            }
            Value::Object(object)
        }
        Type::Tuple(tuple) => {
            let mut items: Vec<Value> = tuple.types().map(|t| value_for(&t, choices)).collect();
            if n % 19 == 18 {
                items.pop();
            }
            Value::Array(items)
        }
        Type::Variant(variant) => {
            let cases: Vec<_> = variant.cases().collect();
            if n % 17 == 16 {
                return json!({"tag": "no-such-case"});
            }
            let case = &cases[n as usize / 31 % cases.len()];
            match &case.ty {
                Some(t) => json!({"tag": case.name, "value": value_for(t, choices)}),
                None => json!({"tag": case.name}),
            }
        }
        Type::Enum(e) => {
            let mut names: Vec<Value> = e.names().map(|s| json!(s)).collect();
            names.push(json!("purple"));
            pick(&names)
        }
        Type::Flags(flags) => {
            let names: Vec<&str> = flags.names().collect();
            let mut set: Vec<Value> = names
                .iter()
                .enumerate()
                .filter(|(i, _)| n >> i & 1 == 1)
                .map(|(_, s)| json!(s))
                .collect();
            if n % 13 == 12 && !set.is_empty() {
                set.push(set[0].clone());
            }
            Value::Array(set)
        }
        Type::Option(option) => match (n % 3, option.ty()) {
            (0, _) => Value::Null,
            (_, inner @ Type::Option(_)) => json!({"some": value_for(&inner, choices)}),
            (_, inner) => value_for(&inner, choices),
        },
        Type::Result(result) => {
            let (tag, arm) = if n.is_multiple_of(2) {
                ("ok", result.ok())
            } else {
                ("err", result.err())
            };
            let inner = arm.map_or(Value::Null, |t| value_for(&t, choices));
            json!({ tag: inner })
        }
        _ => Value::Null,
    }
}
