#!/usr/bin/env bash
# Builds the bundled sample tools for wasm32-wasip2 and puts the components into
# plugins/, the host's default plugin directory. Installs the wasm32-wasip2
# target first if it is missing. Guests share target/guests with the test
# fixtures that tests/build.rs builds, so nothing is compiled twice.
set -euo pipefail
cd "$(dirname "$0")/.."

SAMPLES=(text math json encode notes fetch)

if ! rustup target list --installed | grep -qx wasm32-wasip2; then
  echo "==> installing the wasm32-wasip2 target"
  rustup target add wasm32-wasip2
fi

echo "==> building sample tools: ${SAMPLES[*]}"
cargo build --release --locked --target wasm32-wasip2 --target-dir target/guests \
  $(printf -- '-p %s ' "${SAMPLES[@]}")

mkdir -p plugins
for name in "${SAMPLES[@]}"; do
  cp "target/guests/wasm32-wasip2/release/${name}.wasm" "plugins/${name}.wasm"
done
# Policies of the samples that need capabilities, and the notes plugin's directory.
for policy in sample-tools/*/*.policy.toml; do
  cp "$policy" plugins/
done
mkdir -p plugins/notes-data
# The example pipelines are compound tools over the sample tools.
cp examples/pipelines/pipelines.json plugins/pipelines.json
echo "==> plugins/: $(ls plugins | tr '\n' ' ')"
