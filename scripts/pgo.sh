#!/usr/bin/env bash
# A profile-guided build of `corral` (PGO): an instrumented build serves the
# bundled tools to a training client, and the release build then places and
# inlines the code by what that run did. On the machine of BENCHMARKS.md
# ("Profile-guided builds"; a 1 MiB second-level cache per core) an MCP call
# then misses that cache a quarter as often as the plain release build's,
# and the server spends about a third less CPU a call. Not part of .ci/run: two
# release builds, about half an hour on 2 cores.
#
#   scripts/pgo.sh           writes target/pgo/release/corral
#   scripts/pgo.sh --bench   also the report bench (its floors trained on
#                            their own calls), for like-for-like ratios:
#                            CARGO_TARGET_DIR=target/pgo scripts/mcp-server-cpu.py
#
# Needs an llvm-profdata that reads the raw profiles of rustc's LLVM
# (`rustc -vV`): $LLVM_PROFDATA, else llvm-profdata-NN from rustc's LLVM
# version down to 19. Debian 12's llvm-19 reads rustc 1.95's (LLVM 22): it is
# installed when none is found (scripts/system-deps.sh --pgo).
set -euo pipefail
cd "$(dirname "$0")/.."
bench=false
[[ "${1:-}" == "--bench" ]] && bench=true

scripts/system-deps.sh --build
[[ -f plugins/encode.wasm && -f target/guests/lang/tables.wasm ]] || scripts/build-guests.sh

work=$PWD/target/pgo-profiles
rm -rf "$work" && mkdir -p "$work/raw" "$work/build-time"
llvm=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')

# The first candidate that merges a raw profile of rustc's: an older reader
# refuses a newer format ("unsupported instrumentation profile format
# version"), and the plain `llvm-profdata` may be any version.
echo 'fn main() { println!("probe"); }' > "$work/probe.rs"
rustc -O -Cprofile-generate="$work/probe-raw" "$work/probe.rs" -o "$work/probe"
"$work/probe" >/dev/null
probe() { "$1" merge -o "$work/probe.profdata" "$work"/probe-raw/*.profraw 2>/dev/null; }
find_profdata() {
  local candidates=("${LLVM_PROFDATA:-}")
  for ((v = llvm; v >= 19; v--)); do
    candidates+=("llvm-profdata-$v" "/usr/lib/llvm-$v/bin/llvm-profdata")
  done
  for c in "${candidates[@]}"; do
    [[ -n "$c" ]] && command -v "$c" >/dev/null 2>&1 && probe "$c" && { echo "$c"; return; }
  done
  return 1
}
if ! profdata=$(find_profdata); then
  scripts/system-deps.sh --pgo
  profdata=$(find_profdata) || {
    echo "pgo.sh: no llvm-profdata reads rustc's profiles (LLVM $llvm): install" \
      "llvm-$llvm's tools, or rustup's llvm-tools, and set LLVM_PROFDATA" >&2
    exit 1
  }
fi
echo "==> llvm-profdata: $profdata"

# One cargo command builds what each mode needs: the report bench builds the
# `corral` binary beside it (its CARGO_BIN_EXE_corral).
build() {
  if $bench; then
    cargo bench --locked --no-run -p corral-cli --bench report
  else
    cargo build --release --locked -p corral-cli
  fi
}

echo "==> 1/3 the instrumented build (target/pgo-gen)"
# Build scripts and proc macros are instrumented too (RUSTFLAGS reaches
# them): their profiles go to a directory of their own and are not used.
CARGO_TARGET_DIR=target/pgo-gen RUSTFLAGS="-Cprofile-generate=$work/raw" \
  LLVM_PROFILE_FILE="$work/build-time/%m_%p.profraw" build

echo "==> 2/3 training: the bundled tools served over MCP, and the CLI"
export LLVM_PROFILE_FILE="$work/raw/%m_%p.profraw"
gen=target/pgo-gen/release/corral
python3 - "$gen" "$PWD/plugins" <<'PY'
"""A training client: `corral serve` over stdio, tools/list, then each
bundled tool of scripts/demo.sh called in turn, 400 rounds, each result
checked."""
import json, subprocess, sys

CALLS = [
    ("sha256", {"text": "abc"}),
    ("word_count", {"text": "Sandboxes keep tools honest. Fuel keeps them brief!"}),
    ("slugify", {"text": "Hello, Wörld: corral 0.1"}),
    ("evaluate", {"expression": "(2 + 3) * 4 ^ 2 - math::sqrt(16.0)"}),
    ("json_query", {"document": {"books": [{"title": "Dune", "price": 9}]},
                    "path": "$.books[?@.price < 10].title"}),
    ("statistics", {"values": [3, 1, 4, 1, 5, 9, 2, 6]}),
    ("bar_chart", {"title": "Calls", "labels": ["a", "b"], "values": [3, 5]}),
    ("table_render", {"rows": [{"tool": "word_count", "calls": 12}]}),
    ("semver_satisfies", {"range": "^1.2.0", "versions": ["1.1.9", "1.4.0"]}),
    ("closest_match", {"word": "jsno_qeury", "candidates": ["json_query", "word_count"]}),
]
server = subprocess.Popen([sys.argv[1], "serve", "--plugins", sys.argv[2]],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
next_id = 0

def ask(method, params=None):
    global next_id
    next_id += 1
    request = {"jsonrpc": "2.0", "id": next_id, "method": method}
    if params is not None:
        request["params"] = params
    server.stdin.write(json.dumps(request) + "\n")
    server.stdin.flush()
    for line in server.stdout:
        message = json.loads(line)
        if message.get("id") == next_id:
            if "error" in message:
                sys.exit(f"pgo.sh: {method} failed: {message['error']}")
            return message["result"]
    sys.exit(f"pgo.sh: the server closed its output during {method}")

ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "pgo-training", "version": "1"}})
server.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
names = {tool["name"] for tool in ask("tools/list")["tools"]}
missing = [name for name, _ in CALLS if name not in names]
if missing:
    sys.exit(f"pgo.sh: the bundled plugins lack {missing}: run scripts/build-guests.sh")
for _ in range(400):
    for name, arguments in CALLS:
        if ask("tools/call", {"name": name, "arguments": arguments}).get("isError"):
            sys.exit(f"pgo.sh: the training call of {name} failed")
server.stdin.close()
server.wait()
print(f"    {400 * len(CALLS)} calls of {len(CALLS)} tools over MCP")
PY
"$gen" list >/dev/null
"$gen" call sha256 '{"text": "abc"}' >/dev/null
if $bench; then
  # The floors' own calls (in process and over MCP), trained as corral's are.
  CARGO_TARGET_DIR=target/pgo-gen python3 scripts/mcp-server-cpu.py --rounds 1 --calls 3000
  report=$(ls -t target/pgo-gen/release/deps/report-* | grep -v '\.d$' | head -1)
  for side in host floor; do
    CORRAL_BENCH_CALL_LOOP=$side,3000,$PWD/plugins/encode.wasm "$report" >/dev/null
  done
fi
unset LLVM_PROFILE_FILE
"$profdata" merge -o "$work/corral.profdata" "$work"/raw/*.profraw

echo "==> 3/3 the build that uses the profile (target/pgo)"
CARGO_TARGET_DIR=target/pgo RUSTFLAGS="-Cprofile-use=$work/corral.profdata" build
echo "==> target/pgo/release/corral"
