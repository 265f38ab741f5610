#!/usr/bin/env bash
# Builds {{name}}.wasm, a WebAssembly component, from index.js: esbuild
# bundles it with the corral-tool helper beside it, and a JavaScript engine
# makes the component. CORRAL_JS_ENGINE picks the engine:
# - quickjs (the default): componentize-qjs --sync. A component of about
#   2 MB whose calls cost about a quarter of SpiderMonkey's; tool handlers
#   must be synchronous, and there is no fetch().
# - spidermonkey: componentize-js. A component of about 12 MB, for async
#   handlers and fetch() (to the hosts the tool's policy allows).
set -euo pipefail
cd "$(dirname "$0")"
CORRAL_ROOT=${CORRAL_ROOT:-{{root}}}
ENGINE=${CORRAL_JS_ENGINE:-quickjs}
TOOLS=$CORRAL_ROOT/target/guest-tools
if [[ ! -x "$TOOLS/js/node_modules/.bin/componentize-qjs" ]]; then
  "$CORRAL_ROOT/scripts/guest-toolchains.sh"
fi
mkdir -p build
"$TOOLS/js/node_modules/.bin/esbuild" index.js --bundle --format=esm --platform=neutral \
  --log-level=warning --external:'corral:*' --external:'wasi:*' \
  --alias:corral-tool="$PWD/corral-tool.js" --outfile=build/bundle.js
case $ENGINE in
  quickjs)
    "$TOOLS/js/node_modules/.bin/componentize-qjs" --sync --wit wit -n plugin \
      --js build/bundle.js -o {{name}}.wasm > /dev/null ;;
  spidermonkey)
    "$TOOLS/js/node_modules/.bin/componentize-js" build/bundle.js --wit wit -n plugin \
      -d fetch-event -o {{name}}.wasm > /dev/null ;;
  *)
    echo "CORRAL_JS_ENGINE='$ENGINE' is not an engine: use quickjs or spidermonkey" >&2
    exit 1 ;;
esac
echo "built {{name}}.wasm ($ENGINE)"
