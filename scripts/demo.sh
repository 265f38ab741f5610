#!/usr/bin/env bash
# The main job, from a fresh clone: install the wasm32-wasip2 target if needed,
# build the sample tools and the host (release), then list the tools and make
# real sandboxed calls, including ones that hit a limit and are contained.
set -euo pipefail
cd "$(dirname "$0")/.."
# The system OpenSSL the build links (for signature checks), if missing.
scripts/system-deps.sh --build

scripts/build-guests.sh
echo "==> building the corral host (release)"
cargo build --release --locked -p corral-cli
corral=target/release/corral

# Commands in bold on a terminal; plain text in a log file.
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; }
run() { step "corral $*"; "$corral" "$@" || echo "(exit code $?)"; }

run list
run call word_count '{"text": "Sandboxes keep tools honest. Fuel keeps them brief!"}'
run call slugify '{"text": "Hello, Wörld: corral 0.1"}'
run call evaluate '{"expression": "(2 + 3) * 4 ^ 2 - math::sqrt(16.0)"}'
run call json_query '{"document": {"books": [{"title": "Dune", "price": 9}, {"title": "Emma", "price": 14}]}, "path": "$.books[?@.price < 10].title"}'
run call sha256 '{"text": "abc"}' --json
run call statistics '{"values": [3, 1, 4, 1, 5, 9, 2, 6]}'

echo
echo "==> a result of several parts (contract 0.3.0): a sentence, a PNG image, the data and a"
echo "    corral:// link to the file; --out writes the image (target/demo/bar_chart-1.png):"
mkdir -p target/demo
run call bar_chart '{"title": "Calls per tool", "labels": ["sha256", "word_count", "slugify", "fetch_url"], "values": [1200, 860, 430, 95]}' --out target/demo

echo
echo "==> tools written in Python (tabulate from PyPI), JavaScript (semver from npm) and C:"
run call table_render '{"rows": [{"tool": "word_count", "calls": 12}, {"tool": "slugify", "calls": 3}]}'
run call semver_satisfies '{"range": "^1.2.0", "versions": ["1.1.9", "1.4.0", "2.0.0"]}'
run call closest_match '{"word": "jsno_qeury", "candidates": ["json_query", "json_stats", "word_count"]}'

echo
echo "==> a plan: seven calls in one round trip, three parallel waves, \$ref data flow,"
echo "    and a failed step whose dependent is skipped (fail-forward, exit code 1):"
run plan examples/plans/report.json --dry-run
run plan examples/plans/report.json

echo
echo "==> a pipeline from plugins/pipelines.json: slugify, then hash the slug, one call:"
run call slug_fingerprint '{"title": "Hello, Wörld"}'

echo
echo "==> invalid arguments are rejected before any guest code runs (exit code 1):"
run call regex_extract '{"text": "a1 b2", "pattern": 42}'

echo
echo "==> limits: a big input with a small fuel budget is stopped and reported (exit code 1),"
echo "    and the next call runs normally:"
big=$(mktemp)
trap 'rm -f "$big"' EXIT
printf '{"text": "%s"}' "$(yes 'lorem ipsum dolor sit amet.' | head -n 20000 | tr '\n' ' ')" > "$big"
run --fuel 2000000 call word_count "@$big"
run --memory-mib 1 call sha256 '{"text": "too little memory to even start"}'
run call word_count "@$big"

echo
echo "==> approval gates: notes_delete requires approval. With no reviewer the call is a"
echo "    configuration error (exit code 2), never a silent run:"
run call notes_delete '{"name": "taxes"}'
echo
echo "==> a rules file a human wrote decides (examples/approvals/rules.toml), and every"
echo "    decision is appended to an audit log:"
audit=$(mktemp -d)
trap 'rm -rf "$big" "$audit"' EXIT
run call notes_delete '{"name": "taxes"}' --approve rules:examples/approvals/rules.toml --audit-log "$audit/audit.jsonl"
step "cat audit.jsonl"
cat "$audit/audit.jsonl"

echo
echo "==> policies: what each plugin is granted, in words:"
run policy check
echo
echo "==> notes has a read-write grant on plugins/notes-data; writing needs approval (auto here):"
run call notes_write '{"name": "draft-demo", "text": "written by the demo"}' --approve auto
run call notes_list
echo "    ...and the rules file lets drafts be deleted:"
run call notes_delete '{"name": "draft-demo"}' --approve rules:examples/approvals/rules.toml
echo
echo "==> fetch may reach http://127.0.0.1:8765 (a local server started for the demo) and"
echo "    nothing else; any other destination is refused by the host (exit code 1):"
www=$(mktemp -d)
echo "hello from the demo server" > "$www/hello.txt"
python3 -m http.server 8765 --bind 127.0.0.1 --directory "$www" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$big" "$audit" "$www"' EXIT
for _ in $(seq 50); do
  (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && break
  sleep 0.1
done
run call fetch_url '{"url": "http://127.0.0.1:8765/hello.txt"}'
run call fetch_url '{"url": "https://example.com/"}'
