#!/usr/bin/env bash
# Three `corral serve --http` replicas behind HAProxy (issue 30): stateless
# MCP calls, 32 in flight, while one replica gets SIGTERM and another
# SIGKILL; session-based clients kept on their replica by HAProxy's stick
# table; MCP tasks in a Redis the replicas share (issue 47): polled and
# cancelled through other replicas, failed after the lease of a killed one;
# tenant quotas held across the replicas in that Redis, and the fallback
# while Redis is down (issue 49). The load and the checks are tests/replicas/replicas.py; HAProxy's
# configuration is deploy/haproxy/haproxy.cfg, the one README.md shows.
#
#   scripts/replicas.sh [CALLS] [CORRAL]
#
# CALLS defaults to 600 (the size .ci/run runs, through scripts/test.sh);
# the long run in BENCHMARKS.md is 20 000 with the release binary:
#   scripts/replicas.sh 20000 target/release/corral
# Needs the built `corral` (default target/debug/corral) and sample tools
# (scripts/build-guests.sh). Installs HAProxy and Redis (Debian, scripts/system-deps.sh)
# and the pinned Python MCP client (PyPI) when missing. Prints the figures and one line:
#   replicas: N calls, ... : ok|FAILED
set -euo pipefail
cd "$(dirname "$0")/.."

calls=${1:-600}
corral=${2:-$PWD/target/debug/corral}
cache="$PWD/target/test-component-cache"

scripts/system-deps.sh
# The Python `mcp` client, installed as the MCP client checks install it.
venv=target/mcp-venv
scripts/mcp-clients.sh --install

plugins=$(mktemp -d)
trap 'rm -rf "$plugins"' EXIT
cp plugins/text.wasm plugins/notes.wasm "$plugins/"
mkdir "$plugins/notes-data"
# The notes plugin as in plugins/, but with no reviewer in front of writes
# (the test counts writes, not decisions) and every notes_write execution in the
# audit log with its arguments, to count them per replica.
cat >"$plugins/notes.policy.toml" <<'POLICY'
version = 1

[[filesystem]]
host = "notes-data"
guest = "/notes"
access = "read-write"

# Deleting waits on the client's approval (an elicitation): the phase that
# answers it while the session's replica drains.
[approval]
require = ["notes_delete"]

[resilience.tools.notes_write]
audit = { level = "all", record_arguments = true }
POLICY
# The hostile fixture's `spin`, always an MCP task here: the tasks phase
# starts, cancels and orphans spinning tasks (tests/replicas/tasks_phase.py).
cp target/guests/wasm32-wasip2/release/fixture_hostile.wasm "$plugins/hostile.wasm"
cat >"$plugins/hostile.policy.toml" <<'POLICY'
version = 1

[limits]
fuel = 10_000_000_000
timeout_ms = 300_000

[tasks]
mode = "never"
tools = { spin = "always" }
POLICY
# Two more copies of it whose policies set per-tenant quotas
# (tests/replicas/quotas_phase.py reads them from there).
for q in qcalls qfuel; do
  cp "$plugins/hostile.wasm" "$plugins/$q.wasm"
  "$venv/bin/python" -c "import sys; sys.path.insert(0, 'tests/replicas'); \
import quotas_phase; print(quotas_phase.POLICIES['$q'], end='')" >"$plugins/$q.policy.toml"
done
# Warm the component cache the replicas share.
"$corral" --plugins "$plugins" --cache-dir "$cache" list >/dev/null
exec "$venv/bin/python" tests/replicas/replicas.py "$corral" "$plugins" "$cache" \
  deploy/haproxy/haproxy.cfg --calls "$calls"
