#!/usr/bin/env bash
# Builds {{name}}.wasm, a WebAssembly component, from index.js: esbuild
# bundles it with the corral-tool helper beside it, and componentize-js makes
# the component.
set -euo pipefail
cd "$(dirname "$0")"
CORRAL_ROOT=${CORRAL_ROOT:-{{root}}}
TOOLS=$CORRAL_ROOT/target/guest-tools
if [[ ! -x "$TOOLS/js/node_modules/.bin/componentize-js" ]]; then
  "$CORRAL_ROOT/scripts/guest-toolchains.sh"
fi
mkdir -p build
"$TOOLS/js/node_modules/.bin/esbuild" index.js --bundle --format=esm --platform=neutral \
  --log-level=warning --external:'corral:*' --external:'wasi:*' \
  --alias:corral-tool="$PWD/corral-tool.js" --outfile=build/bundle.js
"$TOOLS/js/node_modules/.bin/componentize-js" build/bundle.js --wit wit -n plugin \
  -d fetch-event -o {{name}}.wasm > /dev/null
echo "built {{name}}.wasm"
