#!/usr/bin/env python3
"""The server's CPU time per MCP `tools/call`, corral against the rmcp floor.

A diagnostic for issue 51's MCP row (BENCHMARKS.md, "Instances made ahead"),
not part of .ci/run. It starts, in turn, `corral serve` over the bundled
plugins and the report bench's rmcp floor server (rmcp's stdio server whose
one tool is the bare-wasmtime call of `plugins/encode.wasm`: the bench binary
re-executes itself as that server when CORRAL_BENCH_RMCP_FLOOR names a
component), drives each with back-to-back `tools/call`s of `sha256` over
stdio, and reads the server's user + system CPU time from /proc before and
after. Rounds alternate, so both servers meet the machine in the same moods.

    scripts/mcp-server-cpu.py [--calls N] [--rounds K] [-- EXTRA SERVE ARGS]

Needs the release binaries: `cargo build --release -p corral-cli` and
`cargo bench --no-run -p corral-cli --bench report` (or a report run).
Prints one line per server and round: round trip and server CPU, in µs a
call, then the medians and their ratio.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUEST = (
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
    '"params":{"name":"sha256","arguments":{"text":"abc"}}}\n'
)
WARM_UP = 2000


def server_cpu(pid):
    """User + system CPU seconds of process `pid` (fields 14 and 15 of stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drive(command, env, calls):
    """(round trip, server CPU) in µs a call over `calls` calls, after a
    warm-up of WARM_UP calls."""
    server = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )

    def send(line):
        server.stdin.write(line.encode())
        server.stdin.flush()

    def answer(wanted):
        while True:
            line = server.stdout.readline()
            if not line:
                sys.exit(f"{command[0]} exited")
            if json.loads(line).get("id") == wanted:
                return

    send(json.dumps({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "mcp-server-cpu", "version": "0"}},
    }) + "\n")
    answer(0)
    send('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    for n in range(1, WARM_UP + 1):
        send(REQUEST % n)
        answer(n)
    cpu, start = server_cpu(server.pid), time.monotonic()
    for n in range(WARM_UP + 1, WARM_UP + calls + 1):
        send(REQUEST % n)
        answer(n)
    elapsed, cpu = time.monotonic() - start, server_cpu(server.pid) - cpu
    server.stdin.close()
    server.wait(timeout=30)
    return elapsed / calls * 1e6, cpu / calls * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("serve_args", nargs="*", help="more `corral serve` arguments")
    args = parser.parse_args()
    corral = os.path.join(ROOT, "target/release/corral")
    benches = [
        p for p in glob.glob(os.path.join(ROOT, "target/release/deps/report-*"))
        if os.access(p, os.X_OK) and not p.endswith(".d")
    ]
    if not os.path.exists(corral) or not benches:
        sys.exit("build first: cargo build --release -p corral-cli && "
                 "cargo bench --no-run -p corral-cli --bench report")
    floor = max(benches, key=os.path.getmtime)
    servers = {
        "corral": ([corral, "serve", "--plugins", os.path.join(ROOT, "plugins"),
                    *args.serve_args], {}),
        "floor": ([floor], {"CORRAL_BENCH_RMCP_FLOOR":
                            os.path.join(ROOT, "plugins/encode.wasm")}),
    }
    seen = {name: [] for name in servers}
    for round_ in range(1, args.rounds + 1):
        for name, (command, env) in servers.items():
            trip, cpu = drive(command, env, args.calls)
            seen[name].append((trip, cpu))
            print(f"round {round_} {name:6}: round trip {trip:6.1f} µs, "
                  f"server CPU {cpu:6.1f} µs a call", flush=True)
    median = {name: (statistics.median(t for t, _ in v), statistics.median(c for _, c in v))
              for name, v in seen.items()}
    for name, (trip, cpu) in median.items():
        print(f"median {name:6}: round trip {trip:6.1f} µs, server CPU {cpu:6.1f} µs a call")
    print(f"corral ÷ floor: round trip {median['corral'][0] / median['floor'][0]:.2f}×, "
          f"server CPU {median['corral'][1] / median['floor'][1]:.2f}×")


if __name__ == "__main__":
    main()
