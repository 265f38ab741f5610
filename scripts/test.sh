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
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --locked 2>&1 | tee "$log"

# The MCP server against clients nobody here wrote (installed pinned).
mcp_status=0
scripts/mcp-clients.sh 2>&1 | tee -a "$log" || mcp_status=$?

# One closing line over every test binary (cargo prints one per binary, and the
# last ones are doc-test binaries with nothing to run) and the client checks.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     /^mcp client check: .*: ok$/ { p += 1 }
     /^mcp client check: .*: FAILED$/ { f += 1 }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$mcp_status"
