#!/usr/bin/env bash
# Runs every benchmark, then writes the performance report (issue 28) into
# its own marked section of BENCHMARKS.md; the other sections hold other
# figures and stay as they are. Not part of .ci/run: timings are not
# pass/fail on shared machines (CI runs each bench once, unmeasured).
#
#   scripts/bench.sh                  the criterion benches, then the report
#   scripts/bench.sh --report         only the report (about 5 minutes once built)
#   scripts/bench.sh --report --pgo   the report of profile-guided builds:
#                                     scripts/pgo.sh --bench first (about half an
#                                     hour), then its report bench, whose floors
#                                     are built and trained the same way
#
# Every figure in the report stands beside a baseline measured in the same
# run. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

report_only=false pgo=false
for arg in "$@"; do
  case $arg in
    --report) report_only=true ;;
    --pgo) pgo=true ;;
    *) echo "bench.sh: unknown argument $arg (--report, --pgo)" >&2; exit 2 ;;
  esac
done
if $pgo && ! $report_only; then
  echo "bench.sh: --pgo goes with --report (the criterion benches are not built with PGO)" >&2
  exit 2
fi

[[ -f plugins/encode.wasm && -f target/guests/lang/tables.wasm ]] || scripts/build-guests.sh

if ! $report_only; then
  echo "==> criterion benches (results under target/criterion)"
  cargo bench --locked -p corral -p corral-mcp
fi

report=target/bench-report.md
build="Release build (the workspace's release profile: fat LTO, one codegen unit)"
kind=plain
if $pgo; then
  kind=pgo
  scripts/pgo.sh --bench
  echo "==> the report (PGO)"
  bench=$PWD/$(ls -t target/pgo/release/deps/report-* | grep -v '\.d$' | head -1)
  # From the package's directory, as `cargo bench` runs it.
  (cd host/corral-cli && CORRAL_BENCH_REPORT=$OLDPWD/$report "$bench" --bench)
  build="Profile-guided release build (\`scripts/pgo.sh --bench\`: corral and the floors each trained on their own calls)"
else
  echo "==> the report"
  CORRAL_BENCH_REPORT=$PWD/$report cargo bench --locked -p corral-cli --bench report
fi

commit=$(git rev-parse --short HEAD)
dirty=$(git diff --quiet HEAD -- host tests guest-sdk Cargo.lock || echo " plus uncommitted changes")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
machine="$(nproc) cores ($cpu), $(free -g | awk '/^Mem:/ {print $2}') GiB, Linux $(uname -r)"
python3 - "$report" "$commit$dirty" "$machine" "$build" "$kind" <<'PY'
import datetime, re, sys
table, commit, machine, build, kind = open(sys.argv[1]).read(), *sys.argv[2:6]
# Each build has its own marked section: the plain report, and the PGO one
# (`--pgo`) right after it.
marks = {"plain": ("scripts/bench.sh", "Performance report (`scripts/bench.sh`, issue 28)"),
         "pgo": ("scripts/bench.sh --pgo",
                 "Performance report of the profile-guided build (`scripts/bench.sh --report --pgo`)")}
mark, title = marks[kind]
begin, end = f"<!-- {mark}: begin -->", f"<!-- {mark}: end -->"
section = f"""{begin}
## {title}

Written by `scripts/bench.sh` on {datetime.date.today()} at {commit};
{machine}. {build}; `Host::call` runs on a 2-worker tokio runtime.
Each figure stands beside a baseline measured in the same run; the ratio
is figure ÷ baseline. Source: `host/corral-cli/benches/report/`.

{table}
{end}"""
path = "BENCHMARKS.md"
text = open(path).read()
if begin in text:
    text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: section, text, flags=re.S)
else:
    # First time: the plain report right after the "How to reproduce"
    # section, the PGO one right after the plain report.
    after = "<!-- scripts/bench.sh: end -->" if kind == "pgo" else "## How to reproduce"
    at = text.index("\n## ", text.index(after) + 1)
    text = text[:at] + "\n" + section + "\n" + text[at:]
open(path, "w").write(text)
print(f"BENCHMARKS.md: {kind} report section updated ({commit})")
PY
