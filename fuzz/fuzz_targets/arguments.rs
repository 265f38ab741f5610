//! Fuzzes argument validation against a tool's parameters schema: both
//! come from outside (the schema from a guest's `describe`, the arguments
//! from a model), so the input is split at its first NUL byte into schema
//! text and arguments text.
//!
//! Run: `scripts/fuzz.sh arguments`. Invariants: compiling any schema text
//! and validating any JSON never panic; a schema the host accepts describes
//! an object; validation reports at least one problem exactly when the
//! arguments are invalid, each naming a JSON pointer.

#![no_main]

use corral::__fuzz::{compile_parameters, schema_problems};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
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
});
