#!/usr/bin/env bash
# The full test suite, from a fresh clone. It installs what it needs: the
# wasm32-wasip2 target and the Debian packages (scripts/system-deps.sh), and,
# in the background while cargo compiles, the guest toolchains, the MCP
# clients, the deployment validator and the public Sigstore roots (all pinned,
# from the package registries). Then:
#
# 1. the Rust guests, samples and test fixtures, for wasm32-wasip2
#    (scripts/build-guests.sh --rust --fixtures: the package set
#    tests/support/build.rs builds, which then finds them built);
# 2. one build of the host: every crate's tests, the integration tests and
#    each benchmark, in the test profile (the Rust fixture guests come from
#    corral-test-support's build script, into the same target/guests);
# 3. side by side, as the Python, JavaScript and C guests (samples and test
#    fixtures; scripts/build-guests.sh --fixtures) and code mode's runner
#    (scripts/build-runner.sh --check: the committed one is what its sources
#    build) leave a core idle: the
#    library without its default features (`cargo build -p corral
#    --no-default-features`, with host/nodefault-check beside it so that it
#    reuses step 2's dependencies), and a first run of the guest SDK's
#    compile-fail UI tests (trybuild builds a project of its own);
# 4. `cargo test --all-targets`: the unit tests of every crate, the UI tests
#    again (trybuild's project is built by now: seconds), the integration
#    tests (corral-cli's `all`) and each benchmark once (criterion's test
#    mode); beside it, at a lower CPU priority, the doc tests, whose rustdoc
#    also writes the API docs with warnings as errors
#    (scripts/rustdoc-docs.sh: no second build of the dependencies);
# 5. side by side (each prints its own lines when done): the MCP client
#    checks, three replicas behind HAProxy, and the deployment artifacts.
#
# `.ci/run` runs it with clippy-driver as the workspace's compiler wrapper,
# so step 2 is also the lint pass (one compile, not two).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/system-deps.sh

logs=target/test-logs
mkdir -p "$logs"
log=$(mktemp)
# On the way out, early or not: the summary's file goes, and so does any
# check still running in the background.
trap 'rm -f "$log"; kill $(jobs -p) 2>/dev/null || true' EXIT
# Network-bound installs, while the CPU compiles. Each is a no-op when what it
# installs is already there.
(
  scripts/guest-toolchains.sh && scripts/sigstore-roots.sh && scripts/mcp-clients.sh --install \
    && scripts/deploy-check.sh --install
) > "$logs/installs.log" 2>&1 &
installs=$!

scripts/build-guests.sh --rust --fixtures

echo "==> cargo test --all-targets --no-run (the one build of the host)"
# --timings: each unit's build time, in target/cargo-timings/ (BENCHMARKS.md,
# "CI time", reads it).
cargo test --all-targets --locked --no-run --timings 2>&1 | tee "$log"
# The UI tests' binary, from the build's list of test executables.
ui_test=$(sed -n 's|^ *Executable tests/ui.rs (\(.*\))$|\1|p' "$log")
if [ -z "$ui_test" ] || [ ! -x "$ui_test" ]; then
  echo "the build listed no executable for guest-sdk/tests/ui.rs" >&2
  exit 1
fi
# Absolute, as cargo prints it when CARGO_TARGET_DIR is: it runs elsewhere.
ui_test=$(realpath "$ui_test")

if ! wait "$installs"; then
  cat "$logs/installs.log" >&2
  echo "installing the test toolchains failed (log above)" >&2
  exit 1
fi
cat "$logs/installs.log"

# An embedder who does not verify signatures builds no OpenSSL (the
# dependency tree itself is checked by tests/architecture): the library
# builds, and is linted, without its default features. Alone, `-p corral`
# would resolve its dependencies' features on its own and rebuild most of
# them; host/nodefault-check (see its Cargo.toml) lines them up with the
# test build's, so only `corral` compiles.
cargo build --locked -p corral --no-default-features -p corral-nodefault-check \
  > "$logs/nodefault.log" 2>&1 &
nodefault=$!
# The UI tests once now: trybuild's first run builds its own project (the
# `#[tool]` macro's dependencies, in target/tests/trybuild), which takes a
# minute, and the guest builds below leave the CPU for it. Run as cargo runs
# a test: from the package's directory.
(cd guest-sdk && CARGO_MANIFEST_DIR=$PWD "$ui_test") > "$logs/ui.log" 2>&1 &
ui=$!
scripts/build-guests.sh --fixtures
# Code mode's runner is committed; rebuilt from its sources with the pinned
# toolchain, it must be the same bytes (seconds: the toolchain is installed).
runner_status=0
scripts/build-runner.sh --check 2>&1 | tee -a "$log" || runner_status=${PIPESTATUS[0]}
nodefault_status=0 ui_status=0
wait "$nodefault" || nodefault_status=$?
wait "$ui" || ui_status=$?
[ "$runner_status" -eq 0 ] || exit "$runner_status"
echo "==> the library without default features"
cat "$logs/nodefault.log"
if [ "$nodefault_status" -ne 0 ]; then
  echo "no default features: FAILED" | tee -a "$log"
  exit "$nodefault_status"
fi
# Anything compiled but corral itself means the features drifted apart (a
# dependency update): the check still held, at the cost of a second build of
# those crates and everything above them.
rebuilt=$(sed -n 's/^ *Compiling \([^ ]*\) .*/\1/p' "$logs/nodefault.log" \
  | grep -vx -e corral -e corral-nodefault-check || true)
if [ -n "$rebuilt" ]; then
  echo "no default features: FAILED: it rebuilt $(echo $rebuilt | tr ' ' ','), whose features" \
    "differ from the test build's; give them the test build's features in" \
    "host/nodefault-check/Cargo.toml" | tee -a "$log"
  exit 1
fi
echo "no default features: ok" | tee -a "$log"
if [ "$ui_status" -ne 0 ]; then
  cat "$logs/ui.log"
  echo "the guest SDK's UI tests failed (above)" >&2
  exit "$ui_status"
fi

# The doc tests, whose rustdoc also writes the API docs with warnings as
# errors, run beside the tests at a lower CPU priority: cargo holds the
# build directory's lock only while it builds, and the tests leave some CPU
# idle (binaries with a few tests, the benches' single-threaded smoke runs).
echo "==> cargo test --all-targets (and beside it the doc tests and API docs)"
# The published crates and the host's libraries (crate names).
doc_crates="corral corral_sandbox corral_signature corral_files corral_store corral_mcp corral_dist corral_names corral_guest corral_guest_macros"
documented=$logs/documented.txt
: > "$documented"
RUSTDOC=$PWD/scripts/rustdoc-docs.sh CORRAL_DOC_CRATES=$doc_crates CORRAL_DOC_LOG=$documented \
  nice -n 10 cargo test --doc --locked > "$logs/doc.log" 2>&1 &
doc=$!
cargo test --all-targets --locked 2>&1 | tee -a "$log"

# The MCP server against clients nobody here wrote (installed pinned), three
# replicas behind HAProxy (one SIGTERMed and one SIGKILLed under load; the
# long run is in BENCHMARKS.md), and the Kubernetes manifests, the
# Deployment's arguments, the HAProxy configuration and the container image.
# Independent of each other, so they run side by side; each one's output is
# shown whole when it is done.
echo "==> MCP clients, replicas behind HAProxy, deployment artifacts (side by side)"
scripts/mcp-clients.sh > "$logs/mcp.log" 2>&1 &
mcp=$!
scripts/replicas.sh 600 > "$logs/replicas.log" 2>&1 &
replicas=$!
scripts/deploy-check.sh > "$logs/deploy.log" 2>&1 &
deploy=$!
doc_status=0 mcp_status=0 replicas_status=0 deploy_status=0
wait "$doc" || doc_status=$?
wait "$mcp" || mcp_status=$?
wait "$replicas" || replicas_status=$?
wait "$deploy" || deploy_status=$?
echo "==> doc tests and API docs"
cat "$logs/doc.log" | tee -a "$log"
if [ "$doc_status" -eq 0 ]; then
  for crate in $doc_crates; do
    if ! grep -qx "$crate" "$documented"; then
      echo "doc check: FAILED: $crate has no doc tests run, so its API docs were not checked" | tee -a "$log"
      doc_status=1
    fi
  done
  [ "$doc_status" -ne 0 ] || echo "doc check: ok" | tee -a "$log"
else
  echo "doc check: FAILED (doc tests or API docs, above)" | tee -a "$log"
fi
for part in mcp replicas deploy; do
  cat "$logs/$part.log" | tee -a "$log"
done

# One closing line over every test binary (cargo prints one per binary, and the
# last ones are doc-test binaries with nothing to run) and the other checks.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     /^mcp client check: .*: ok$/ { p += 1 }
     /^mcp client check: .*: FAILED$/ { f += 1 }
     /^replicas: .*: ok$/ { p += 1 }
     /^replicas: .*: FAILED$/ { f += 1 }
     /^deploy check: .*: ok$/ { p += 1 }
     /^deploy check: .*: FAILED$/ { f += 1 }
     /^doc check: ok$/ { p += 1 }
     /^doc check: FAILED/ { f += 1 }
     /^no default features: ok$/ { p += 1 }
     /^no default features: FAILED/ { f += 1 }
     /^runner: ok/ { p += 1 }
     /^runner: FAILED/ { f += 1 }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
[ "$doc_status" -eq 0 ] || exit "$doc_status"
[ "$mcp_status" -eq 0 ] || exit "$mcp_status"
[ "$replicas_status" -eq 0 ] || exit "$replicas_status"
exit "$deploy_status"
