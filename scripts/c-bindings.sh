#!/usr/bin/env bash
# The C bindings of the `corral:tool/plugin@0.3.0` world, committed in
# guest-sdk/c/ so that a C tool (and CI) needs no wit-bindgen: plugin.h,
# plugin.c and plugin_component_type.o, as `wit-bindgen c` writes them, and
# guest-sdk/c/bindings.stamp, which names the generator and the sha256 of
# the WIT they came from (a test compares it with wit/ as it is).
#
#   scripts/c-bindings.sh           regenerate them (after a WIT or version change)
#   scripts/c-bindings.sh --check   regenerate into a temporary directory and
#                                   fail if anything differs from what is committed
#
# Installs wit-bindgen-cli (crates.io, built from source: minutes) into
# target/guest-tools/bin the first time.
set -euo pipefail
cd "$(dirname "$0")/.."

WIT_BINDGEN_VERSION=0.63.0
WIT=wit
OUT=guest-sdk/c
TOOLS=target/guest-tools

if [[ "$("$TOOLS/bin/wit-bindgen" --version 2>/dev/null)" != "wit-bindgen-cli $WIT_BINDGEN_VERSION" ]]; then
  echo "==> installing wit-bindgen-cli $WIT_BINDGEN_VERSION (C bindings) into $TOOLS/bin"
  cargo install --quiet --locked --root "$TOOLS" --no-default-features --features c \
    "wit-bindgen-cli@$WIT_BINDGEN_VERSION"
fi

stamp() {
  echo "wit-bindgen-cli $WIT_BINDGEN_VERSION c, world corral:tool/plugin@0.3.0"
  echo "$(cat "$WIT"/*.wit | sha256sum | cut -d' ' -f1)  $WIT"
}

generate() { # DIR
  "$TOOLS/bin/wit-bindgen" c "$WIT" --world corral:tool/plugin@0.3.0 --out-dir "$1" > /dev/null 2>&1
  stamp > "$1/bindings.stamp"
}

if [[ "${1:-}" == "--check" ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  generate "$tmp"
  for file in plugin.h plugin.c plugin_component_type.o bindings.stamp; do
    if ! cmp -s "$tmp/$file" "$OUT/$file"; then
      echo "$OUT/$file differs from what wit-bindgen $WIT_BINDGEN_VERSION writes for $WIT; run scripts/c-bindings.sh" >&2
      exit 1
    fi
  done
  echo "==> $OUT matches $WIT"
else
  mkdir -p "$OUT"
  generate "$OUT"
  echo "==> wrote $OUT (plugin.h, plugin.c, plugin_component_type.o, bindings.stamp)"
fi
