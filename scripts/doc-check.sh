#!/usr/bin/env bash
# The checks that need their own `cargo check`-style build of the
# dependencies, which the test build (full codegen, in the test profile)
# cannot share: the API docs with warnings as errors (broken intra-doc
# links, bad HTML, ...), and the library without its default features (an
# embedder who does not verify signatures builds no OpenSSL; the dependency
# tree itself is checked by tests/all/architecture.rs).
#
# scripts/test.sh runs it at the lowest CPU priority beside its last checks
# (MCP clients, replicas, deployment), which leave the CPU partly idle. Not
# earlier: beside the host build or the tests, which keep both cores busy,
# it slowed them by a fifth (memory and caches are shared whatever the
# priority) and made little progress. It shares `target/` with the test
# build, whose proc macros and build scripts it reuses; nothing else runs
# cargo by then.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps \
  -p corral -p corral-sandbox -p corral-signature -p corral-files -p corral-mcp -p corral-dist \
  -p corral-names -p corral-guest -p corral-guest-macros

echo "==> the library without the signatures feature"
cargo check --locked -p corral --no-default-features

