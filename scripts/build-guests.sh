#!/usr/bin/env bash
# Builds every guest: the bundled sample tools into plugins/ (the host's default
# plugin directory), with their policies, and the guests written in Python,
# JavaScript and C (samples and test fixtures) into target/guests/lang/, where
# the tests find them (the Rust fixtures are built by tests/support/build.rs).
# Installs what it needs first: the wasm32-wasip2 target and the pinned Python,
# JavaScript and C toolchains (scripts/guest-toolchains.sh).
#
#   scripts/build-guests.sh             everything
#   scripts/build-guests.sh --rust      only the Rust samples (no other toolchain)
#   ... --fixtures                      the Rust test fixtures too, in the same
#                                       cargo invocation, as tests/support/build.rs
#                                       builds them (scripts/test.sh): one
#                                       feature resolution, so neither build
#                                       redoes the other's dependencies
#
# A non-Rust guest is rebuilt only when one of its inputs (sources, the SDK
# helper, the WIT, the toolchain pins) is newer than the component.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# The Rust samples: the workspace members under sample-tools/ (the one list).
mapfile -t RUST_SAMPLES < <(scripts/rust-guests.sh samples)
only_rust=false
fixtures=false
for arg in "$@"; do
  case $arg in
    --rust) only_rust=true ;;
    --fixtures) fixtures=true ;;
    *) echo "usage: scripts/build-guests.sh [--rust] [--fixtures]" >&2; exit 2 ;;
  esac
done
RUST_BUILT=("${RUST_SAMPLES[@]}")
if $fixtures; then
  mapfile -t RUST_BUILT < <(scripts/rust-guests.sh)
fi

if ! rustup target list --installed | grep -qx wasm32-wasip2; then
  echo "==> installing the wasm32-wasip2 target"
  rustup target add wasm32-wasip2
fi

if $fixtures; then
  echo "==> building Rust sample tools (${RUST_SAMPLES[*]}) and test fixtures"
else
  echo "==> building Rust sample tools: ${RUST_SAMPLES[*]}"
fi
cargo build --release --locked --target wasm32-wasip2 --target-dir target/guests \
  $(printf -- '-p %s ' "${RUST_BUILT[@]}")

mkdir -p plugins
for name in "${RUST_SAMPLES[@]}"; do
  cp "target/guests/wasm32-wasip2/release/${name}.wasm" "plugins/${name}.wasm"
done

if ! $only_rust; then
  scripts/guest-toolchains.sh
  TOOLS=$ROOT/target/guest-tools
  BUILD=$ROOT/target/guests/lang-build
  OUT=$ROOT/target/guests/lang
  mkdir -p "$BUILD" "$OUT"

  # stale OUT INPUT...: true when OUT is missing or an input is newer.
  stale() {
    local out=$1
    shift
    [[ ! -f "$out" ]] && return 0
    [[ -n "$(find "$@" -newer "$out" -print -quit 2>/dev/null)" ]]
  }

  # python_guest NAME SOURCE_DIR OUT: componentize-py over app.py in
  # SOURCE_DIR, with the SDK helper and the guest's requirements.txt (if any)
  # bundled in.
  python_guest() {
    local name=$1 src=$2 out=$3
    if ! stale "$out" "$src" guest-sdk/python wit scripts/toolchains; then return; fi
    echo "==> building Python guest $name"
    local libs=$BUILD/$name/site-packages
    rm -rf "$BUILD/$name" && mkdir -p "$libs"
    if [[ -f "$src/requirements.txt" ]]; then
      "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
        --target "$libs" -r "$src/requirements.txt"
    fi
    "$TOOLS/venv/bin/componentize-py" -d wit -w corral:tool/plugin@0.3.0 componentize app \
      -p "$src" -p guest-sdk/python -p "$libs" -o "$out" > "$BUILD/$name.log"
  }

  # js_guest NAME SOURCE_DIR OUT ENGINE: esbuild bundles index.js with its
  # npm dependencies (the guest's package.json, installed from its lock file)
  # and the SDK helper; then ENGINE makes the component:
  # - quickjs: componentize-qjs --sync (no event loop: synchronous tools);
  # - spidermonkey: componentize-js, for async tools and fetch(). `fetch-event`
  #   (an incoming-HTTP export) is disabled; outgoing `fetch()` stays, for the
  #   hosts a policy allows.
  js_guest() {
    local name=$1 src=$2 out=$3 engine=$4
    if ! stale "$out" "$src" guest-sdk/js wit scripts/toolchains; then return; fi
    echo "==> building JavaScript guest $name"
    rm -rf "$BUILD/$name" && mkdir -p "$BUILD/$name"
    if [[ -f "$src/package.json" ]]; then
      cp "$src/package.json" "$src/package-lock.json" "$BUILD/$name/"
      (cd "$BUILD/$name" && npm ci --ignore-scripts --no-fund --no-audit --loglevel=error)
    fi
    NODE_PATH=$BUILD/$name/node_modules "$TOOLS/js/node_modules/.bin/esbuild" "$src/index.js" \
      --bundle --format=esm --platform=neutral --log-level=warning \
      --external:'corral:*' --external:'wasi:*' --alias:corral-tool="$ROOT/guest-sdk/js/corral-tool.js" \
      --outfile="$BUILD/$name/bundle.js"
    case $engine in
      quickjs)
        "$TOOLS/js/node_modules/.bin/componentize-qjs" --sync --wit wit -n plugin \
          --js "$BUILD/$name/bundle.js" -o "$out" > "$BUILD/$name.log" ;;
      spidermonkey)
        "$TOOLS/js/node_modules/.bin/componentize-js" "$BUILD/$name/bundle.js" \
          --wit wit -n plugin -d fetch-event -o "$out" > "$BUILD/$name.log" ;;
      *) echo "js_guest $name: unknown engine '$engine' (quickjs or spidermonkey)" >&2; exit 1 ;;
    esac
  }

  # python_component NAME SOURCE_DIR WORLD OUT: a component of its own world
  # (any-component mode) from SOURCE_DIR/app.py and SOURCE_DIR/wit, the way
  # componentize-py users build one.
  python_component() {
    local name=$1 src=$2 world=$3 out=$4
    if ! stale "$out" "$src" scripts/toolchains; then return; fi
    echo "==> building Python component $name (world $world)"
    "$TOOLS/venv/bin/componentize-py" -d "$src/wit" -w "$world" componentize app \
      -p "$src" -o "$out" > "$BUILD/$name.log"
  }

  # js_component NAME SOURCE WIT_DIR WORLD OUT: a component of its own
  # world (any-component mode), the way `jco componentize` users build one:
  # componentize-js over one module, no WASI it does not need.
  js_component() {
    local name=$1 src=$2 wit=$3 world=$4 out=$5
    if ! stale "$out" "$src" "$wit" scripts/toolchains; then return; fi
    echo "==> building JavaScript component $name (world $world)"
    "$TOOLS/js/node_modules/.bin/componentize-js" "$src" --wit "$wit" -n "$world" \
      -d stdio -d random -d clocks -d http -d fetch-event -o "$out" > "$BUILD/$name.log"
  }

  # qjs_component NAME SOURCE WIT_DIR WORLD OUT: a component of its own
  # world (any-component mode), the way componentize-qjs users build one
  # (with the toolchain's own world-level `init` hook in it).
  qjs_component() {
    local name=$1 src=$2 wit=$3 world=$4 out=$5
    if ! stale "$out" "$src" "$wit" scripts/toolchains; then return; fi
    echo "==> building JavaScript component $name (world $world, QuickJS)"
    "$TOOLS/js/node_modules/.bin/componentize-qjs" --sync --wit "$wit" -n "$world" \
      --js "$src" -o "$out" > "$BUILD/$name.log"
  }

  # c_guest NAME OUT SOURCES...: zig's clang for wasm32-wasi (a reactor: no
  # main) over the sources and the committed C bindings of the 0.1.0 world
  # (guest-sdk/c, from scripts/c-bindings.sh), then jco wraps the core
  # module and the WASI preview-1 adapter into a component.
  c_guest() {
    local name=$1 out=$2
    shift 2
    if ! stale "$out" "$@" guest-sdk/c scripts/toolchains; then return; fi
    echo "==> building C guest $name"
    local dir=$BUILD/$name
    rm -rf "$dir" && mkdir -p "$dir"
    local includes=()
    for source in "$@"; do includes+=(-I "$(dirname "$source")"); done
    "$TOOLS/venv/bin/python" -m ziglang cc -target wasm32-wasi -mexec-model=reactor -O2 -s \
      -Wall -Wextra -Werror "${includes[@]}" -I guest-sdk/c \
      -o "$dir/$name.core.wasm" "$@" guest-sdk/c/plugin.c guest-sdk/c/plugin_component_type.o
    "$TOOLS/js/node_modules/.bin/jco" new "$dir/$name.core.wasm" --wasi-reactor -o "$out" > /dev/null
  }

  echo "==> building Python, JavaScript and C guests (samples and test fixtures)"
  python_guest tables sample-tools/tables "$OUT/tables.wasm"
  js_guest versions sample-tools/versions "$OUT/versions.wasm" quickjs
  c_guest fuzzy "$OUT/fuzzy.wasm" sample-tools/fuzzy/fuzzy.c sample-tools/fuzzy/json.c
  python_guest py_probe tests/fixtures/py_probe "$OUT/py_probe.wasm"
  js_guest js_probe tests/fixtures/js_probe "$OUT/js_probe.wasm" quickjs
  js_guest js_web tests/fixtures/js_web "$OUT/js_web.wasm" spidermonkey
  c_guest c_probe "$OUT/c_probe.wasm" tests/fixtures/c_probe/probe.c sample-tools/fuzzy/json.c
  js_component any_js tests/fixtures/any_js/index.js tests/fixtures/any_types/wit types \
    "$OUT/any_js.wasm"
  python_component any_py tests/fixtures/any_py py-stats "$OUT/any_py.wasm"
  qjs_component any_qjs tests/fixtures/any_qjs/index.js tests/fixtures/any_qjs/wit qjs-tools \
    "$OUT/any_qjs.wasm"
  for name in tables versions fuzzy; do
    cp "$OUT/$name.wasm" "plugins/$name.wasm"
  done
fi

# Policies of the samples that need capabilities, and the notes plugin's directory.
for policy in sample-tools/*/*.policy.toml; do
  cp "$policy" plugins/
done
mkdir -p plugins/notes-data
# The example pipelines are compound tools over the sample tools.
cp examples/pipelines/pipelines.json plugins/pipelines.json
echo "==> plugins/: $(ls plugins | tr '\n' ' ')"
