//! `tool_search`'s accuracy on natural-language queries a model would send,
//! over the sample tools and the 200-tool catalog, each with the one tool
//! it means:
//! - `tests/fixtures/catalog/search-eval.json`, the evaluation set the
//!   ranking was developed against; the goals hold on it: top-1 at least
//!   90 %, top-3 at least 95 %;
//! - `tests/fixtures/catalog/search-holdout.json`, written before its
//!   results were seen, then used to find gaps in the method (so no longer
//!   held out);
//! - `tests/fixtures/catalog/search-holdout-2.json`, written after the
//!   method was settled and never tuned against: what to expect of queries
//!   nobody tuned for.
//!
//! Prints top-1 and top-3 accuracy, the median `total_matches` and the
//! misses of each.

use corral::{CallOptions, Host};
use serde_json::{Value, json};

use crate::support::{cache, catalog_dir, pool, repository_root};

/// Accuracy of one query set.
struct Score {
    n: usize,
    top1: usize,
    top3: usize,
}

async fn evaluate(host: &Host, file: &str) -> Score {
    let path = repository_root().join("tests/fixtures/catalog").join(file);
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).expect("query set")).expect("json");
    let (mut top1, mut top3, mut totals, mut misses) = (0, 0, Vec::new(), Vec::new());
    for case in &cases {
        let (query, expected) = (
            case["query"].as_str().expect("query"),
            case["expected"].as_str().expect("expected"),
        );
        assert!(host.tool(expected).is_some(), "`{expected}` is not served");
        let out = host
            .call_value(
                "tool_search",
                json!({"query": query, "limit": 3}),
                &CallOptions::default(),
            )
            .await
            .expect("search");
        let answer = out.into_json().expect("json");
        let found: Vec<&str> = answer["matches"]
            .as_array()
            .expect("matches")
            .iter()
            .filter_map(|m| m["name"].as_str())
            .collect();
        totals.push(answer["total_matches"].as_u64().expect("total"));
        match found.iter().position(|n| *n == expected) {
            Some(0) => {
                top1 += 1;
                top3 += 1;
            }
            Some(_) => {
                top3 += 1;
                misses.push(format!("  {query:?}: {expected} ranked {found:?}"));
            }
            None => misses.push(format!("  {query:?}: {expected} not in {found:?}")),
        }
    }
    totals.sort_unstable();
    let n = cases.len();
    println!(
        "{file}: {n} queries over {} tools: top-1 {top1}/{n} ({:.1} %), top-3 {top3}/{n} \
         ({:.1} %), median total_matches {}\n{}",
        host.tools().len(),
        100.0 * top1 as f64 / n as f64,
        100.0 * top3 as f64 / n as f64,
        totals[n / 2],
        misses.join("\n")
    );
    Score { n, top1, top3 }
}

#[tokio::test]
async fn tool_search_finds_the_tool_a_models_words_mean() {
    let dir = catalog_dir();
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .tool_search(true)
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let Score { n, top1, top3 } = evaluate(&host, "search-eval.json").await;
    let _ = evaluate(&host, "search-holdout.json").await;
    let holdout = evaluate(&host, "search-holdout-2.json").await;
    assert!(
        n >= 40,
        "an evaluation set of {n} queries; the goal needs at least 40"
    );
    assert!(top1 * 100 >= 90 * n, "top-1 {top1}/{n} is under 90 %");
    assert!(top3 * 100 >= 95 * n, "top-3 {top3}/{n} is under 95 %");
    // Queries nobody tuned for: a floor well under the goal, so a change
    // that only fits the evaluation set shows.
    assert!(
        holdout.top3 * 100 >= 85 * holdout.n,
        "held-out top-3 {}/{} is under 85 %",
        holdout.top3,
        holdout.n
    );
}
