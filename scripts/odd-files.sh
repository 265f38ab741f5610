#!/usr/bin/env bash
# Campaign 5 of issue 29, odd plugin directories: `corral list` over a
# directory holding one real plugin and every kind of entry named `*.wasm`
# that is not one, beside the same directory with the real plugin alone.
# Not part of .ci/run (the tests `loading::*` and `files::tests::*` check
# each case); the figures go into BENCHMARKS.md, "Reliability".
#
#   scripts/odd-files.sh
#
# The odd entries: a sparse 2 GiB file (over the 256 MiB cap), a sparse
# 200 MiB file without the wasm header (under the cap), a named pipe with
# no writer, a directory, a symlink loop, a dangling symlink, a file that
# opens but cannot be read (/proc/self/mem answers EIO), half a component,
# and a file named with terminal escapes. Each must be reported as not
# loaded with its reason, the real plugin must serve, no raw escape may
# reach the output, and the odd entries may cost little: each `list` is
# timed (wall seconds, peak RSS) 5 times after a warm-up, medians compared.
#
# Prints its figures and one verdict line:
#   odd files: N of 9 reported, list S s (baseline B s, R×), peak RSS M MiB (baseline P MiB, Q×): ok|FAILED
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build-guests.sh --rust >/dev/null
cargo build --release --locked -q -p corral-cli
corral=$PWD/target/release/corral
plugin=$PWD/plugins/text.wasm

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/base" "$work/odd" "$work/cache"
cp "$plugin" "$work/base/"
cp "$plugin" "$work/odd/"
(
  cd "$work/odd"
  truncate -s 2G huge.wasm
  truncate -s 200M big.wasm
  mkfifo fifo.wasm
  mkdir dir.wasm
  ln -s loop.wasm loop.wasm
  ln -s nowhere.wasm gone.wasm
  ln -s /proc/self/mem unreadable.wasm
  head -c "$(($(stat -c %s text.wasm) / 2))" text.wasm > cut.wasm
  printf 'x' > "$(printf 'ev\033[2Jil.wasm')"
)
odd_entries=9

# One `corral list` of DIR: its output in $work/out.{1,2}, "SECONDS KIB"
# on stdout.
list() {
  if ! /usr/bin/time -f '%e %M' -o "$work/time" \
    "$corral" --plugins "$1" --cache-dir "$work/cache" list >"$work/out.1" 2>"$work/out.2"; then
    echo "corral list $1 failed:" >&2
    cat "$work/out.2" >&2
    return 1
  fi
  tail -1 "$work/time"
}

# Medians of 5 timed runs after one warm-up (which fills the cache):
# "SECONDS KIB".
median() {
  list "$1" >/dev/null
  local runs
  runs=$(for _ in 1 2 3 4 5; do list "$1" || exit 1; done)
  echo "$(awk '{print $1}' <<<"$runs" | sort -n | sed -n 3p)" \
    "$(awk '{print $2}' <<<"$runs" | sort -n | sed -n 3p)"
}

base=$(median "$work/base")
odd=$(median "$work/odd")
read -r base_s base_kib <<<"$base"
read -r odd_s odd_kib <<<"$odd"
list "$work/odd" >/dev/null

status=ok
reported=$(grep -c '^not loaded: ' "$work/out.2" || true)
echo "not loaded, as printed:"
sed -n 's/^not loaded: /  /p' "$work/out.2"
if [[ $reported -ne $odd_entries ]]; then
  echo "expected $odd_entries entries reported as not loaded, got $reported"
  status=FAILED
fi
if ! grep -q 'word_count' "$work/out.1"; then
  echo "the real plugin does not serve"
  status=FAILED
fi
if grep -q $'\033' "$work/out.1" "$work/out.2"; then
  echo "a raw escape reached the output"
  status=FAILED
fi
read -r time_ratio rss_ratio < <(
  python3 -c "import sys; b, o, bk, ok = map(float, sys.argv[1:]); print(f'{o / b:.2f} {ok / bk:.2f}')" \
    "$base_s" "$odd_s" "$base_kib" "$odd_kib"
)
# The goal: the odd entries are refused from a stat or a few bytes each,
# so they cost at most 1.5× the baseline's time and 1.25× its RSS (the
# 2 GiB file alone cost 12.5 s and 2.1 GB when it was read whole).
if ! python3 -c "import sys; sys.exit(not (float(sys.argv[1]) <= 1.5 and float(sys.argv[2]) <= 1.25))" \
  "$time_ratio" "$rss_ratio"; then
  status=FAILED
fi
echo "odd files: $reported of $odd_entries reported, list ${odd_s} s (baseline ${base_s} s, ${time_ratio}×), peak RSS $((odd_kib / 1024)) MiB (baseline $((base_kib / 1024)) MiB, ${rss_ratio}×): $status"
[[ $status == ok ]]
