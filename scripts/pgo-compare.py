#!/usr/bin/env python3
"""A profile-guided `corral` against the plain release build, on requests
the PGO training (scripts/pgo.sh) does not make.

    scripts/pgo-compare.py [--calls N] [--rounds K]

pgo.sh trains on the ten tools scripts/demo.sh calls, each with its good
arguments. A PGO build lays out what that run did not reach as cold code,
so this checks the paths it did not see: a tool of the same plugins that
the training never calls, arguments that fail validation, an unknown tool,
a tool that needs an approval no one can give, and `tools/list`; `sha256`,
which the training calls, is the reference. Rounds alternate the two
binaries (target/release/corral and target/pgo/release/corral); a round
starts one `corral serve` over plugins/ and sends N back-to-back requests
of each kind over stdio. Prints each kind's median round trip per round
and the ratio of the two binaries' medians, as a Markdown table
(BENCHMARKS.md, "Profile-guided builds"). Each kind's first answer is
checked to be what that kind should get. Not part of .ci/run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (kind, method, params, what its first answer must show)
KINDS = [
    ("`sha256` (trained)", "tools/call",
     {"name": "sha256", "arguments": {"text": "abc"}}, "ok"),
    ("`base64_encode` (untrained tool of a trained plugin)", "tools/call",
     {"name": "base64_encode", "arguments": {"text": "abc"}}, "ok"),
    ("arguments that fail validation (`regex_extract`)", "tools/call",
     {"name": "regex_extract", "arguments": {"text": "a1 b2", "pattern": 42}}, "error"),
    ("an unknown tool", "tools/call",
     {"name": "no_such_tool", "arguments": {}}, "error"),
    ("an approval no one can give (`notes_delete`)", "tools/call",
     {"name": "notes_delete", "arguments": {"name": "taxes"}}, "error"),
    ("`tools/list`", "tools/list", {}, "list"),
]


class Server:
    """`corral serve` over stdio, one request at a time."""

    def __init__(self, binary):
        self.proc = subprocess.Popen(
            [binary, "serve", "--plugins", os.path.join(ROOT, "plugins")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "pgo-compare", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def rpc(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit(f"pgo-compare: the server closed its output during {method}")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def shows(answer, expected):
    """Whether `answer` is what its kind should get."""
    result = answer.get("result", {})
    if expected == "list":
        return len(result.get("tools", [])) > 10
    failed = "error" in answer or result.get("isError") is True
    return failed == (expected == "error")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    lto = os.path.join(ROOT, "target/release/corral")
    pgo = os.path.join(ROOT, "target/pgo/release/corral")
    for binary, how in ((lto, "cargo build --release -p corral-cli"), (pgo, "scripts/pgo.sh")):
        if not os.path.exists(binary):
            sys.exit(f"pgo-compare: {binary} is missing: run {how}")
    times = {kind[0]: {lto: [], pgo: []} for kind in KINDS}
    for round_ in range(args.rounds):
        for binary in (lto, pgo) if round_ % 2 == 0 else (pgo, lto):
            server = Server(binary)
            for kind, method, params, expected in KINDS:
                first = server.rpc(method, params)
                if not shows(first, expected):
                    sys.exit(f"pgo-compare: {kind} answered {json.dumps(first)[:300]}")
                took = []
                for _ in range(args.calls):
                    start = time.perf_counter_ns()
                    server.rpc(method, params)
                    took.append(time.perf_counter_ns() - start)
                times[kind][binary].append(statistics.median(took) / 1000)
            server.close()
    print(f"| request | plain release, median round trip a round (µs) | PGO | PGO ÷ plain |")
    print("|---|---|---|---|")
    for kind, *_ in KINDS:
        a, b = times[kind][lto], times[kind][pgo]
        row = lambda xs: " / ".join(f"{x:.1f}" for x in xs)
        print(f"| {kind} | {row(a)} | {row(b)} | {statistics.median(b) / statistics.median(a):.2f}× |")


if __name__ == "__main__":
    main()
