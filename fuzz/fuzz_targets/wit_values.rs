//! Fuzzes any-component mode's conversion of a model's JSON arguments to
//! component values and of component values back to JSON
//! (`host/corral-sandbox/src/sandbox/any/value.rs`), by the parameter types of
//! `tests/support/wit/values.wit`: every kind of component value.
//!
//! The input is a JSON object of arguments, as a model sends them; each
//! parameter's value is read as its type, as a call does.
//!
//! Run: `scripts/fuzz.sh wit_values`. Invariants (`value_round_trip`): no
//! panic; a refusal names the parameter's path; a value that fits is
//! written back as JSON that reads back as the same value and writes the
//! same text; a cap below that text's length keeps a prefix of it and
//! counts all of it.
//!
//! The body, with the invariants, is `fuzz/invariants/wit_values.rs`, which
//! the seed replay on stable (`tests/all/fuzz_seeds.rs`) runs over every
//! file in `fuzz/seeds/wit_values/`.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use wasmtime::component::types::{ComponentItem, Type};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{LiftLowerAbi, ManglingAndAbi, Resolve};

#[path = "../invariants/wit_values.rs"]
mod invariants;

/// The parameters of `values.wit`'s function, from a component of that
/// world built in memory (as `corral-test-support`'s `exported_params`).
fn params() -> &'static [(String, Type)] {
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

fuzz_target!(|data: &[u8]| invariants::check(data, params()));
