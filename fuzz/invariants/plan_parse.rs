//! The `plan_parse` fuzz target's body: `Plan::parse` and the `$ref`
//! resolver on arbitrary text. Included with `#[path]` by the fuzz target
//! (`fuzz/fuzz_targets/plan_parse.rs`) and by the seed replay on stable
//! (`tests/all/fuzz_seeds.rs`), so both check the same thing.
//!
//! Invariants checked on every accepted plan: the waves hold every step
//! exactly once, and every dependency of a step sits in an earlier wave;
//! substitution never panics.

use std::collections::HashMap;

use corral::__fuzz::{self as reference, Output};
use corral::{Plan, PlanLimits};
use serde_json::Value;

/// One input; panics when an invariant breaks.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = PlanLimits::default();
    if let Ok(plan) = Plan::parse(text, &limits, |tool| tool.len() % 2 == 0) {
        let mut wave_of = HashMap::new();
        for (w, wave) in plan.waves().iter().enumerate() {
            for id in wave {
                assert!(
                    wave_of.insert(id.clone(), w).is_none(),
                    "step {id} in two waves"
                );
            }
        }
        assert_eq!(wave_of.len(), plan.steps().len(), "every step is in a wave");
        let ids = plan.graph().ids();
        for (i, id) in ids.iter().enumerate() {
            for &d in plan.graph().deps(i) {
                assert!(
                    wave_of[&ids[d]] < wave_of[id],
                    "{id} runs before its dependency"
                );
            }
        }
        let _ = plan.to_dot();
        for step in plan.steps() {
            let _ = reference::substitute(&step.arguments, &|id| {
                Some(Output::from_text(&format!(
                    "{{\"id\": \"{id}\", \"n\": [1, 2]}}"
                )))
            });
        }
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let _ = reference::find(&value);
        let _ = reference::substitute(&value, &|_| Some(Output::Json(value.clone())));
        let _ = reference::substitute(&value, &|id| Some(Output::Text(id.to_string())));
    }
}
