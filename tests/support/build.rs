//! Builds every Rust guest the tests load (the members of the workspace under
//! `sample-tools/` and `tests/fixtures/`: the workspace's member list is the
//! one list of them, read here through `cargo metadata`) for `wasm32-wasip2`,
//! once, into `target/guests`, the directory `scripts/build-guests.sh` uses
//! too. Tells the helpers where they are through `CORRAL_GUESTS_DIR`, where
//! `scripts/build-guests.sh` puts the Python, JavaScript and C guests through
//! `CORRAL_LANG_GUESTS_DIR`, and where tests keep their shared component cache
//! through `CORRAL_TEST_CACHE_DIR`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The package names of the Rust guests and their directories, from
/// `cargo metadata`.
fn rust_guests(cargo: &str, root: &Path) -> Vec<(String, PathBuf)> {
    let out = Command::new(cargo)
        .current_dir(root)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .expect("cannot run `cargo metadata`");
    assert!(
        out.status.success(),
        "`cargo metadata` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("`cargo metadata` prints JSON");
    let guest_dirs = [
        root.join("sample-tools"),
        root.join("tests").join("fixtures"),
    ];
    let mut names: Vec<(String, PathBuf)> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().unwrap_or(""));
            let dir = manifest.parent()?;
            guest_dirs
                .iter()
                .any(|d| manifest.starts_with(d))
                .then(|| Some((p["name"].as_str()?.to_string(), dir.to_path_buf())))?
        })
        .collect();
    names.sort();
    names
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest
        .ancestors()
        .nth(2)
        .expect("tests/support is two levels inside the workspace")
        .to_path_buf();
    // What the Rust guests are built from: the WIT, the Rust SDK, each
    // guest's own directory and the files shared beside them
    // (`tests/fixtures/raw_common.rs`), the workspace manifest and lock. Not
    // the directories of the other guests (Python, JavaScript, C), whose
    // toolchains write into them (componentize-py's `__pycache__`): watching
    // those made every test build after `scripts/build-guests.sh` rebuild
    // the test crates.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let guests = rust_guests(&cargo, &root);
    let mut watched: Vec<PathBuf> = [
        "wit",
        "guest-sdk/src",
        "guest-sdk/macros",
        "guest-sdk/wit",
        "guest-sdk/Cargo.toml",
        "Cargo.toml",
        "Cargo.lock",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    watched.extend(guests.iter().map(|(_, dir)| dir.clone()));
    for shared in ["sample-tools", "tests/fixtures"] {
        if let Ok(entries) = std::fs::read_dir(root.join(shared)) {
            watched.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    for path in &watched {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let guests: Vec<String> = guests.into_iter().map(|(name, _)| name).collect();
    assert!(
        !guests.is_empty(),
        "no guest crates found under sample-tools/ or tests/fixtures/"
    );
    let target_dir = root.join("target").join("guests");
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(&root)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target_dir);
    for guest in &guests {
        cmd.args(["-p", guest]);
    }
    // The outer build's flags and wrappers (coverage, say) are for the host;
    // the guests build with their own defaults. Except clippy-driver: when the
    // host's crates are linted as they build (`.ci/run`), the guests are too,
    // as `scripts/build-guests.sh` builds the samples under the same wrapper,
    // so both builds of target/guests agree and neither redoes the other.
    let lints = std::env::var("RUSTC_WORKSPACE_WRAPPER").is_ok_and(|w| {
        Path::new(&w)
            .file_stem()
            .is_some_and(|stem| stem == "clippy-driver")
    });
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ] {
        if !(lints && var == "RUSTC_WORKSPACE_WRAPPER") {
            cmd.env_remove(var);
        }
    }
    println!("cargo:rerun-if-env-changed=CLIPPY_ARGS");
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
    println!(
        "cargo:rustc-env=CORRAL_TEST_CACHE_DIR={}",
        root.join("target").join("test-component-cache").display()
    );
}
