#!/usr/bin/env bash
# Builds the container image of deploy/Containerfile (issue 30) with
# buildah (Debian's, `--storage-driver vfs`, no daemon, no base image to
# pull), then runs the image's own binary once from the built filesystem
# (`corral --version`, chrooted into a mount of the image) to show that the
# binary and its libraries are all there.
#
#   scripts/image.sh [BINARY] [TAG]
#
# BINARY defaults to target/release/corral (build it with `cargo build
# --release -p corral-cli`); scripts/test.sh passes the debug binary it
# already has. TAG defaults to localhost/corral:VERSION. The root filesystem
# is the binary (stripped), every library `ldd` lists (with the dynamic
# loader) and the system's CA certificates (for OTLP over https and OCI
# registries). Prints one line: `image: TAG, N MiB, runs: ok|FAILED`.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=${1:-target/release/corral}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
tag=${2:-localhost/corral:$version}
[ -x "$binary" ] || { echo "no binary at $binary: build it first" >&2; exit 1; }
command -v buildah >/dev/null 2>&1 || scripts/system-deps.sh

context=$(mktemp -d)
container=
cleanup() {
  [ -n "$container" ] && buildah --storage-driver vfs rm "$container" >/dev/null 2>&1
  rm -rf "$context"
}
trap cleanup EXIT
root=$context/rootfs
mkdir -p "$root/usr/local/bin" "$root/tmp" "$root/etc/ssl/certs"
chmod 1777 "$root/tmp"
cp "$binary" "$root/usr/local/bin/corral"
strip "$root/usr/local/bin/corral"
# The libraries and the loader, at the paths the binary asks for.
ldd "$binary" | awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }' | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" 2>/dev/null || true
cp deploy/Containerfile "$context/"

buildah --storage-driver vfs bud --quiet -f "$context/Containerfile" -t "$tag" "$context" >/dev/null
size=$(buildah --storage-driver vfs images --format '{{.Size}}' "$tag" | head -1)

# Run the image's binary from the image's own filesystem.
container=$(buildah --storage-driver vfs from "$tag")
mount=$(buildah --storage-driver vfs mount "$container")
status=FAILED
if out=$(chroot --userspec=65532:65532 "$mount" /usr/local/bin/corral --version 2>&1) \
  && [[ $out == "corral $version"* ]]; then
  status=ok
fi
echo "$tag: corral --version in the image: $out"
buildah --storage-driver vfs umount "$container" >/dev/null
echo "image: $tag, $size, runs: $status"
[[ $status == ok ]]
