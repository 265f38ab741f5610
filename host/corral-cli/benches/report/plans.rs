//! A plan of independent CPU-bound steps against the same calls made one
//! by one, in the same run: parallel waves should use both cores
//! (reference 001). The steps are the hostile fixture's `crunch` (an LCG
//! loop in wasm: no I/O, no allocation).

use std::time::Instant;

use corral::CallOptions;
use serde_json::json;

use crate::Effort;
use crate::calls::{host, runtime};
use crate::table::{Report, Row, Value};

/// Steps in the plan: more than the 2 cores, so waves must share them.
const STEPS: usize = 8;

/// The CPU-plan row.
pub fn cpu_plan(effort: Effort, report: &mut Report) {
    let rt = runtime();
    let fixture =
        std::path::Path::new(corral_test_support::GUESTS_DIR).join(corral_test_support::HOSTILE);
    let (host, _dir) = host(&rt, &[fixture]);
    let rounds = effort.pick(20_000_000, 1_000);
    let arguments = json!({ "rounds": rounds }).to_string();
    let steps: Vec<_> = (0..STEPS)
        .map(|i| json!({"id": format!("s{i}"), "tool": "crunch", "arguments": {"rounds": rounds}}))
        .collect();
    let plan = json!({ "steps": steps }).to_string();
    let options = CallOptions::default();
    let one_by_one = || {
        let start = Instant::now();
        rt.block_on(async {
            for _ in 0..STEPS {
                host.call("crunch", &arguments, &options)
                    .await
                    .expect("crunch");
            }
        });
        start.elapsed().as_secs_f64() * 1e3
    };
    let as_plan = || {
        let start = Instant::now();
        let out = rt
            .block_on(host.call("execute_tool_plan", &plan, &options))
            .expect("plan");
        assert_eq!(out.into_json().expect("json")["status"], "succeeded");
        start.elapsed().as_secs_f64() * 1e3
    };
    one_by_one();
    as_plan();
    let runs = effort.pick(5, 1);
    let (mut serial, mut parallel) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        serial.push(one_by_one());
        parallel.push(as_plan());
    }
    serial.sort_by(f64::total_cmp);
    parallel.sort_by(f64::total_cmp);
    let (serial, parallel) = (serial[runs / 2], parallel[runs / 2]);
    let speedup = serial / parallel;
    report.push(Row {
        figure: format!("plan of {STEPS} independent CPU-bound steps (`crunch`), median"),
        value: Value::Millis(parallel),
        baseline: Some(("the same calls one by one".into(), Value::Millis(serial))),
        target: format!("≥ 1.8× faster (here {speedup:.2}×)"),
        met: Some(speedup >= 1.8),
    });
}
