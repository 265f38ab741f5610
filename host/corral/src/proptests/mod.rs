//! The fuzz targets' invariants (`fuzz/invariants/`, the targets' bodies) as property tests on
//! stable Rust, a bounded number of cases each, so CI checks them on every
//! run; `scripts/fuzz.sh` runs the same invariants for millions of inputs
//! with nightly and coverage guidance.
//!
//! The inputs are built from each format's own vocabulary (plan fields and
//! `$ref`s, policy keys, JSON Schema keywords) as well as arbitrary text, so
//! that most cases get past the first parse.

#[cfg(feature = "signatures")]
mod evidence;
mod values;

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::call::compose::plan::reference::{self, Output};
use crate::{Limits, Plan, PlanLimits, Policy, PolicyError};

/// Cases per property: enough to matter, few enough for CI (about a second
/// each in a debug build).
const CASES: u32 = 512;

/// A plan of up to 8 steps named `s0`, `s1`, ... (now and then a bad or
/// repeated id), mostly calling a known tool, with `$ref`s mostly to earlier
/// steps (now and then to a later one, itself, or a missing one: cycles and
/// unknown steps), and `output_steps`.
fn plan_text() -> impl Strategy<Value = String> {
    // A reference: (which target, a number to pick it with, which form).
    let reference = (0u8..40, any::<usize>(), 0u8..3);
    let value = prop_oneof![
        6 => reference.prop_map(Some),
        1 => Just(None),
    ];
    let arguments = prop_oneof![
        8 => proptest::collection::btree_map("[a-z]{1,3}", value, 0..3).prop_map(Some),
        1 => Just(None),
    ];
    let tool = prop_oneof![30 => Just("ok"), 1 => Just("nope"), 1 => Just("execute_tool_plan")];
    let id = prop_oneof![40 => Just(None), 1 => Just(Some("bad id")), 1 => Just(Some("s0"))];
    (
        proptest::collection::vec((id, tool, arguments), 1..8),
        proptest::collection::vec(any::<usize>(), 0..3),
    )
        .prop_map(|(steps, outputs)| {
            let n = steps.len();
            let target = |i: usize, which: u8, k: usize| match which {
                0 => "ghost".to_string(),
                1 => format!("s{}", k % 8),
                // Step 0 has no earlier step: mostly a plain word instead.
                2..=37 if i == 0 => "word".to_string(),
                _ if i == 0 => format!("s{}", k % n),
                _ => format!("s{}", k % i),
            };
            let steps: Vec<Value> = steps
                .into_iter()
                .enumerate()
                .map(|(i, (id, tool, arguments))| {
                    let id = id.map_or_else(|| format!("s{i}"), str::to_string);
                    let arguments = match arguments {
                        None => json!("{\"v\": \"$ref:s0\"}"),
                        Some(map) => {
                            let map: serde_json::Map<String, Value> = map
                                .into_iter()
                                .map(|(key, value)| {
                                    let value = match value {
                                        None => json!(i),
                                        Some((which, _, _))
                                            if i == 0 && (2..=37).contains(&which) =>
                                        {
                                            json!("no reference")
                                        }
                                        Some((which, k, 0)) => {
                                            json!(format!("$ref:{}", target(i, which, k)))
                                        }
                                        Some((which, k, 1)) => {
                                            json!(format!("$ref:{}.x[0].y", target(i, which, k)))
                                        }
                                        Some((which, k, _)) => {
                                            json!(format!("n $ref:{}.n!", target(i, which, k)))
                                        }
                                    };
                                    (key, value)
                                })
                                .collect();
                            Value::Object(map)
                        }
                    };
                    json!({"id": id, "tool": tool, "arguments": arguments})
                })
                .collect();
            // Now and then one past the last step: not a step.
            let outputs: Vec<String> = outputs
                .iter()
                .map(|k| format!("s{}", k % (n + n / 4 + 1)))
                .collect();
            json!({"steps": steps, "output_steps": outputs}).to_string()
        })
}

/// The waves of `plan` hold every step once, after all of its dependencies.
fn check_waves(plan: &Plan) {
    let mut wave_of = HashMap::new();
    for (w, wave) in plan.waves().iter().enumerate() {
        for id in wave {
            assert!(wave_of.insert(id.clone(), w).is_none(), "{id} in two waves");
        }
    }
    assert_eq!(wave_of.len(), plan.steps().len());
    let ids = plan.graph().ids();
    for (i, id) in ids.iter().enumerate() {
        for &d in plan.graph().deps(i) {
            assert!(wave_of[&ids[d]] < wave_of[id], "{id} before its dependency");
        }
    }
}

/// A policy file: `version = 1` (now and then another), then some of its
/// sections, each with lines of its own keys and values (now and then one
/// that breaks a rule, or arbitrary text).
fn policy_text() -> impl Strategy<Value = String> {
    let limits = proptest::collection::vec(
        prop_oneof![
            (0u64..u64::MAX).prop_map(|n| format!("fuel = {n}")),
            (0u64..100_000).prop_map(|n| format!("timeout_ms = {n}")),
            (0u64..100_000).prop_map(|n| format!("memory_mib = {n}")),
        ],
        0..3,
    )
    .prop_map(|lines| format!("[limits]\n{}", lines.join("\n")));
    // Host directories are relative to the policy's directory, the
    // system's temporary directory here: `.` exists, `missing` does not.
    let host_dir = prop_oneof![4 => Just("."), 1 => Just("missing"), 1 => Just("")];
    let filesystem = (host_dir, "/[a-z/]{0,8}", any::<bool>()).prop_map(|(host, guest, rw)| {
        let access = if rw { "read-write" } else { "read-only" };
        format!("[[filesystem]]\nhost = \"{host}\"\nguest = \"{guest}\"\naccess = \"{access}\"")
    });
    let pattern = prop_oneof![
        "https://[a-z]{1,8}\\.example\\.com",
        "http://127\\.0\\.0\\.1:[0-9]{1,5}",
        "https://\\*\\.[a-z]{1,5}\\.org(:\\*)?",
        "http://\\[::1\\]:[0-9]{1,4}",
        "[a-z:/*.\\[\\]0-9]{0,24}",
    ];
    let http = pattern.prop_map(|h| format!("[http]\nallow = [\"{h}\"]"));
    let approval = "[a-z_]{0,6}".prop_map(|t| format!("[approval]\nrequire = [\"{t}\"]"));
    let presentation = "[a-z_]{0,6}".prop_map(|p| format!("[presentation]\nprefix = \"{p}\""));
    let resilience = (
        0u32..5,
        prop_oneof![Just("second"), Just("minute"), Just("fortnight")],
    )
        .prop_map(|(n, per)| {
            format!("[resilience]\nrate_limit = {{ requests = {n}, per = \"{per}\" }}")
        });
    let environment = "[A-Z_]{0,5}".prop_map(|k| format!("[environment]\nset = {{ {k} = \"v\" }}"));
    let version = prop_oneof![9 => Just("version = 1"), 1 => Just("version = 7")];
    (
        version,
        proptest::option::of(limits),
        proptest::option::of(filesystem),
        proptest::option::of(http),
        proptest::option::of(approval),
        proptest::option::of(presentation),
        proptest::option::of(resilience),
        proptest::option::of(environment),
        proptest::option::weighted(0.1, ".{0,16}"),
    )
        .prop_map(|(version, a, b, c, d, e, f, g, junk)| {
            let mut text = version.to_string();
            for section in [a, b, c, d, e, f, g, junk].into_iter().flatten() {
                text.push('\n');
                text.push_str(&section);
            }
            text
        })
}

/// A JSON value of a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Parameters schemas a guest could describe, valid and not.
fn schema_text() -> impl Strategy<Value = String> {
    let property = prop_oneof![
        Just(json!({"type": "string", "maxLength": 4})),
        Just(json!({"type": "integer", "minimum": 0})),
        Just(json!({"type": "array", "items": {"type": "number"}, "maxItems": 2})),
        Just(json!({"enum": [1, "two", null]})),
        Just(json!({"type": "string", "pattern": "^[a-c]+$"})),
        Just(json!({"$ref": "#/$defs/x"})),
        Just(json!({"anyOf": [{"type": "boolean"}, {"type": "null"}]})),
    ];
    (
        proptest::collection::btree_map("[a-z]{1,4}", property, 0..4),
        any::<bool>(),
        prop_oneof![Just("object"), Just("array")],
    )
        .prop_map(|(properties, closed, kind)| {
            let required: Vec<&String> = properties.keys().take(1).collect();
            json!({
                "type": kind,
                "properties": properties,
                "required": required,
                "additionalProperties": !closed,
                "$defs": {"x": {"type": "integer"}},
            })
            .to_string()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn any_plan_text_parses_or_is_refused_and_waves_order_every_step(
        text in prop_oneof![plan_text(), ".{0,64}"]
    ) {
        let limits = PlanLimits::default();
        if let Ok(plan) = Plan::parse(&text, &limits, |tool| tool.len() == 2) {
            check_waves(&plan);
            let _ = plan.to_dot();
            for step in plan.steps() {
                let _ = reference::substitute(&step.arguments, &|id| {
                    Some(Output::from_text(&format!("{{\"id\": \"{id}\", \"n\": [1, 2]}}")))
                });
            }
        }
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            let _ = reference::find(&value);
            let _ = reference::substitute(&value, &|id| Some(Output::Text(id.to_string())));
        }
    }

    #[test]
    fn any_policy_text_parses_or_names_a_line_of_it(text in policy_text()) {
        match Policy::parse(&text, &std::env::temp_dir().join("p.policy.toml")) {
            Ok(policy) => {
                let _ = policy.grants(&Limits::default());
                let _ = policy.grants_summary();
            }
            Err(PolicyError::Invalid { line, .. }) => {
                let lines = text.lines().count().max(1);
                prop_assert!((1..=lines + 1).contains(&line), "line {} of {}", line, lines);
            }
            Err(_) => {}
        }
    }

    #[test]
    fn arguments_have_problems_exactly_when_they_break_the_schema(
        schema in schema_text(),
        arguments in json_value(),
    ) {
        if let Ok((schema, validator)) = crate::model::schema::compile_parameters(&schema) {
            prop_assert_eq!(&schema["type"], "object");
            match crate::model::schema::problems(&validator, &arguments) {
                Ok(()) => prop_assert!(validator.is_valid(&arguments)),
                Err(problems) => {
                    prop_assert!(!validator.is_valid(&arguments));
                    prop_assert!(problems.iter().all(|p| p.starts_with('`')), "{:?}", problems);
                }
            }
        }
    }
}
