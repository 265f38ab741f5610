#!/usr/bin/env python3
"""First start of `corral serve` over the bundled plugins, with an empty
component cache: how long until the first `tools/list` answer, and until
every plugin is served, against the same run's baselines (`corral list` with
an empty cache, which compiles everything before answering, and `serve` with
a warm cache). A script, not a test: its figures go into BENCHMARKS.md.

    cargo build --release -p corral-cli && scripts/build-guests.sh
    scripts/first-start.py [--runs N]

Speaks raw JSON-RPC over stdio (one message per line), so no client
library's cost is in the figures.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORRAL = os.path.join(ROOT, "target", "release", "corral")
PLUGINS = os.path.join(ROOT, "plugins")


class Server:
    """`corral serve` on stdio, with a reader of its messages."""

    def __init__(self, cache):
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [CORRAL, "--plugins", PLUGINS, "--cache-dir", cache, "serve", "--no-watch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.next_id = 0
        self.notifications = []

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params=None):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message
            self.notifications.append(message)

    def wait_for(self, method):
        while not any(n.get("method") == method for n in self.notifications):
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            message = json.loads(line)
            self.notifications.append(message)
        self.notifications = [n for n in self.notifications if n.get("method") != method]

    def since_start(self):
        return time.monotonic() - self.started

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def tool_count(server):
    return len(server.request("tools/list")["result"]["tools"])


def serve_first_start(cache, full):
    """Seconds to the first tools/list answer, tools in it, seconds until
    every tool is listed."""
    server = Server(cache)
    server.request(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "first-start", "version": "1"}},
    )
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    first_tools = tool_count(server)
    first = server.since_start()
    tools = first_tools
    while tools < full:
        server.wait_for("notifications/tools/list_changed")
        tools = tool_count(server)
    everything = server.since_start()
    server.close()
    return first, first_tools, everything


def list_cold(cache):
    started = time.monotonic()
    out = subprocess.run(
        [CORRAL, "--plugins", PLUGINS, "--cache-dir", cache, "list", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return time.monotonic() - started, len(json.loads(out.stdout)["tools"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = {"list": [], "first": [], "all": [], "warm": []}
    firsts = []
    for _ in range(args.runs):
        cold = tempfile.mkdtemp(prefix="corral-cold-")
        took, full = list_cold(cold)
        rows["list"].append(took)
        shutil.rmtree(cold)
        cold = tempfile.mkdtemp(prefix="corral-cold-")
        first, first_tools, everything = serve_first_start(cold, full)
        rows["first"].append(first)
        rows["all"].append(everything)
        firsts.append(first_tools)
        # The same cache, now warm: every plugin answers in the first list.
        warm, warm_tools, _ = serve_first_start(cold, full)
        assert warm_tools == full, f"a warm start listed {warm_tools} of {full} tools"
        rows["warm"].append(warm)
        shutil.rmtree(cold)
    median = {k: statistics.median(v) for k, v in rows.items()}
    base = median["list"]
    components = [f for f in os.listdir(PLUGINS) if f.endswith(".wasm")]
    print(f"bundled plugins: {len(components)} components, {full} tools; {args.runs} runs, medians")
    print()
    print("| what | seconds | ratio to `corral list`, empty cache |")
    print("|---|---|---|")
    print(f"| `corral list`, empty cache (compiles everything first) | {base:.2f} | 1.00 |")
    print(
        f"| `serve`, empty cache: first `tools/list` answer ({min(firsts)}-{max(firsts)} tools, the built-ins) "
        f"| {median['first']:.3f} | {median['first'] / base:.3f} |"
    )
    print(f"| `serve`, empty cache: every plugin served | {median['all']:.2f} | {median['all'] / base:.2f} |")
    print(f"| `serve`, warm cache: first `tools/list` (all tools) | {median['warm']:.3f} | {median['warm'] / base:.3f} |")


if __name__ == "__main__":
    main()
