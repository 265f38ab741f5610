#!/usr/bin/env bash
# Runs every benchmark, then writes the performance report (issue 28) into
# its own marked section of BENCHMARKS.md; the other sections hold other
# figures and stay as they are. Not part of .ci/run: timings are not
# pass/fail on shared machines (CI runs each bench once, unmeasured).
#
#   scripts/bench.sh            the criterion benches, then the report
#   scripts/bench.sh --report   only the report (about 5 minutes once built)
#
# Every figure in the report stands beside a baseline measured in the same
# run. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ -f plugins/encode.wasm && -f target/guests/lang/tables.wasm ]] || scripts/build-guests.sh

if [[ "${1:-}" != "--report" ]]; then
  echo "==> criterion benches (results under target/criterion)"
  cargo bench --locked -p corral -p corral-mcp
fi

echo "==> the report"
report=target/bench-report.md
CORRAL_BENCH_REPORT=$PWD/$report cargo bench --locked -p corral-cli --bench report

commit=$(git rev-parse --short HEAD)
dirty=$(git diff --quiet HEAD -- host tests guest-sdk Cargo.lock || echo " plus uncommitted changes")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
machine="$(nproc) cores ($cpu), $(free -g | awk '/^Mem:/ {print $2}') GiB, Linux $(uname -r)"
python3 - "$report" "$commit$dirty" "$machine" <<'PY'
import datetime, re, sys
table, commit, machine = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
begin, end = "<!-- scripts/bench.sh: begin -->", "<!-- scripts/bench.sh: end -->"
section = f"""{begin}
## Performance report (`scripts/bench.sh`, issue 28)

Written by `scripts/bench.sh` on {datetime.date.today()} at {commit};
{machine}. Release build; `Host::call` runs on a 2-worker tokio runtime.
Each figure stands beside a baseline measured in the same run; the ratio
is figure ÷ baseline. Source: `host/corral-cli/benches/report/`.

{table}
{end}"""
path = "BENCHMARKS.md"
text = open(path).read()
if begin in text:
    text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: section, text, flags=re.S)
else:
    # First time: right after the "How to reproduce" section.
    at = text.index("\n## ", text.index("## How to reproduce") + 1)
    text = text[:at] + "\n" + section + "\n" + text[at:]
open(path, "w").write(text)
print(f"BENCHMARKS.md: report section updated ({commit})")
PY
