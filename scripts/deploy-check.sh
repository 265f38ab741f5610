#!/usr/bin/env bash
# The deployment artifacts of deploy/ (issue 30), checked: the Kubernetes
# manifests validated offline against the Kubernetes 1.33 schemas
# (kubernetes-validate from PyPI, --strict: no unknown field), the
# Deployment's arguments accepted by the `corral` binary itself, the HAProxy
# configuration accepted by haproxy and shown as it is in README.md, and the
# container image built and run (scripts/image.sh).
#
#   scripts/deploy-check.sh [CORRAL]     default target/debug/corral
#   scripts/deploy-check.sh --install    only install kubernetes-validate
#
# Prints one line: `deploy check: ...: ok` or `... : FAILED`.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/deploy-venv
if ! "$venv/bin/kubernetes-validate" --version 2>/dev/null | grep -qx 1.37.0; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate==1.37.0
fi
[[ "${1:-}" == "--install" ]] && exit 0
corral=${1:-target/debug/corral}

status=ok
manifests=(deploy/kubernetes/*.yaml)
if ! "$venv/bin/kubernetes-validate" -k 1.33 --strict "${manifests[@]}"; then
  status=FAILED
fi

# The container's arguments, as the Deployment gives them, parsed by corral
# (`--help` last: an unknown flag or a bad value fails before it).
mapfile -t args < <("$venv/bin/python" -c '
import yaml
for doc in yaml.safe_load_all(open("deploy/kubernetes/deployment.yaml")):
    for container in doc["spec"]["template"]["spec"]["containers"]:
        print("\n".join(container["args"]))
')
if ! "$corral" "${args[@]}" --help >/dev/null; then
  echo "the Deployment's arguments are not corral's: ${args[*]}"
  status=FAILED
fi

# The pod's termination grace period covers the drain (delay + grace) and
# the last spans' export (the OTLP exporter's 10 s timeout), or the
# kubelet's SIGKILL cuts the drain short.
if ! "$venv/bin/python" -c '
import sys, yaml
for doc in yaml.safe_load_all(open("deploy/kubernetes/deployment.yaml")):
    spec = doc["spec"]["template"]["spec"]
    args = dict(a.split("=", 1) for a in spec["containers"][0]["args"] if "=" in a)
    need = (int(args["--drain-delay-ms"]) + int(args["--drain-grace-ms"])) / 1000 + 10
    grace = spec["terminationGracePeriodSeconds"]
    if grace <= need:
        sys.exit(f"terminationGracePeriodSeconds: {grace} s does not exceed the drain and the last export, {need:.0f} s")
'; then
  status=FAILED
fi

if ! CORRAL_LISTEN=127.0.0.1:1 CORRAL_HAPROXY_STATS=/tmp/haproxy-check.sock \
  CORRAL_REPLICA_1=127.0.0.1:2 CORRAL_REPLICA_2=127.0.0.1:3 CORRAL_REPLICA_3=127.0.0.1:4 \
  haproxy -c -q -f deploy/haproxy/haproxy.cfg; then
  echo "haproxy refuses deploy/haproxy/haproxy.cfg"
  status=FAILED
fi

# README.md shows the configuration the replica test uses: the same lines,
# without the comments.
if ! diff <(sed -n '/^global$/,/CORRAL_REPLICA_3}" check$/p' README.md | sed '/^$/d') \
  <(grep -v '^[[:space:]]*#' deploy/haproxy/haproxy.cfg | sed '/^$/d'); then
  echo "README.md's HAProxy configuration differs from deploy/haproxy/haproxy.cfg"
  status=FAILED
fi

if ! scripts/image.sh "$corral"; then
  status=FAILED
fi
echo "deploy check: ${#manifests[@]} manifests valid for Kubernetes 1.33, the Deployment's arguments parsed, haproxy.cfg accepted, the image built and run: $status"
[[ $status == ok ]]
