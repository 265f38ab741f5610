#!/usr/bin/env bash
# Builds the tool, then calls it in corral's sandbox (under this directory's
# {{name}}.policy.toml) and checks the answer. CORRAL names the corral binary
# (default: the one on PATH).
set -euo pipefail
cd "$(dirname "$0")"
./build.sh
CORRAL=${CORRAL:-corral}
out=$("$CORRAL" --plugins . call {{tool}} '{"text": "hello"}' --json)
echo "$out"
case $out in
  *'"olleh"'*) echo "ok: {{tool}} reversed the text" ;;
  *) echo "FAILED: {{tool}} did not answer \"olleh\"" >&2; exit 1 ;;
esac
# Invalid arguments are refused before the tool runs, with exit code 1.
if "$CORRAL" --plugins . call {{tool}} '{}' > /dev/null 2>&1; then
  echo "FAILED: a call without \`text\` succeeded" >&2
  exit 1
fi
echo "ok: a call without \`text\` was refused"
