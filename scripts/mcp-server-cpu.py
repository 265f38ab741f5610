#!/usr/bin/env python3
"""The server's cost per MCP `tools/call`, corral against the rmcp floor.

A diagnostic for issue 51's MCP row (BENCHMARKS.md, "Instances made ahead"),
not part of .ci/run. It starts, in turn, `corral serve` and the report
bench's rmcp floor server (rmcp's stdio server whose one tool is the
bare-wasmtime call of `plugins/encode.wasm`: the bench binary re-executes
itself as that server when CORRAL_BENCH_RMCP_FLOOR names a component), and
drives each with back-to-back `tools/call`s of `sha256` over stdio.

    scripts/mcp-server-cpu.py [--calls N] [--rounds K] [-- EXTRA SERVE ARGS]
    scripts/mcp-server-cpu.py --callgrind [--calls N] [-- EXTRA SERVE ARGS]

By default (time): rounds alternate, so both servers meet the machine in the
same moods; each round reads the server's user and system CPU time from
/proc before and after its calls. Prints one line per server and round
(round trip, user and system CPU, in µs a call), then the medians and their
ratios.

With --callgrind (instructions and cache misses, which do not move with the
machine): each server runs under `valgrind --tool=callgrind --cache-sim=yes`
twice, for N/3 and N calls; a call's count is the difference of the two
runs divided by the difference of their calls, so start-up, loading and the
first calls cancel out. Then the same for in-process calls: `Host::call`
against the bare-wasmtime floor call, the bench re-executed as a loop of
calls (CORRAL_BENCH_CALL_LOOP). Both servers get a pool of one call at a time
(corral: `--max-instances 1 --prepared-instances 0`, over a directory with
only encode.wasm; the floor: CORRAL_BENCH_RMCP_FLOOR_SLOTS=1), which valgrind
can reserve. (Timed, both have the default pool.) Prints, per call: instructions
(Ir), first-level instruction and data cache misses (I1mr, D1mr + D1mw) and
second-level misses (valgrind's last level, set to this CPU's second-level
cache from sysfs: a call that does not fit it pays a trip to the third
level for each), and the ratios. Then where the difference goes: each
function's own counts (callgrind_annotate), summed by group (the guest's
machine code, wasmtime, the allocator, memset, memcpy, corral's own code,
tracing, serde and jsonschema, ...), with KCachegrind's cycle estimate
(Ir + 10 × first-level misses + 100 × second-level misses) beside the
instructions, as the time a miss costs is what the instruction count leaves
out; and corral's own functions with their callees (inclusive), for the
per-call work each one does. valgrind reports a CPU without AVX-512, so the
guest's machine code is compiled for that CPU once (a run of one call
first); a few minutes in all.

Needs the release binaries: `cargo build --release -p corral-cli` and
`cargo bench --no-run -p corral-cli --bench report` (or a report run), in
target/ or in $CARGO_TARGET_DIR when that is set.
"""

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUEST = (
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
    '"params":{"name":"sha256","arguments":{"text":"abc"}}}\n'
)
LIST = '{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n'
WARM_UP = 2000
EVENTS = ("Ir", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")


def second_level_cache():
    """valgrind's --LL option for this CPU's second-level cache (sysfs), or
    None where sysfs does not say."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    for index in sorted(glob.glob(os.path.join(base, "index*"))):
        def read(name, index=index):
            with open(os.path.join(index, name)) as f:
                return f.read().strip()
        try:
            if read("level") != "2" or read("type") != "Unified":
                continue
            size = read("size")
            size = int(size[:-1]) * 1024 if size.endswith("K") else int(size)
            return f"--LL={size},{read('ways_of_associativity')},{read('coherency_line_size')}"
        except (OSError, ValueError):
            return None
    return None


LEVEL2 = second_level_cache()
LAST = "L2" if LEVEL2 else "LL"


def valgrind(out):
    """The command prefix that counts a program into callgrind file `out`,
    its last-level cache modelled on this CPU's second level (valgrind's
    model has two levels; by default the second is the last level the CPU
    reports, 256 MiB under this VM, which a call's working set always fits)."""
    command = ["valgrind", "--tool=callgrind", "--cache-sim=yes"]
    return command + ([LEVEL2] if LEVEL2 else []) + [f"--callgrind-out-file={out}"]


def per_call(few, many, calls):
    """A call's counts: the difference of two runs' counts ÷ that of their calls."""
    return {e: (many[e] - few[e]) / calls for e in EVENTS}


def server_cpu(pid):
    """(user, system) CPU seconds of process `pid` (fields 14 and 15 of stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


class Session:
    """A started server and the client's ends of its stdio."""

    def __init__(self, command, env):
        self.server = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        self.next_id = 0
        self.request(json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "mcp-server-cpu", "version": "0"}},
        }) + "\n", 0)
        self.send('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        # corral serve answers while its plugins load: wait for the tool
        # (at once natively; seconds under valgrind).
        for _ in range(600):
            if "sha256" in self.request_template(LIST):
                break
            time.sleep(0.5)
        else:
            sys.exit(f"{command[0]}: no sha256 tool after 5 minutes")

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def send(self, line):
        self.server.stdin.write(line.encode())
        self.server.stdin.flush()

    def request_template(self, template):
        """`request` of `template` with a new id in its `%d`."""
        wanted = self.new_id()
        return self.request(template % wanted, wanted)

    def request(self, line, wanted):
        """Sends `line` and returns the response with id `wanted`, as text."""
        self.send(line)
        while True:
            answer = self.server.stdout.readline()
            if not answer:
                sys.exit("the server exited")
            if json.loads(answer).get("id") == wanted:
                return answer.decode()

    def calls(self, n):
        for _ in range(n):
            answer = json.loads(self.request_template(REQUEST))
            if answer.get("result", {}).get("isError") is not False:
                sys.exit(f"the call failed: {answer}")

    def close(self):
        self.server.stdin.close()
        self.server.wait(timeout=600)


def drive(command, env, calls):
    """(round trip, user CPU, system CPU) in µs a call over `calls` calls,
    after a warm-up of WARM_UP calls."""
    session = Session(command, env)
    session.calls(WARM_UP)
    (user, system), start = server_cpu(session.server.pid), time.monotonic()
    session.calls(calls)
    elapsed = time.monotonic() - start
    user2, system2 = server_cpu(session.server.pid)
    session.close()
    return tuple(x / calls * 1e6 for x in (elapsed, user2 - user, system2 - system))


def callgrind_totals(command, env, calls, out):
    """The `summary:` counts of a callgrind run of `calls` calls."""
    session = Session(valgrind(out) + command, env)
    session.calls(calls)
    session.close()
    return summary(out)


def binaries():
    # Cargo's own variable, so a build in another target directory (an
    # experiment with other flags) is measured without copying it here.
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    corral = os.path.join(target, "release/corral")
    benches = [
        p for p in glob.glob(os.path.join(target, "release/deps/report-*"))
        if os.access(p, os.X_OK) and not p.endswith(".d")
    ]
    if not os.path.exists(corral) or not benches:
        sys.exit("build first: cargo build --release -p corral-cli && "
                 "cargo bench --no-run -p corral-cli --bench report")
    return corral, max(benches, key=os.path.getmtime)


def timed(args):
    corral, floor = binaries()
    servers = {
        "corral": ([corral, "serve", "--plugins", os.path.join(ROOT, "plugins"),
                    *args.serve_args], {}),
        "floor": ([floor], {"CORRAL_BENCH_RMCP_FLOOR":
                            os.path.join(ROOT, "plugins/encode.wasm")}),
    }
    seen = {name: [] for name in servers}
    for round_ in range(1, args.rounds + 1):
        for name, (command, env) in servers.items():
            trip, user, system = drive(command, env, args.calls)
            seen[name].append((trip, user, system))
            print(f"round {round_} {name:6}: round trip {trip:6.1f} µs, server CPU "
                  f"{user + system:6.1f} µs a call (user {user:6.1f}, system {system:5.1f})",
                  flush=True)
    median = {name: [statistics.median(r[i] for r in v) for i in range(3)]
              for name, v in seen.items()}
    for name, (trip, user, system) in median.items():
        print(f"median {name:6}: round trip {trip:6.1f} µs, server CPU "
              f"{user + system:6.1f} µs a call (user {user:6.1f}, system {system:5.1f})")
    c, f = median["corral"], median["floor"]
    print(f"corral ÷ floor: round trip {c[0] / f[0]:.2f}×, server CPU "
          f"{(c[1] + c[2]) / (f[1] + f[2]):.2f}× (user {c[1] / f[1]:.2f}×, "
          f"system {c[2] / f[2]:.2f}×)")


def callgrind(args):
    if shutil.which("valgrind") is None:
        sys.exit("--callgrind needs valgrind (Debian's valgrind package)")
    corral, floor = binaries()
    scratch = tempfile.mkdtemp(prefix="mcp-callgrind-")
    plugins = os.path.join(scratch, "plugins")
    os.mkdir(plugins)
    shutil.copy(os.path.join(ROOT, "plugins/encode.wasm"), plugins)
    servers = {
        "corral": ([corral, "serve", "--plugins", plugins, "--max-instances", "1",
                    "--prepared-instances", "0", *args.serve_args], {}),
        "floor": ([floor], {"CORRAL_BENCH_RMCP_FLOOR": os.path.join(plugins, "encode.wasm"),
                            "CORRAL_BENCH_RMCP_FLOOR_SLOTS": "1"}),
    }
    few, many = max(1, args.calls // 3), args.calls
    counts, files = {}, {}
    for name, (command, env) in servers.items():
        out = os.path.join(scratch, f"{name}.%d.callgrind")
        callgrind_totals(command, env, 1, out % 0)  # compiles for valgrind's CPU
        a = callgrind_totals(command, env, few, out % few)
        b = callgrind_totals(command, env, many, out % many)
        counts[name] = per_call(a, b, many - few)
        files[name] = (out % few, out % many, many - few)
        show(name, counts[name])
    report(counts, "corral", "floor")
    account(files["corral"], files["floor"])
    # In process: `Host::call` against the floor call (the bench's
    # CORRAL_BENCH_CALL_LOOP mode), the same difference method.
    wasm = os.path.join(plugins, "encode.wasm")
    for kind in ("host", "floor"):
        name = "Host::call" if kind == "host" else "Floor"
        out = os.path.join(scratch, f"{kind}-loop.%d.callgrind")
        runs = {
            n: callgrind_loop(floor, {"CORRAL_BENCH_CALL_LOOP": f"{kind},{n},{wasm}"},
                              out % n)
            for n in (1, few, many)
        }
        counts[name] = per_call(runs[few], runs[many], many - few)
        files[name] = (out % few, out % many, many - few)
        show(name, counts[name])
    report(counts, "Host::call", "Floor")
    account(files["Host::call"], files["Floor"])
    print(f"callgrind files: {scratch}")


def show(name, p):
    print(f"{name:10}: {p['Ir']:9.0f} Ir, {p['I1mr']:6.0f} I1mr, "
          f"{p['D1mr'] + p['D1mw']:6.0f} D1 misses, "
          f"{p['ILmr'] + p['DLmr'] + p['DLmw']:5.0f} {LAST} misses a call", flush=True)


def report(counts, ours, floor):
    c, f = counts[ours], counts[floor]
    last = [x["ILmr"] + x["DLmr"] + x["DLmw"] for x in (c, f)]
    print(f"{ours} ÷ {floor}: Ir {c['Ir'] / f['Ir']:.2f}×, I1mr {c['I1mr'] / f['I1mr']:.2f}×, "
          f"D1 misses {(c['D1mr'] + c['D1mw']) / (f['D1mr'] + f['D1mw']):.2f}×, "
          f"{LAST} misses {last[0]:.0f} against {last[1]:.0f}, "
          f"estimated cycles {estimate(c) / estimate(f):.2f}×")


def callgrind_loop(binary, env, out):
    """The `summary:` counts of a callgrind run of the bench's call loop."""
    subprocess.run(
        valgrind(out) + [binary],
        env={**os.environ, **env}, check=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    return summary(out)


# A function's group, by the first pattern its name contains (JIT code has
# no name: an address).
GROUPS = (
    ("memset", "memset"), ("memcpy, memcmp", "memmove"), ("memcpy, memcmp", "memcpy"),
    ("memcpy, memcmp", "memcmp"), ("allocator", "malloc.c"), ("allocator", "__rust_alloc"),
    ("allocator", "__rdl_"), ("allocator", "__rust_dealloc"), ("allocator", "__rust_realloc"),
    ("wasmtime", "wasmtime"), ("wasmtime", "cranelift"),
    # The typed bindings bindgen! writes, the same in both (the floor's
    # are corral_test_support::floor's).
    ("bindgen glue", "bindings::v"), ("bindgen glue", "floor::v"),
    ("corral", "corral"), ("tracing", "tracing"), ("serde, jsonschema", "serde"),
    ("serde, jsonschema", "jsonschema"), ("serde, jsonschema", "zmij"),
    ("serde, jsonschema", "itoa"), ("rmcp", "rmcp"), ("tower, tokio", "tower"),
    ("tower, tokio", "tokio"), ("Rust collections", "hashbrown"),
    ("Rust collections", "alloc::collections"), ("Rust std", "alloc::"),
    ("Rust std", "core::"), ("Rust std", "std::"), ("bytes", "bytes"),
)


def functions(path, inclusive):
    """{function: {event: count}} of callgrind file `path`, self or inclusive
    counts (callgrind_annotate's table, functions of at least 100 Ir)."""
    shown = ("Ir", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
    text = subprocess.run(
        ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
         "--threshold=100", "--show=" + ",".join(shown), path],
        check=True, capture_output=True, text=True,
    ).stdout
    column = r"([\d,]+|\.)(?:\s+\([^)]*\))?\s+"
    row = re.compile(r"\s*" + column * len(shown) + r"(\S.*)$")
    found = {}
    for line in text.splitlines():
        m = row.match(line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r"\s*\[[^\]]*\]$", "", m.group(len(shown) + 1))
        name = name.removeprefix("???:")
        # The guest's machine code has no names, and its addresses may
        # differ from run to run: one entry for all of it.
        name = "0x… (JIT code)" if name.startswith("0x") else name
        counts = [0 if x == "." else int(x.replace(",", "")) for x in m.groups()[:-1]]
        sums = found.setdefault(name, dict.fromkeys(shown, 0))
        for event, count in zip(shown, counts):
            sums[event] += count
    return found


def estimate(c):
    """KCachegrind's cycle estimate of counts `c` (no branch simulation)."""
    return (c["Ir"] + 10 * (c["I1mr"] + c["D1mr"] + c["D1mw"])
            + 100 * (c["ILmr"] + c["DLmr"] + c["DLmw"]))


def group_of(name):
    if name.startswith("0x"):
        return "guest (JIT code)"
    return next((g for g, pattern in GROUPS if pattern in name), "other")


def per_call_functions(runs, inclusive):
    """{function: per-call counts} from `runs` = (few file, many file, calls)."""
    few, many, calls = runs
    a, b = functions(few, inclusive), functions(many, inclusive)
    zero = dict.fromkeys(EVENTS, 0)
    return {k: {e: (v[e] - a.get(k, zero)[e]) / calls for e in EVENTS} for k, v in b.items()}


def account(ours, floor):
    """Where a call's difference goes: groups of functions' own counts, then
    corral's own functions with their callees."""
    sums = {}
    for side, runs in (("ours", ours), ("floor", floor)):
        for name, c in per_call_functions(runs, inclusive=False).items():
            g = sums.setdefault(group_of(name), {"ours": dict.fromkeys(EVENTS, 0),
                                                 "floor": dict.fromkeys(EVENTS, 0)})
            for e in EVENTS:
                g[side][e] += c[e]
    print(f"  {'group':18} {'Ir':>8} {'floor':>8} {'diff':>7} {'est. cycles':>11} "
          f"{'floor':>8} {'diff':>7}")
    total = [0, 0]
    for name, g in sorted(sums.items(),
                          key=lambda kv: estimate(kv[1]["floor"]) - estimate(kv[1]["ours"])):
        o, f = g["ours"], g["floor"]
        total[0] += o["Ir"] - f["Ir"]
        total[1] += estimate(o) - estimate(f)
        print(f"  {name:18} {o['Ir']:8.0f} {f['Ir']:8.0f} {o['Ir'] - f['Ir']:+7.0f} "
              f"{estimate(o):11.0f} {estimate(f):8.0f} {estimate(o) - estimate(f):+7.0f}")
    whole = {side: sum(estimate(g[side]) for g in sums.values()) for side in ("ours", "floor")}
    # A call's own count is never below zero: a negative group is work one
    # of the two runs did once and the other did not (seen: a plugin file
    # hashed in one and its digest read from the memo in the other), which
    # the difference of the runs then subtracts from every call.
    negative = sorted({f"{name} ({side})" for name, g in sums.items()
                       for side in ("ours", "floor") if g[side]["Ir"] < -100})
    if negative:
        print(f"  WARNING: negative counts a call in {', '.join(negative)}: a one-off cost "
              "differed between the two runs; these figures are off, run again")
    print(f"  {'sum':18} {'':8} {'':8} {total[0]:+7.0f} {whole['ours']:11.0f} "
          f"{whole['floor']:8.0f} {total[1]:+7.0f} ({whole['ours'] / whole['floor']:.2f}×)")
    print("  corral's own functions with their callees (inclusive, ≥ 200 Ir a call; "
          "a caller's count includes its callees'):")
    inclusive = per_call_functions(ours, inclusive=True)
    for name, c in sorted(inclusive.items(), key=lambda kv: -kv[1]["Ir"]):
        own = name.startswith(("corral", "<corral")) and group_of(name) == "corral"
        if own and c["Ir"] >= 200:
            print(f"  {c['Ir']:8.0f} Ir {estimate(c):8.0f} est. cycles  {name[:110]}")


def summary(out):
    """The `summary:` line of callgrind file `out`, by event name."""
    events = counts = None
    with open(out) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                counts = [int(x) for x in line.split()[1:]]
    return dict(zip(events, counts))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=None,
                        help="calls a round (20 000), or the larger callgrind run (600)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--callgrind", action="store_true",
                        help="count instructions and cache misses under valgrind")
    parser.add_argument("serve_args", nargs="*", help="more `corral serve` arguments")
    args = parser.parse_args()
    if args.callgrind:
        args.calls = args.calls or 600
        callgrind(args)
    else:
        args.calls = args.calls or 20000
        timed(args)


if __name__ == "__main__":
    main()
