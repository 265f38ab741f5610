#!/usr/bin/env bash
# Builds {{name}}.wasm, a WebAssembly component, from src/lib.rs.
set -euo pipefail
cd "$(dirname "$0")"
if ! rustup target list --installed | grep -qx wasm32-wasip2; then
  rustup target add wasm32-wasip2
fi
cargo build --release --target wasm32-wasip2
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{tool}}.wasm" {{name}}.wasm
echo "built {{name}}.wasm"
