//! Interleaved rounds, shared by the benches that compare hosts in one run
//! (`layers`, `foreign`): each round runs every host once, in a rotated
//! order, so drift on a shared machine hits them all alike; the report is,
//! per host, the median over rounds of its per-round median, of its ratio to
//! the first host of the same round, and of the difference.

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
