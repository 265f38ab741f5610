#!/usr/bin/env bash
# The fuzzing campaign of issue 29: each cargo-fuzz target in fuzz/ run for
# 10 million executions or 2 hours, whichever comes first, one at a time.
# Not part of .ci/run (CI checks that every target builds, scripts/test.sh).
# Results go into BENCHMARKS.md by hand: executions, coverage, crashes.
#
#   scripts/fuzz.sh                 every target, full size
#   scripts/fuzz.sh plan_parse      one target
#   RUNS=100000 SECONDS_MAX=60 scripts/fuzz.sh plan_parse   a short pass
#   PREBUILT=1 scripts/fuzz.sh      the binaries `cargo +nightly fuzz build`
#                                   left in fuzz/target, not rebuilt: a long
#                                   campaign goes on while the sources change
#
# Needs the nightly toolchain (rustup) and cargo-fuzz (installed here from
# crates.io if missing). The corpus of each target lives in
# fuzz/corpus/TARGET; after a run without a crash it is minimised in place
# (`cargo +nightly fuzz cmin`: the inputs that reach distinct coverage) to
# be committed. A crash is written to fuzz/artifacts/TARGET and fails the
# run. libFuzzer's whole output is kept in target/fuzz-logs/TARGET.log.
#
# Prints one line per target:
#   fuzz TARGET: N executions in S s (R/s), coverage C edges, F features, corpus K inputs, crashes K: ok|FAILED
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
mkdir -p target/fuzz-logs
for target in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$target"
  log=target/fuzz-logs/$target.log
  dict=()
  [[ -f "fuzz/dict/$target.dict" ]] && dict=(-dict="fuzz/dict/$target.dict")
  started=$(date +%s)
  flags=(-runs="$runs" -max_total_time="$seconds" -print_final_stats=1 "${dict[@]}")
  set +e
  if [[ -n ${PREBUILT:-} ]]; then
    mkdir -p "fuzz/artifacts/$target"
    "fuzz/target/x86_64-unknown-linux-gnu/release/$target" \
      -artifact_prefix="fuzz/artifacts/$target/" "${flags[@]}" "fuzz/corpus/$target" >"$log" 2>&1
  else
    cargo +nightly fuzz run "$target" "fuzz/corpus/$target" -- "${flags[@]}" >"$log" 2>&1
  fi
  code=$?
  set -e
  took=$(( $(date +%s) - started ))
  execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  features=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  crashes=$(ls "fuzz/artifacts/$target" 2>/dev/null | grep -cE '^(crash|leak|timeout|oom)-' || true)
  verdict=ok
  if [[ $code -ne 0 || ${crashes:-0} -gt 0 ]]; then
    verdict=FAILED
    status=1
    tail -40 "$log"
  elif [[ -n ${PREBUILT:-} ]]; then
    # cmin by hand: merge into an empty directory, which keeps one input
    # per distinct coverage, then replace the corpus with it.
    minimal=$(mktemp -d)
    "fuzz/target/x86_64-unknown-linux-gnu/release/$target" -merge=1 "$minimal" "fuzz/corpus/$target" >>"$log" 2>&1
    rm -rf "fuzz/corpus/$target"
    mv "$minimal" "fuzz/corpus/$target"
  else
    cargo +nightly fuzz cmin "$target" "fuzz/corpus/$target" >>"$log" 2>&1
  fi
  inputs=$(find "fuzz/corpus/$target" -type f | wc -l)
  echo "fuzz $target: ${execs:-0} executions in ${took} s ($(( ${execs:-0} / (took > 0 ? took : 1) ))/s), coverage ${cov:-?} edges, ${features:-?} features, corpus $inputs inputs, crashes ${crashes:-0}: $verdict"
done
exit "$status"
