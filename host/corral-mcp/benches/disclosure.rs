//! What progressive disclosure saves on a model's first `tools/list`: the
//! sample tools plus the 200-tool catalog fixture (`tests/fixtures/catalog`),
//! served with no facades, a facade per category and a facade per plugin.
//! For each: the whole result in bytes and in `o200k_base` tokens
//! (`tiktoken-rs`), and the ratio to the list without facades; then what
//! unfolding the largest category adds. Prints a Markdown table.
//!
//! `cargo bench -p corral-mcp --bench disclosure` (the Python, JavaScript
//! and C samples come from `scripts/build-guests.sh`; the catalog fixture
//! from the test-support crate's build script). Under `cargo test --bench
//! disclosure` it runs the same, once.

#![allow(missing_docs)]

use corral::{DisclosureMode, Host};
use corral_mcp::McpServer;
use corral_test_support::{cache, catalog_dir, pool, tokens};

/// Bytes and tokens of a `tools/list` result holding `tools`.
fn size(tools: &[rmcp::model::Tool]) -> (usize, usize) {
    let text = serde_json::json!({ "tools": tools }).to_string();
    (text.len(), tokens(&text))
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = catalog_dir();
    let host = |mode| {
        runtime
            .block_on(
                Host::builder()
                    .plugin_dir(dir.path())
                    .pool(pool())
                    .cache(cache())
                    .disclosure(mode)
                    .build(),
            )
            .expect("host")
    };
    let all = host(DisclosureMode::Off);
    let (bytes, off) = size(&McpServer::new(all.clone()).list(&[]));
    println!(
        "| first `tools/list`, {} tools | bytes | tokens (o200k_base) | ratio |",
        all.tools().len()
    );
    println!("|---|---|---|---|");
    println!("| no facades | {bytes} | {off} | 1.0x |");
    for (label, mode) in [
        ("a facade per category", DisclosureMode::Category),
        ("a facade per plugin", DisclosureMode::Plugin),
    ] {
        let host = host(mode);
        let (bytes, on) = size(&McpServer::new(host.clone()).list(&[]));
        println!(
            "| {label} | {bytes} | {on} | {:.1}x fewer |",
            off as f64 / on as f64
        );
        if mode == DisclosureMode::Category {
            let catalog = host.catalog();
            let largest = catalog
                .facades()
                .iter()
                .max_by_key(|f| f.tools.len())
                .expect("a facade");
            let (_, unfolded) =
                size(&McpServer::new(host.clone()).list(std::slice::from_ref(&largest.name)));
            println!(
                "| ... after unfolding `{}` ({} tools) | | {unfolded} | |",
                largest.name,
                largest.tools.len()
            );
        }
    }
}
