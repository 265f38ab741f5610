#!/usr/bin/env bash
# rustdoc, as cargo runs it for `cargo test --doc` (RUSTDOC=scripts/rustdoc-docs.sh),
# that also writes the crate's API docs with warnings as errors (broken
# intra-doc links, bad HTML, missing docs...) before running its doc tests.
#
# Why: `cargo doc` needs a `cargo check`-style build of the whole dependency
# tree, which the test build (full code generation) cannot share: 190 s of
# a CI run. The doc tests' rustdoc already has every library built by the
# test build (`--extern NAME=...rlib`), the crate's features and its lints,
# which is all a doc build needs.
#
# Only for the crates named in CORRAL_DOC_CRATES (crate names, space-separated);
# each one documented is appended to the file CORRAL_DOC_LOG, so that the
# caller can tell that none was skipped. Docs go to target/doc, as cargo
# doc's do. Every other call (the version query, doc tests of other crates)
# is rustdoc's own.
set -euo pipefail

args=("$@")
crate=
testing=false
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --crate-name) crate=${args[i + 1]} ;;
    --test) testing=true ;;
  esac
done

if $testing && [[ " ${CORRAL_DOC_CRATES:-} " == *" $crate "* ]]; then
  # The same call without what only doc tests take, and without the crate's
  # own library (doc tests link it; the docs are of its source).
  doc=()
  for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
      --test | --no-run | --nocapture) ;;
      --test-run-directory | --test-args | --persist-doctests | --test-runtool | --test-runtool-arg | --test-builder)
        i=$((i + 1)) ;;
      --extern)
        if [[ ${args[i + 1]} != "$crate="* ]]; then doc+=("${args[i]}" "${args[i + 1]}"); fi
        i=$((i + 1)) ;;
      *) doc+=("${args[i]}") ;;
    esac
  done
  out=$(cd "$(dirname "$0")/.." && pwd)/target/doc
  echo "==> API docs of $crate (warnings are errors)" >&2
  rustdoc "${doc[@]}" -o "$out" -D warnings
  if [[ -n ${CORRAL_DOC_LOG:-} ]]; then echo "$crate" >> "$CORRAL_DOC_LOG"; fi
fi
exec rustdoc "$@"
