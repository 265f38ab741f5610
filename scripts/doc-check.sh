#!/usr/bin/env bash
# The checks that need their own `cargo check`-style build of the
# dependencies, which the test build (full codegen, in the test profile)
# cannot share: the API docs with warnings as errors (broken intra-doc
# links, bad HTML, ...), and the library without its default features (an
# embedder who does not verify signatures builds no OpenSSL; the dependency
# tree itself is checked by tests/all/architecture.rs).
#
# scripts/test.sh runs it in the background, at the lowest CPU priority,
# from the end of the host build to the end of the suite, so it takes the
# time the tests leave idle. Its own target directory: cargo locks a target
# directory for the whole of a command, and the tests' `cargo test` would
# wait on it.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${DOC_CHECK_TARGET_DIR:-target/doc-check}

echo "==> cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps \
  -p corral -p corral-sandbox -p corral-signature -p corral-files -p corral-mcp -p corral-dist \
  -p corral-names -p corral-guest -p corral-guest-macros

echo "==> the library without the signatures feature"
cargo check --locked -p corral --no-default-features

