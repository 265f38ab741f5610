//! The performance report (issue 28): every figure beside a baseline
//! measured in the same run, written as the Markdown table that
//! `scripts/bench.sh` puts into its section of BENCHMARKS.md.
//!
//! `cargo bench -p corral-cli --bench report` measures for real and writes
//! the table to `$CORRAL_BENCH_REPORT` (default `target/bench-report.md`);
//! `cargo test --bench report` (CI) runs every measurement once, with a
//! handful of calls, to show it still works. Needs the bundled samples and
//! the Python and JavaScript guests: run `scripts/build-guests.sh` first.
//! `CORRAL_BENCH_ONLY` (comma-separated: sequential, throughput, languages,
//! mcp, startup, plans, inflight, accounting, recording, prepared) measures some
//! sections alone.

#![allow(missing_docs)]

mod accounting;
mod call_loop;
mod calls;
mod inflight;
mod mcp;
mod plans;
mod prepared;
mod recording;
mod rmcp_floor;
mod startup;
mod table;

use std::path::PathBuf;

use table::Report;

/// How long to measure: `cargo bench` passes `--bench`, `cargo test` does not.
#[derive(Clone, Copy)]
pub struct Effort {
    /// Measure for real (many calls) rather than once to smoke-test.
    pub full: bool,
}

impl Effort {
    /// `full` when measuring, else `smoke`.
    pub fn pick(self, full: usize, smoke: usize) -> usize {
        if self.full { full } else { smoke }
    }
}

/// The workspace root (two levels above this crate).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One section of the report: measures and adds its rows.
type Section = fn(Effort, &mut Report);

fn main() {
    if let Some((corral, n, path)) = call_loop::requested() {
        call_loop::run(corral, n, path);
        return;
    }
    if rmcp_floor::requested() {
        rmcp_floor::serve();
        return;
    }
    if mcp::echo_requested() {
        mcp::echo_responder();
        return;
    }
    if prepared::child_requested() {
        prepared::child();
        return;
    }
    if let Some((slots, calls)) = inflight::child_request() {
        inflight::child(slots, calls);
        return;
    }
    let effort = Effort {
        full: std::env::args().any(|a| a == "--bench"),
    };
    let mut report = Report::default();
    // `CORRAL_BENCH_ONLY=languages,mcp` measures those sections alone.
    let only = std::env::var("CORRAL_BENCH_ONLY").ok();
    let sections: [(&str, Section); 10] = [
        ("sequential", calls::sequential),
        ("throughput", calls::throughput),
        ("languages", calls::languages),
        ("mcp", mcp::round_trip),
        ("startup", startup::warm_start),
        ("plans", plans::cpu_plan),
        ("inflight", inflight::thousand_in_flight),
        ("accounting", accounting::costs),
        ("recording", recording::costs),
        ("prepared", prepared::costs),
    ];
    for (name, measure) in sections {
        if only
            .as_deref()
            .is_none_or(|only| only.split(',').any(|o| o == name))
        {
            measure(effort, &mut report);
        }
    }
    let out = std::env::var_os("CORRAL_BENCH_REPORT")
        .map_or_else(|| root().join("target/bench-report.md"), PathBuf::from);
    let text = report.markdown();
    print!("{text}");
    if effort.full {
        std::fs::write(&out, text).expect("write the report");
        eprintln!("report written to {}", out.display());
    }
}
