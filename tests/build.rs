//! Builds every guest the tests load (the test fixtures and the sample tools) for
//! `wasm32-wasip2`, once, into `target/guests`, the same directory
//! `scripts/build-guests.sh` uses, and tells the tests where they are through
//! the `CORRAL_GUESTS_DIR` environment variable (and where
//! `scripts/build-guests.sh` puts the Python, JavaScript and C guests through
//! `CORRAL_LANG_GUESTS_DIR`).

use std::path::PathBuf;
use std::process::Command;

const GUESTS: &[&str] = &[
    "fixture-hostile",
    "fixture-trap-describe",
    "fixture-dup-a",
    "fixture-dup-b",
    "fixture-bad-name",
    "fixture-bad-schema",
    "fixture-command",
    "text",
    "math",
    "json",
    "encode",
    "notes",
    "fetch",
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf();
    for dir in ["wit", "guest-sdk", "sample-tools", "tests/fixtures"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );

    let target_dir = root.join("target").join("guests");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target_dir);
    for guest in GUESTS {
        cmd.args(["-p", guest]);
    }
    // The outer build's flags and wrappers (coverage, clippy-driver) are for the
    // host; the guests build with their own defaults.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .expect("cannot run cargo to build the test guests");
    assert!(
        status.success(),
        "building the test guests failed; is the target installed? run `rustup target add wasm32-wasip2`"
    );
    let out = target_dir.join("wasm32-wasip2").join("release");
    println!("cargo:rustc-env=CORRAL_GUESTS_DIR={}", out.display());
    // Guests in Python, JavaScript and C come from scripts/build-guests.sh.
    println!(
        "cargo:rustc-env=CORRAL_LANG_GUESTS_DIR={}",
        target_dir.join("lang").display()
    );
}
