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

use libfuzzer_sys::fuzz_target;

#[path = "../invariants/wit_values.rs"]
mod invariants;

fuzz_target!(|data: &[u8]| invariants::check(data));
