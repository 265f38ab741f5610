//! The `arguments` fuzz target's body: argument validation against a
//! tool's parameters schema, the input split at its first NUL byte into
//! schema text and arguments text. Included with `#[path]` by the fuzz
//! target (`fuzz/fuzz_targets/arguments.rs`) and by the seed replay on
//! stable (`tests/all/fuzz_seeds.rs`), so both check the same thing.
//!
//! Invariants: compiling any schema text and validating any JSON never
//! panic; a schema the host accepts describes an object; validation reports
//! at least one problem exactly when the arguments are invalid, each naming
//! a JSON pointer.

use corral::__fuzz::{compile_parameters, schema_problems};
use serde_json::Value;

/// One input; panics when an invariant breaks.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (schema, arguments) = text.split_once('\0').unwrap_or((text, "{}"));
    let Ok((schema, validator)) = compile_parameters(schema) else {
        return;
    };
    assert_eq!(schema["type"], "object");
    let Ok(arguments) = serde_json::from_str::<Value>(arguments) else {
        return;
    };
    match schema_problems(&validator, &arguments) {
        Ok(()) => assert!(validator.is_valid(&arguments)),
        Err(problems) => {
            assert!(!validator.is_valid(&arguments));
            assert!(!problems.is_empty());
            assert!(problems.iter().all(|p| p.starts_with('`')), "{problems:?}");
        }
    }
}
