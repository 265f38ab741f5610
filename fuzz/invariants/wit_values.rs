//! The `wit_values` fuzz target's body: any-component mode's conversion of
//! a model's JSON arguments to component values and back to JSON
//! (`host/corral-sandbox/src/sandbox/any/value.rs`), by the parameter types of
//! `tests/support/wit/values.wit`. Included with `#[path]` by the fuzz
//! target (`fuzz/fuzz_targets/wit_values.rs`, which builds the types from a
//! dummy component of that world) and by the seed replay on stable
//! (`tests/all/fuzz_seeds.rs`, which takes them from
//! `corral_test_support::exported_params`, built the same way), so both
//! check the same thing.
//!
//! The input is a JSON object of arguments, as a model sends them; each
//! parameter's value is read as its type, as a call does. Invariants
//! (`value_round_trip`): no panic; a refusal names the parameter's path; a
//! value that fits is written back as JSON that reads back as the same
//! value and writes the same text; a cap below that text's length keeps a
//! prefix of it and counts all of it.

use corral::__fuzz::value_round_trip;
use serde_json::Value;
use wasmtime::component::types::Type;

/// One input, read by `params` (name, type); panics when an invariant
/// breaks.
pub fn check(data: &[u8], params: &[(String, Type)]) {
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
