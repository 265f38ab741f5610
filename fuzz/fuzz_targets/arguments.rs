//! Fuzzes argument validation against a tool's parameters schema: both
//! come from outside (the schema from a guest's `describe`, the arguments
//! from a model), so the input is split at its first NUL byte into schema
//! text and arguments text.
//!
//! Run: `scripts/fuzz.sh arguments`. Invariants: compiling any schema text
//! and validating any JSON never panic; a schema the host accepts describes
//! an object; validation reports at least one problem exactly when the
//! arguments are invalid, each naming a JSON pointer.
//!
//! The body, with the invariants, is `fuzz/invariants/arguments.rs`, which
//! the seed replay on stable (`tests/all/fuzz_seeds.rs`) runs over every
//! file in `fuzz/seeds/arguments/`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../invariants/arguments.rs"]
mod invariants;

fuzz_target!(|data: &[u8]| invariants::check(data));
