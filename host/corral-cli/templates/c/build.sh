#!/usr/bin/env bash
# Builds {{name}}.wasm, a WebAssembly component, from tool.c: zig's clang
# compiles it with corral's C bindings of the 0.3.0 world (guest-sdk/c, as
# `wit-bindgen c` writes them, and its corral_tool.h) for wasm32-wasi (a
# reactor, no main), and
# jco wraps the core module into a component.
set -euo pipefail
cd "$(dirname "$0")"
CORRAL_ROOT=${CORRAL_ROOT:-{{root}}}
TOOLS=$CORRAL_ROOT/target/guest-tools
BINDINGS=$CORRAL_ROOT/guest-sdk/c
if [[ ! -x "$TOOLS/venv/bin/python" || ! -x "$TOOLS/js/node_modules/.bin/jco" ]]; then
  "$CORRAL_ROOT/scripts/guest-toolchains.sh"
fi
mkdir -p build
"$TOOLS/venv/bin/python" -m ziglang cc -target wasm32-wasi -mexec-model=reactor -O2 -s \
  -Wall -Wextra -Werror -I . -I "$BINDINGS" -o build/{{name}}.core.wasm \
  tool.c json.c "$BINDINGS/plugin.c" "$BINDINGS/plugin_component_type.o"
"$TOOLS/js/node_modules/.bin/jco" new build/{{name}}.core.wasm --wasi-reactor -o {{name}}.wasm > /dev/null
echo "built {{name}}.wasm"
