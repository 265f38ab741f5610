#!/usr/bin/env bash
# The public Sigstore trusted roots (production and staging), as sigstore-python
# ships them in its wheel on PyPI (pinned), unpacked into target/sigstore-roots/
# for the keyless tests: corral must read the roots operators will use.
set -euo pipefail
cd "$(dirname "$0")/.."
version=4.5.1
out=target/sigstore-roots
if [ -f "$out/$version/production.json" ] && [ -f "$out/$version/staging.json" ]; then
  exit 0
fi
echo "==> the public Sigstore trusted roots (sigstore==$version from PyPI)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary :all: "sigstore==$version" -d "$tmp"
mkdir -p "$out/$version"
python3 - "$tmp"/sigstore-"$version"-*.whl "$out/$version" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for host, name in (("tuf-repo-cdn.sigstore.dev", "production"), ("tuf-repo-cdn.sigstage.dev", "staging")):
        data = z.read(f"sigstore/_store/https%3A%2F%2F{host}/trusted_root.json")
        open(f"{out}/{name}.json", "wb").write(data)
PY
