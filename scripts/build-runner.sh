#!/usr/bin/env bash
# Builds code mode's runner (host/corral-sandbox/runner/runner.js, its world
# in wit/code) into host/corral-sandbox/runner/runner.wasm, which is
# committed: corral ships it, so a user needs no Node at run time.
#
#   scripts/build-runner.sh          rebuild and replace the committed component
#   scripts/build-runner.sh --check  rebuild into target/runner/ and fail unless
#                                    it is the committed component, byte for byte
#
# The build: esbuild bundles runner.js with acorn (the parser the runner
# rewrites scripts with), then componentize-qjs --sync --stub-wasi turns the
# bundle into a component whose only import is corral:code/tools. Both come
# pinned from scripts/toolchains (scripts/guest-toolchains.sh). componentize-qjs
# snapshots the runtime with Wizer, and the snapshot keeps the clock and
# random values read while it initialises; scripts/fixed-entropy.c, preloaded,
# holds them still so that the same sources give the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

check=false
case ${1:-} in
  --check) check=true ;;
  "") ;;
  *) echo "usage: scripts/build-runner.sh [--check]" >&2; exit 2 ;;
esac

scripts/guest-toolchains.sh
JS=$PWD/target/guest-tools/js/node_modules
OUT=target/runner
COMMITTED=host/corral-sandbox/runner/runner.wasm
mkdir -p "$OUT"

gcc -shared -fPIC -O2 -o "$OUT/fixed-entropy.so" scripts/fixed-entropy.c -ldl
# From the repository's root: the bundle names the modules it took in by
# their paths relative to it, the same on every machine.
NODE_PATH=$JS "$JS/.bin/esbuild" host/corral-sandbox/runner/runner.js --bundle --format=esm \
  --platform=neutral --external:corral:code/tools@0.1.0 --outfile="$OUT/runner.js" \
  --log-level=warning
LD_PRELOAD=$PWD/$OUT/fixed-entropy.so "$JS/.bin/componentize-qjs" --sync --stub-wasi \
  --wit wit/code -n runner --js "$OUT/runner.js" -o "$OUT/runner.wasm" >/dev/null

if $check; then
  if cmp -s "$OUT/runner.wasm" "$COMMITTED"; then
    echo "runner: ok ($COMMITTED is what its sources build)"
  else
    echo "runner: FAILED: $COMMITTED is not what host/corral-sandbox/runner/runner.js and" \
      "wit/code build ($(sha256sum < "$COMMITTED" | cut -c1-16) committed," \
      "$(sha256sum < "$OUT/runner.wasm" | cut -c1-16) rebuilt); run scripts/build-runner.sh" \
      "and commit the result" >&2
    exit 1
  fi
else
  cp "$OUT/runner.wasm" "$COMMITTED"
  echo "==> $COMMITTED ($(stat -c %s "$COMMITTED") bytes, sha256 $(sha256sum < "$COMMITTED" | cut -c1-16))"
fi
