//! The `wit_values` fuzz target's body: any-component mode's conversion of
//! a model's JSON arguments to component values and back to JSON
//! (`host/corral-sandbox/src/sandbox/any/value.rs`), by the parameter types of
//! `tests/support/wit/values.wit` (from a dummy component of that world,
//! built once: [`params`]). Included with `#[path]` by the fuzz target
//! (`fuzz/fuzz_targets/wit_values.rs`) and by the seed replay on stable
//! (`tests/all/fuzz_seeds.rs`), so both check the same thing.
//!
//! The input is a JSON object of arguments, as a model sends them; each
//! parameter's value is read as its type, as a call does. Invariants
//! (`value_round_trip`): no panic; a refusal names the parameter's path; a
//! value that fits is written back as JSON that reads back as the same
//! value and writes the same text; a cap below that text's length keeps a
//! prefix of it and counts all of it.

use std::sync::OnceLock;

use corral::__fuzz::value_round_trip;
use serde_json::Value;
use wasmtime::component::types::{ComponentItem, Type};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{LiftLowerAbi, ManglingAndAbi, Resolve};

/// The parameters (name, type) of every function `values.wit` exports,
/// from a dummy component of its world; built on first use.
pub fn params() -> &'static [(String, Type)] {
    static PARAMS: OnceLock<Vec<(String, Type)>> = OnceLock::new();
    PARAMS.get_or_init(|| {
        let mut resolve = Resolve::default();
        let package = resolve
            .push_str(
                "values.wit",
                include_str!("../../tests/support/wit/values.wit"),
            )
            .expect("the WIT parses");
        let world = resolve.select_world(&[package], None).expect("one world");
        let mut module = wit_component::dummy_module(
            &resolve,
            world,
            ManglingAndAbi::Legacy(LiftLowerAbi::Sync),
        );
        wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
            .expect("metadata embeds");
        let bytes = ComponentEncoder::default()
            .module(&module)
            .expect("a core module")
            .validate(true)
            .encode()
            .expect("the component encodes");
        let engine = wasmtime::Engine::default();
        let component = wasmtime::component::Component::new(&engine, &bytes).expect("it compiles");
        let mut params = Vec::new();
        for (_, export) in component.component_type().exports(&engine) {
            if let ComponentItem::ComponentFunc(func) = export.ty {
                params.extend(func.params().map(|(n, t)| (n.to_string(), t)));
            }
        }
        params
    })
}

/// One input, read by the [`params`] of `values.wit`; panics when an
/// invariant breaks.
pub fn check(data: &[u8]) {
    let params = params();
    let Ok(arguments) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    for (name, ty) in params {
        let Some(value) = arguments.get(name) else {
            continue;
        };
        if let Err(broken) = value_round_trip(ty, value) {
            panic!("parameter `{name}`: {broken}");
        }
    }
}
