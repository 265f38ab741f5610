//! Fuzzes `Policy::parse` (the plugin policy file) with arbitrary text.
//!
//! Run: `scripts/fuzz.sh policy_parse`. Invariants: parsing never panics; an
//! error names a line that exists in the text (1 for empty text); an
//! accepted policy describes its grants in words and as JSON without
//! panicking.
//!
//! The body, with the invariants, is `fuzz/invariants/policy_parse.rs`,
//! which the seed replay on stable (`tests/all/fuzz_seeds.rs`) runs over
//! every file in `fuzz/seeds/policy_parse/`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../invariants/policy_parse.rs"]
mod invariants;

fuzz_target!(|data: &[u8]| invariants::check(data));
