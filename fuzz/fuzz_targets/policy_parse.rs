//! Fuzzes `Policy::parse` (the plugin policy file) with arbitrary text.
//!
//! Run: `scripts/fuzz.sh policy_parse`. Invariants: parsing never panics; an
//! error names a line that exists in the text (1 for empty text); an
//! accepted policy describes its grants in words and as JSON without
//! panicking.

#![no_main]

use corral::{Limits, Policy, PolicyError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Host directories are relative to the policy's directory: the system's
    // temporary directory, so that `.` exists.
    let path = std::env::temp_dir().join("fuzz.policy.toml");
    match Policy::parse(text, &path) {
        Ok(policy) => {
            let _ = policy.grants(&Limits::default());
            let _ = policy.grants_summary();
        }
        Err(PolicyError::Invalid { line, .. }) => {
            let lines = text.lines().count().max(1);
            assert!(
                (1..=lines + 1).contains(&line),
                "line {line} of a {lines}-line text"
            );
        }
        Err(_) => {}
    }
});
