#!/usr/bin/env bash
# The full test suite, from a fresh clone: installs the wasm32-wasip2 target and
# the Debian packages it needs (scripts/system-deps.sh) if missing, builds the sample tools (and the Python, JavaScript and C guests),
# then runs `cargo test --workspace`: the unit tests of every crate, the guest
# SDK's compile-fail UI tests, and the integration tests (corral-cli's `all`,
# which get the `corral` binary from cargo and the Rust fixture guests from
# corral-test-support's build script), each benchmark once, then the MCP
# client checks.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: OpenSSL for the sigstore crate, and the OCI registry the
# distribution tests start (scripts/system-deps.sh).
scripts/system-deps.sh

scripts/build-guests.sh
# The public Sigstore trusted roots, from PyPI, for the keyless tests.
scripts/sigstore-roots.sh
echo "==> cargo test --workspace"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"

# Each benchmark once, unoptimised (criterion's test mode): a bench whose setup
# broke fails here rather than on the day someone measures.
echo "==> benchmarks, once each"
cargo test --workspace --locked --bench '*' 2>&1 | tee -a "$log"

# The cargo-fuzz targets (a workspace of their own, run with nightly outside
# CI, scripts in BENCHMARKS.md): checked on stable, so a library change that
# breaks one fails here rather than on the day someone fuzzes.
echo "==> fuzz targets build"
CARGO_TARGET_DIR=target/fuzz-check cargo check --manifest-path fuzz/Cargo.toml --locked --bins

# The MCP server against clients nobody here wrote (installed pinned).
mcp_status=0
scripts/mcp-clients.sh 2>&1 | tee -a "$log" || mcp_status=$?

# Three replicas behind HAProxy, one SIGTERMed and one SIGKILLed under load
# (the long run is in BENCHMARKS.md).
echo "==> replicas behind HAProxy"
replicas_status=0
scripts/replicas.sh 600 2>&1 | tee -a "$log" || replicas_status=$?

# The Kubernetes manifests, the Deployment's arguments, the HAProxy
# configuration and the container image.
echo "==> deployment artifacts"
deploy_status=0
scripts/deploy-check.sh 2>&1 | tee -a "$log" || deploy_status=$?

# One closing line over every test binary (cargo prints one per binary, and the
# last ones are doc-test binaries with nothing to run) and the client checks.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     /^mcp client check: .*: ok$/ { p += 1 }
     /^mcp client check: .*: FAILED$/ { f += 1 }
     /^replicas: .*: ok$/ { p += 1 }
     /^replicas: .*: FAILED$/ { f += 1 }
     /^deploy check: .*: ok$/ { p += 1 }
     /^deploy check: .*: FAILED$/ { f += 1 }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
[ "$mcp_status" -eq 0 ] || exit "$mcp_status"
[ "$replicas_status" -eq 0 ] || exit "$replicas_status"
exit "$deploy_status"
