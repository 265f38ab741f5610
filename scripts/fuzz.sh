#!/usr/bin/env bash
# The fuzzing campaign of issue 29: each cargo-fuzz target in fuzz/ run for
# 10 million executions or 2 hours, whichever comes first, one at a time.
# Not part of .ci/run (CI checks that every target builds, scripts/test.sh,
# and replays every seed on stable, `cargo test`).
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
# crates.io if missing), and tar and xz (Debian: xz-utils).
#
# A target reads two directories. fuzz/seeds/TARGET holds the named seeds:
# inputs written by hand (or by corral-test-support's `fuzz_seeds` example)
# and the crash reproducers, each of which also has a unit test; they are
# committed, and `cargo test` replays them all on stable through the
# target's own body, fuzz/invariants/TARGET.rs (tests/all/fuzz_seeds.rs;
# oci_manifest's in corral-dist's manifest tests). fuzz/corpus/TARGET is the
# generated corpus, the one libFuzzer writes new inputs to: committed only
# as one archive, fuzz/corpus/TARGET.tar.xz, unpacked here when the
# directory is missing or empty (git ignores the directory). A campaign of
# several sittings keeps the directory between them.
#
# After a run without a crash the corpus directory is minimised in place
# (`cargo +nightly fuzz cmin`: the inputs that reach distinct coverage) and
# the archive is repacked only if the run added coverage: when the
# minimised corpus holds more inputs than the archive, or the run's final
# `cov:` exceeds its `INITED cov:` (the coverage of the inputs it started
# from, seeds included, measured by the same binary). Otherwise the archive
# stays as it was, and a run that found nothing changes nothing to commit.
# The archive is deterministic (names sorted; no times, owners or modes of
# this machine; xz -9e on one thread): the same corpus packs to the same
# bytes. A crash is written to fuzz/artifacts/TARGET and fails the run;
# once fixed, the input goes into fuzz/seeds/TARGET under a name that says
# what it is, with a unit test. libFuzzer's whole output is kept in
# target/fuzz-logs/TARGET.log.
#
# Prints one line per target (K inputs: the generated corpus, seeds not
# counted), and a note on stderr when an archive is repacked:
#   fuzz TARGET: N executions in S s (R/s), coverage C edges, F features, corpus K inputs, crashes K: ok|FAILED
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-10000000}
seconds=${SECONDS_MAX:-7200}
command -v xz >/dev/null || { echo "scripts/fuzz.sh: needs xz (Debian: xz-utils)" >&2; exit 1; }
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal

# The files of directory $1 as a deterministic archive at $2, replaced whole.
pack() {
  (cd "$1" && find . -type f -printf '%P\0' | LC_ALL=C sort -z) |
    tar -C "$1" --null -T - --mtime=@0 --owner=0 --group=0 --numeric-owner \
      --mode=0644 --format=gnu -cf - | xz -9e -T1 >"$2.tmp"
  mv "$2.tmp" "$2"
}

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi

status=0
mkdir -p target/fuzz-logs
for target in "${targets[@]}"; do
  corpus=fuzz/corpus/$target
  archive=$corpus.tar.xz
  archived=0
  if [[ -f $archive ]]; then
    archived=$(xz -dc "$archive" | tar -tf - | wc -l)
    if [[ ! -d $corpus || -z $(ls -A "$corpus") ]]; then
      mkdir -p "$corpus"
      xz -dc "$archive" | tar -C "$corpus" -xf -
    fi
  fi
  mkdir -p "$corpus"
  # The first directory is the one libFuzzer writes to.
  corpora=("$corpus")
  [[ -d fuzz/seeds/$target ]] && corpora+=("fuzz/seeds/$target")
  log=target/fuzz-logs/$target.log
  dict=()
  [[ -f "fuzz/dict/$target.dict" ]] && dict=(-dict="fuzz/dict/$target.dict")
  started=$(date +%s)
  flags=(-runs="$runs" -max_total_time="$seconds" -print_final_stats=1 "${dict[@]}")
  set +e
  if [[ -n ${PREBUILT:-} ]]; then
    mkdir -p "fuzz/artifacts/$target"
    "fuzz/target/x86_64-unknown-linux-gnu/release/$target" \
      -artifact_prefix="fuzz/artifacts/$target/" "${flags[@]}" "${corpora[@]}" >"$log" 2>&1
  else
    cargo +nightly fuzz run "$target" "${corpora[@]}" -- "${flags[@]}" >"$log" 2>&1
  fi
  code=$?
  set -e
  took=$(( $(date +%s) - started ))
  execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -1)
  inited=$(grep -o 'INITED cov: [0-9]*' "$log" | head -1 | awk '{print $3}')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  features=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  crashes=$(ls "fuzz/artifacts/$target" 2>/dev/null | grep -cE '^(crash|leak|timeout|oom)-' || true)
  verdict=ok
  if [[ $code -ne 0 || ${crashes:-0} -gt 0 ]]; then
    verdict=FAILED
    status=1
    tail -40 "$log"
  else
    if [[ -n ${PREBUILT:-} ]]; then
      # cmin by hand: merge into an empty directory, which keeps one input
      # per distinct coverage, then replace the corpus with it.
      minimal=$(mktemp -d)
      "fuzz/target/x86_64-unknown-linux-gnu/release/$target" -merge=1 "$minimal" "$corpus" >>"$log" 2>&1
      rm -rf "$corpus"
      mv "$minimal" "$corpus"
    else
      cargo +nightly fuzz cmin "$target" "$corpus" >>"$log" 2>&1
    fi
    inputs=$(find "$corpus" -type f | wc -l)
    if (( inputs > archived || ${cov:-0} > ${inited:-0} )); then
      pack "$corpus" "$archive"
      echo "  $archive repacked: $archived -> $inputs inputs, coverage ${inited:-?} -> ${cov:-?} edges" | tee -a "$log" >&2
    fi
  fi
  inputs=$(find "$corpus" -type f | wc -l)
  echo "fuzz $target: ${execs:-0} executions in ${took} s ($(( ${execs:-0} / (took > 0 ? took : 1) ))/s), coverage ${cov:-?} edges, ${features:-?} features, corpus $inputs inputs, crashes ${crashes:-0}: $verdict"
done
exit "$status"
