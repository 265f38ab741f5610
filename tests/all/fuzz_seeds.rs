//! The fuzz targets' named seeds (`fuzz/seeds/TARGET/`: inputs written by
//! hand or by `corral-test-support`'s `fuzz_seeds` example, and the crash
//! reproducers a campaign found), replayed on stable through each target's
//! own body: `fuzz/invariants/TARGET.rs`, included here as the target
//! includes it, so CI checks every seed against the invariants a campaign
//! checks. The generated corpus (`fuzz/corpus/TARGET.tar.xz`) is only the
//! campaigns' (`scripts/fuzz.sh`). `oci_manifest`'s seeds replay in
//! corral-dist's own tests
//! (`manifest::tests::every_seed_keeps_the_fuzz_targets_invariants`).

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use crate::support::repository_root;

#[path = "../../fuzz/invariants/arguments.rs"]
mod arguments;
#[path = "../../fuzz/invariants/mcp_messages.rs"]
mod mcp_messages;
#[path = "../../fuzz/invariants/plan_parse.rs"]
mod plan_parse;
#[path = "../../fuzz/invariants/policy_parse.rs"]
mod policy_parse;
#[path = "../../fuzz/invariants/signature_evidence.rs"]
mod signature_evidence;
#[path = "../../fuzz/invariants/wit_values.rs"]
mod wit_values;

/// Runs `check` over every seed of `target`, in name order, and fails
/// naming each seed that broke an invariant (the panic above says which).
/// Answers how many seeds ran.
fn replay(target: &str, mut check: impl FnMut(&[u8])) -> usize {
    let dir = repository_root().join("fuzz/seeds").join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("an entry").path())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no seeds in {}", dir.display());
    let mut broken = Vec::new();
    for path in &paths {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
            broken.push(path.display().to_string());
        }
    }
    assert!(
        broken.is_empty(),
        "seeds of `{target}` that break its invariants: {broken:?}"
    );
    paths.len()
}

#[test]
fn plan_parse_seeds_keep_the_targets_invariants() {
    replay("plan_parse", plan_parse::check);
}

#[test]
fn policy_parse_seeds_keep_the_targets_invariants() {
    // Every section and most of its refusals have a seed.
    assert!(replay("policy_parse", policy_parse::check) >= 30);
}

#[test]
fn arguments_seeds_keep_the_targets_invariants() {
    replay("arguments", arguments::check);
}

#[test]
fn mcp_messages_seeds_keep_the_targets_invariants() {
    replay("mcp_messages", mcp_messages::check);
}

#[test]
fn wit_values_seeds_keep_the_targets_invariants() {
    replay("wit_values", wit_values::check);
}

/// The seeds verify the fixture file with evidence of every kind (0 a
/// `.sig`, 1 a Sigstore bundle, 2 OCI evidence), so they reach the whole
/// check, not only its first refusal.
#[test]
fn signature_evidence_seeds_keep_the_targets_invariants() {
    let mut verified = BTreeSet::new();
    replay("signature_evidence", |data| {
        if signature_evidence::check(data) {
            verified.extend(data.first().copied());
        }
    });
    assert_eq!(verified, BTreeSet::from([0, 1, 2]), "kinds that verify");
}
