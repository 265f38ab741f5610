#!/usr/bin/env bash
# Installs the pinned toolchains for guests in Python, JavaScript and C into
# target/guest-tools/, from the package registries only (PyPI, npm):
#   venv/         componentize-py and ziglang   (scripts/toolchains/requirements.txt)
#   js/           componentize-qjs, componentize-js, jco, esbuild (scripts/toolchains/package*.json)
# C guests need no generator: their bindings are committed in guest-sdk/c
# (scripts/c-bindings.sh regenerates them). Each part is reinstalled only
# when its pinned manifest changes (a stamp file holds the manifest's hash).
# Needs python3 (3.10+) and node/npm (20+).
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS=target/guest-tools
mkdir -p "$TOOLS"

# Prints the hash of the given files, to compare with a stamp.
manifest_hash() { cat "$@" | sha256sum | cut -d' ' -f1; }

up_to_date() { # stamp-file hash
  [[ -f "$1" && "$(cat "$1")" == "$2" ]]
}

hash=$(manifest_hash scripts/toolchains/requirements.txt)
if ! up_to_date "$TOOLS/venv.stamp" "$hash"; then
  echo "==> installing Python guest toolchain (componentize-py, ziglang) into $TOOLS/venv"
  rm -rf "$TOOLS/venv"
  python3 -m venv "$TOOLS/venv"
  "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/toolchains/requirements.txt
  echo "$hash" > "$TOOLS/venv.stamp"
fi

hash=$(manifest_hash scripts/toolchains/package.json scripts/toolchains/package-lock.json)
if ! up_to_date "$TOOLS/js.stamp" "$hash"; then
  echo "==> installing JavaScript guest toolchain (componentize-qjs, componentize-js, jco, esbuild) into $TOOLS/js"
  rm -rf "$TOOLS/js"
  mkdir -p "$TOOLS/js"
  cp scripts/toolchains/package.json scripts/toolchains/package-lock.json "$TOOLS/js/"
  # `npm install` with the committed lock file installs the locked versions.
  # Not `npm ci`: it refuses this lock because some optional per-platform
  # packages (musl, Windows, Android builds) are not on the registry mirror.
  # No install scripts: esbuild's only checks its binary, which comes from its
  # platform package either way.
  (cd "$TOOLS/js" && npm install --ignore-scripts --no-fund --no-audit --loglevel=error)
  echo "$hash" > "$TOOLS/js.stamp"
fi
