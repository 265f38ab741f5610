//! The `policy_parse` fuzz target's body: `Policy::parse` (the plugin
//! policy file) on arbitrary text. Included with `#[path]` by the fuzz
//! target (`fuzz/fuzz_targets/policy_parse.rs`) and by the seed replay on
//! stable (`tests/all/fuzz_seeds.rs`), so both check the same thing.
//!
//! Invariants: parsing never panics; an error names a line that exists in
//! the text (1 for empty text); an accepted policy describes its grants in
//! words and as JSON without panicking.

use corral::{Limits, Policy, PolicyError};

/// One input; panics when an invariant breaks.
pub fn check(data: &[u8]) {
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
}
