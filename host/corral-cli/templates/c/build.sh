#!/usr/bin/env bash
# Builds {{name}}.wasm, a WebAssembly component, from tool.c: wit-bindgen
# writes the C bindings, zig's clang compiles for wasm32-wasi (a reactor, no
# main), and jco wraps the core module into a component.
set -euo pipefail
cd "$(dirname "$0")"
CORRAL_ROOT=${CORRAL_ROOT:-{{root}}}
TOOLS=$CORRAL_ROOT/target/guest-tools
if [[ ! -x "$TOOLS/bin/wit-bindgen" || ! -x "$TOOLS/js/node_modules/.bin/jco" ]]; then
  "$CORRAL_ROOT/scripts/guest-toolchains.sh"
fi
mkdir -p build
"$TOOLS/bin/wit-bindgen" c wit --world corral:tool/plugin@0.1.0 --out-dir build \
  > build/wit-bindgen.log 2>&1 || { cat build/wit-bindgen.log >&2; exit 1; }
"$TOOLS/venv/bin/python" -m ziglang cc -target wasm32-wasi -mexec-model=reactor -O2 -s \
  -Wall -Wextra -Werror -I . -I build -o build/{{name}}.core.wasm \
  tool.c json.c build/plugin.c build/plugin_component_type.o
"$TOOLS/js/node_modules/.bin/jco" new build/{{name}}.core.wasm --wasi-reactor -o {{name}}.wasm > /dev/null
echo "built {{name}}.wasm"
