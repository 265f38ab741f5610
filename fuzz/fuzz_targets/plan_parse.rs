//! Fuzzes `Plan::parse` and the `$ref` resolver with arbitrary text.
//!
//! Run: `cargo install cargo-fuzz && cargo +nightly fuzz run plan_parse`
//! (from the repository root). Invariants checked on every accepted plan: the
//! waves hold every step exactly once, and every dependency of a step sits in
//! an earlier wave; substitution never panics.
//!
//! The body, with the invariants, is `fuzz/invariants/plan_parse.rs`, which
//! the seed replay on stable (`tests/all/fuzz_seeds.rs`) runs over every
//! file in `fuzz/seeds/plan_parse/`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../invariants/plan_parse.rs"]
mod invariants;

fuzz_target!(|data: &[u8]| invariants::check(data));
