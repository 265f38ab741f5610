//! What the resilience layers cost on the call path, measured the way
//! issue 24 asks: the same trivial tool (`sha256` from the bundled `encode`
//! plugin) through `Host::call` with a new argument every call, once with no
//! layer configured and once with retry, circuit breaker, rate limit and
//! cache all configured (the cache always missing), plus one host per single
//! layer, to show each layer's share.
//!
//! The hosts are measured in interleaved rounds (each round runs every host
//! once, in a rotated order), so drift on a shared machine hits them all
//! alike. Each round takes the median of `CALLS` sequential calls per host;
//! the report is the median over rounds of each host's ratio to the plain
//! host of the same round, and of its difference in microseconds.
//!
//! `cargo bench -p corral --bench layers` (release; needs the sample tools:
//! `scripts/build-guests.sh --rust`). Under `cargo test --bench layers` it
//! makes a few calls per host and checks they succeed.

#![allow(missing_docs)]

mod interleaved;

use std::time::Instant;

use corral::{CallOptions, Host};

const CALLS: usize = 4_000;
const ROUNDS: usize = 7;
const WARM_UP: usize = 2_000;

/// The hosts: a name and the `[resilience.tools.sha256]` table.
const HOSTS: &[(&str, &str)] = &[
    ("no_layers", ""),
    (
        "all_layers",
        "retry = { max_attempts = 3 }\n\
         circuit_breaker = { failure_threshold = 5 }\n\
         rate_limit = { requests = 1000000000, per = \"second\" }\n\
         cache = { ttl_ms = 60000, max_size = 100 }\n",
    ),
    ("retry_only", "retry = { max_attempts = 3 }\n"),
    (
        "breaker_only",
        "circuit_breaker = { failure_threshold = 5 }\n",
    ),
    (
        "rate_limit_only",
        "rate_limit = { requests = 1000000000, per = \"second\" }\n",
    ),
    ("cache_only", "cache = { ttl_ms = 60000, max_size = 100 }\n"),
];

/// The median latency of `calls` calls of `host`, in microseconds.
async fn round(host: &Host, calls: usize, counter: &mut u64) -> f64 {
    let options = CallOptions::default();
    let mut took = Vec::with_capacity(calls);
    for _ in 0..calls {
        *counter += 1;
        let args = format!(r#"{{"text":"abc{counter}"}}"#);
        let started = Instant::now();
        let out = host.call("sha256", &args, &options).await.expect("call");
        took.push(started.elapsed().as_secs_f64() * 1e6);
        assert!(!out.cache_hit, "every argument is new");
    }
    interleaved::median(took)
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let plugin = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/encode.wasm");
    assert!(
        plugin.is_file(),
        "{} is missing: run scripts/build-guests.sh first",
        plugin.display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (_dirs, hosts): (Vec<_>, Vec<Host>) = HOSTS
        .iter()
        .map(|(_, table)| {
            let policy = (!table.is_empty())
                .then(|| format!("version = 1\n[resilience.tools.sha256]\n{table}"));
            interleaved::host(&rt, &plugin, "encode.wasm", policy.as_deref())
        })
        .unzip();
    let (calls, rounds, warm_up) = if measuring {
        (CALLS, ROUNDS, WARM_UP)
    } else {
        (20, 1, 5)
    };
    let mut counter = 0;
    let mut medians = vec![Vec::new(); hosts.len()];
    rt.block_on(async {
        for host in &hosts {
            round(host, warm_up, &mut counter).await;
        }
        for h in interleaved::order(hosts.len(), rounds) {
            medians[h].push(round(&hosts[h], calls, &mut counter).await);
        }
    });
    if !measuring {
        println!("layers: every host answered (run with `cargo bench` to measure)");
        return;
    }
    let names: Vec<&str> = HOSTS.iter().map(|h| h.0).collect();
    interleaved::report(&names, &medians, calls);
}
