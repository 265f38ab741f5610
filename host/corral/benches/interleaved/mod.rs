//! Interleaved rounds, shared by the benches that compare hosts in one run
//! (`layers`, `foreign`): each round runs every host once, in a rotated
//! order, so drift on a shared machine hits them all alike; the report is,
//! per host, the median over rounds of its per-round median, of its ratio to
//! the first host of the same round, and of the difference.

/// A host over a new directory holding `guest` as `file`, and `policy` as
/// its policy when given, with no component cache (every host compiles its
/// own); fails the bench if any plugin does not load.
pub fn host(
    rt: &tokio::runtime::Runtime,
    guest: &std::path::Path,
    file: &str,
    policy: Option<&str>,
) -> (tempfile::TempDir, corral::Host) {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(guest, dir.path().join(file)).expect("copy");
    if let Some(policy) = policy {
        let stem = file.trim_end_matches(".wasm");
        std::fs::write(dir.path().join(format!("{stem}.policy.toml")), policy).expect("policy");
    }
    let host = rt
        .block_on(
            corral::Host::builder()
                .plugin_dir(dir.path())
                .cache(corral_test_support::cache())
                .build(),
        )
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (dir, host)
}

/// The median of `values` (the upper one of an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The host of each turn of `rounds` rounds over `hosts` hosts: every host
/// once a round, the order rotated by one each round.
pub fn order(hosts: usize, rounds: usize) -> impl Iterator<Item = usize> {
    (0..rounds).flat_map(move |r| (0..hosts).map(move |i| (i + r) % hosts))
}

/// Prints a Markdown table of `medians` (per host, one per round, in
/// microseconds), each host against the first, named `names`.
pub fn report(names: &[&str], medians: &[Vec<f64>], calls: usize) {
    let rounds = medians[0].len();
    println!("{rounds} interleaved rounds of {calls} calls per host; medians of per-round medians");
    println!("| host | p50 | ratio to {} | added |", names[0]);
    println!("|---|---|---|---|");
    for (h, name) in names.iter().enumerate() {
        let ratio: Vec<f64> = (0..rounds).map(|r| medians[h][r] / medians[0][r]).collect();
        let added: Vec<f64> = (0..rounds).map(|r| medians[h][r] - medians[0][r]).collect();
        println!(
            "| {name} | {:.2} µs | {:.3}× | {:+.2} µs |",
            median(medians[h].clone()),
            median(ratio),
            median(added)
        );
    }
}
