//! The reliability campaigns (issue 29) at full size, each ending in a
//! one-line verdict; `scripts/load.sh` runs them and BENCHMARKS.md holds
//! their results.
//!
//! `cargo bench -p corral-cli --bench campaign -- CAMPAIGN [CALLS]`:
//! - `load`: the mixed hostile load (default 10 000 calls per transport);
//! - `reload`: reload under load (default 5 000 calls);
//! - `crash`: SIGKILL while writing the audit log and the standing
//!   approvals (default 100 kills);
//! - `soak [SECONDS]`: MCP HTTP at 100 calls/s (default 1 800 s) and a
//!   short-lived session every second, sampled every 10 s. Not part of the
//!   default run.
//!
//! `cargo test --bench campaign` (CI, through `cargo test --all-targets`)
//! builds it and stops: the campaigns at CI size are tests
//! (`tests/all/campaigns.rs`, through the same `corral_test_support::load`),
//! so running them here again at 100 calls covered nothing more.
//! `cargo test --bench campaign -- CAMPAIGN [CALLS]` runs one at that size.

#![allow(missing_docs)]

mod load;

fn main() {
    // The crash campaign's child: this binary again, with the variable set.
    if let Some((dir, round)) = corral_test_support::load::crash::child_request() {
        corral_test_support::load::crash::child(&dir, round);
    }
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let full = std::env::args().any(|a| a == "--bench");
    if !full && args.is_empty() {
        println!(
            "campaign: built; the campaigns run at CI size as tests (tests/all/campaigns.rs), \
             at full size with `cargo bench -p corral-cli --bench campaign`"
        );
        return;
    }
    let calls = |full_size: usize| {
        args.get(1)
            .map(|n| n.parse().expect("CALLS is a number"))
            .unwrap_or(if full { full_size } else { 100 })
    };
    let ok = match args.first().map(String::as_str) {
        Some("load") => load::campaign(calls(10_000), full),
        Some("reload") => load::reload(calls(5_000)),
        Some("crash") => load::crash(calls(100)),
        Some("soak") => load::soak(if full { calls(1_800) } else { 10 }),
        None => {
            load::campaign(calls(10_000), full)
                & load::reload(calls(5_000))
                & load::crash(calls(100))
        }
        Some(other) => panic!("unknown campaign `{other}`: try `load`, `reload` or `crash`"),
    };
    if !ok {
        std::process::exit(1);
    }
}
