#!/usr/bin/env bash
# The full test suite, from a fresh clone: installs the wasm32-wasip2 target if
# needed, builds the sample tools, then runs every test of the host, the guest
# SDK (including its compile-fail UI tests) and the integration tests (which
# build the hostile fixture guests themselves).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build-guests.sh
# The CLI tests run the `corral` binary; `cargo test` alone builds only its
# test harness.
echo "==> cargo build (the corral binary)"
cargo build --locked -p corral --bins
echo "==> cargo test"
cargo test --locked
