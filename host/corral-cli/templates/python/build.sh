#!/usr/bin/env bash
# Builds {{name}}.wasm, a WebAssembly component, from app.py with
# componentize-py (the corral_tool helper beside it is bundled in).
set -euo pipefail
cd "$(dirname "$0")"
CORRAL_ROOT=${CORRAL_ROOT:-{{root}}}
TOOLS=$CORRAL_ROOT/target/guest-tools
if [[ ! -x "$TOOLS/venv/bin/componentize-py" ]]; then
  "$CORRAL_ROOT/scripts/guest-toolchains.sh"
fi
"$TOOLS/venv/bin/componentize-py" -d wit -w corral:tool/plugin@0.3.0 componentize app \
  -p . -o {{name}}.wasm > /dev/null
echo "built {{name}}.wasm"
