#!/usr/bin/env bash
# The Debian packages the build and the tests need beyond the base machine,
# installed when missing (as root, or through sudo):
#   libssl-dev, pkg-config  the system OpenSSL the sigstore crate links
#                           (signature checks in corral)
#   docker-registry         the CNCF distribution registry the distribution
#                           tests start, one per test, on a loopback port
#                           (not with --build, which is what building needs)
#   keyutils                keyctl, which runs the OS keyring test's processes
#                           in one kernel session keyring, as a login would
#   haproxy                 the load balancer in front of three replicas in
#                           the replica test (scripts/replicas.sh)
#   buildah                 builds the container image without a daemon
#                           (scripts/image.sh)
#   redis-server            the shared store of replicas (corral-store's
#                           tests, and the MCP task tests across replicas)
#   llvm-19                 llvm-profdata for a profile-guided build
#                           (scripts/pgo.sh; only with --pgo, which is the
#                           build's packages and this)
set -euo pipefail
missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
pkg-config --exists openssl 2>/dev/null || missing+=(libssl-dev)
case "${1:-}" in
  --build) ;;
  --pgo) command -v llvm-profdata-19 >/dev/null 2>&1 || missing+=(llvm-19) ;;
  *)
    command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
    command -v keyctl >/dev/null 2>&1 || missing+=(keyutils)
    command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
    command -v buildah >/dev/null 2>&1 || missing+=(buildah)
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    ;;
esac
if ((${#missing[@]})); then
  echo "==> installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
