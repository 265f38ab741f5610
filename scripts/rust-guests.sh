#!/usr/bin/env bash
# Prints the Rust guest crates, one package name per line: the workspace
# members under sample-tools/ (with `samples`) or tests/fixtures/ (with
# `fixtures`), or both (no argument). The workspace's member list in
# Cargo.toml is the one list of guests; this reads it through `cargo metadata`,
# as tests/support/build.rs does.
#
#   scripts/rust-guests.sh [samples|fixtures]
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
cargo metadata --no-deps --format-version 1 --locked | python3 -c '
import json, os, sys
which, root = sys.argv[1], os.getcwd()
dirs = {"samples": ["sample-tools"], "fixtures": ["tests/fixtures"]}.get(
    which, ["sample-tools", "tests/fixtures"])
dirs = [os.path.join(root, d) + os.sep for d in dirs]
names = sorted(p["name"] for p in json.load(sys.stdin)["packages"]
               if any(p["manifest_path"].startswith(d) for d in dirs))
print("\n".join(names))
' "$which"
