#!/usr/bin/env bash
# The fuzzing campaign of issue 29: each cargo-fuzz target in fuzz/ run for
# 10 million executions or 2 hours, whichever comes first, one at a time.
# Not part of .ci/run (CI checks that every target builds, scripts/test.sh).
# Results go into BENCHMARKS.md by hand: executions, coverage, crashes.
#
#   scripts/fuzz.sh                 every target, full size
#   scripts/fuzz.sh plan_parse      one target
#   RUNS=100000 SECONDS_MAX=60 scripts/fuzz.sh plan_parse   a short pass
#
# Needs the nightly toolchain (rustup) and cargo-fuzz (installed here from
# crates.io if missing). The corpus of each target lives in
# fuzz/corpus/TARGET (committed after `cargo +nightly fuzz cmin TARGET`: the
# inputs that reach distinct coverage); a crash
# is written to fuzz/artifacts/TARGET and fails the run.
#
# Prints one line per target:
#   fuzz TARGET: N executions in S s, coverage C, crashes K: ok|FAILED
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-10000000}
seconds=${SECONDS_MAX:-7200}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi

status=0
for target in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$target"
  log=$(mktemp)
  dict=()
  [[ -f "fuzz/dict/$target.dict" ]] && dict=(-dict="fuzz/dict/$target.dict")
  started=$(date +%s)
  set +e
  cargo +nightly fuzz run "$target" "fuzz/corpus/$target" -- \
    -runs="$runs" -max_total_time="$seconds" -print_final_stats=1 "${dict[@]}" >"$log" 2>&1
  code=$?
  set -e
  took=$(( $(date +%s) - started ))
  execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  crashes=$(ls "fuzz/artifacts/$target" 2>/dev/null | grep -cE '^(crash|leak|timeout|oom)-' || true)
  verdict=ok
  if [[ $code -ne 0 || ${crashes:-0} -gt 0 ]]; then
    verdict=FAILED
    status=1
    tail -40 "$log"
  fi
  echo "fuzz $target: ${execs:-0} executions in ${took} s, coverage ${cov:-?}, crashes ${crashes:-0}: $verdict"
  rm -f "$log"
done
exit "$status"
