//! What any-component mode costs on the call path (issue 26): the same
//! trivial work, `format!("Hello, {name}!")`, as a function exported by a
//! component of another world (`tests/fixtures/any_types`'s `greet`: the
//! host converts JSON to component values and back) and as a tool behind
//! corral's world written with the SDK (`tests/fixtures/greet`: the guest
//! parses and writes the JSON). Both through `Host::call`, a fresh instance
//! per call, with a new argument every call.
//!
//! The two hosts are measured in interleaved rounds (each round runs both,
//! in alternating order), so drift on a shared machine hits them alike.
//! Each round takes the median of `CALLS` sequential calls per host; the
//! report is the median over rounds of the any-component host's ratio to
//! the corral-world host of the same round, and of the difference. A third
//! row, `any_component_record`, is not the same work: it echoes a nested
//! record of 23 fields through the same any-component host, to show what
//! converting a large value both ways adds over `greet`.
//!
//! `cargo bench -p corral --bench foreign` (release; needs the Rust test
//! fixtures, which `cargo test` builds). Under `cargo test --bench foreign`
//! it makes a few calls per host and checks their answers.

#![allow(missing_docs)]

mod interleaved;

use std::path::{Path, PathBuf};
use std::time::Instant;

use corral::{CallOptions, Host};

const CALLS: usize = 4_000;
const ROUNDS: usize = 7;
const WARM_UP: usize = 2_000;

/// The measured calls: a name, the fixture serving the tool, and the tool
/// (`greet` gets a new name each call; `kinds_echo_everything` a record of
/// 23 fields, nested, whose text field changes each call).
const HOSTS: &[(&str, &str, &str)] = &[
    ("corral_world", "fixture_greet.wasm", "greet"),
    ("any_component", "fixture_any_types.wasm", "greet"),
    (
        "any_component_record",
        "fixture_any_types.wasm",
        "kinds_echo_everything",
    ),
];

/// The arguments of the `n`th call of `tool`.
fn arguments(tool: &str, n: u64) -> String {
    if tool == "greet" {
        return format!(r#"{{"name":"abc{n}"}}"#);
    }
    serde_json::json!({"value": {"flag": false, "tiny": 1, "byte": 2, "short": 3,
        "ushort": 4, "int": 5, "uint": 6, "big": 7, "ubig": "8", "single": 0.25,
        "double": -1e300, "letter": "x", "text": format!("t{n}"), "bytes": "AAEC/w==",
        "words": ["a", "b"], "maybe": 3, "nested-maybe": {"some": null}, "pair": ["p", -9],
        "at": {"x": 0.5, "y": 1}, "shape": {"tag": "rect", "value": {"x": 2, "y": 3}},
        "color": "green", "perms": ["write", "read"],
        "shapes": [{"tag": "circle", "value": 2}, {"tag": "empty"}]}})
    .to_string()
}

fn guests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/guests/wasm32-wasip2/release")
}

/// The median latency of `calls` calls of `tool` on `host`, in
/// microseconds.
async fn round(host: &Host, tool: &str, calls: usize, counter: &mut u64) -> f64 {
    let options = CallOptions::default();
    let mut took = Vec::with_capacity(calls);
    for _ in 0..calls {
        *counter += 1;
        let args = arguments(tool, *counter);
        let started = Instant::now();
        let out = host.call(tool, &args, &options).await.expect("call");
        took.push(started.elapsed().as_secs_f64() * 1e6);
        if tool == "greet" {
            assert_eq!(out.text, format!("\"Hello, abc{counter}!\""));
        } else {
            assert!(
                out.text.contains(&format!("\"t{counter}\"")),
                "{}",
                out.text
            );
        }
    }
    interleaved::median(took)
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (_dirs, hosts): (Vec<_>, Vec<Host>) = HOSTS
        .iter()
        .map(|(_, file, _)| {
            let guest = guests_dir().join(file);
            assert!(
                guest.is_file(),
                "{} is missing: `cargo test` builds the Rust test fixtures",
                guest.display()
            );
            interleaved::host(&rt, &guest, file, None)
        })
        .unzip();
    let (calls, rounds, warm_up) = if measuring {
        (CALLS, ROUNDS, WARM_UP)
    } else {
        (20, 2, 5)
    };
    let mut counter = 0;
    let mut medians = vec![Vec::new(); hosts.len()];
    rt.block_on(async {
        for (host, (_, _, tool)) in hosts.iter().zip(HOSTS) {
            round(host, tool, warm_up, &mut counter).await;
        }
        for h in interleaved::order(hosts.len(), rounds) {
            medians[h].push(round(&hosts[h], HOSTS[h].2, calls, &mut counter).await);
        }
    });
    if !measuring {
        println!("foreign: both hosts answered (run with `cargo bench` to measure)");
        return;
    }
    let names: Vec<&str> = HOSTS.iter().map(|h| h.0).collect();
    interleaved::report(&names, &medians, calls);
}
