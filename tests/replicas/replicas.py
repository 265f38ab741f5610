"""Three `corral serve --http` replicas behind HAProxy (issue 30), one
SIGTERMed and one SIGKILLed while stateless MCP 2026-07-28 calls run.

    python replicas.py CORRAL PLUGINS CACHE HAPROXY_CFG --calls N [--concurrency C]

PLUGINS holds text.wasm (`word_count`, idempotent) and notes.wasm
(`notes_write`, not retried: every call writes a note of its own). The
replicas share the plugin directory (and so the notes directory its policy
grants), the standing approvals file and the request-state key; each has
its own audit log, which records every `notes_write` execution with the
replica's id.

The load: N calls, C in flight, 3 in 4 `word_count` (drawn from a seed,
printed; `--seed` repeats a run; retried on a
connection error, the client's or the proxy's: HAProxy answers 502 or 504
only when its connection to a replica broke, corral never does; and on a
503), 1 in 4 `notes_write` (never retried). Before the load, session-based
clients (the official Python client in its legacy mode, with an
`Mcp-Session-Id`) call through the same proxy, whose stick table keeps each
session on its replica. When a third of the calls has been issued the first
replica gets SIGTERM (it must drain and exit 0); at two thirds the second
gets SIGKILL.

Checks: no call failed after retries but the `notes_write` calls in flight on
the SIGKILLed replica; no retry before the SIGKILL (the SIGTERMed replica
needs none); every `notes_write` the client saw succeed wrote its note and
was executed exactly once (the audit logs); the SIGTERMed replica exited 0.
Before the load, the MCP tasks phase (tasks_phase.py) and the tenant
quotas phase (quotas_phase.py: a calls quota held exactly, a fuel quota
within its documented over-admission, Redis stopped and started again under
load, with the fallback and the recovery): the replicas share a
real Redis (`--store`); a task is started through the proxy, polled and
cancelled through other replicas, and a task whose replica is SIGKILLed
ends `failed` after the lease (the replica is started again). Then the last
replica drains while a session's gated call waits on its
client's approval: the answer must reach it through the proxy (which has
taken it out of rotation), the call succeed and the replica exit 0.
Prints the figures and one line: `replicas: ... : ok` or `... : FAILED`.
"""

import argparse
import asyncio
import csv
import io
import json
import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

import anyio
import httpx2 as httpx
import quotas_phase
import tasks_phase
from mcp import Client

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "corral-replica-test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
DRAINING = "shutting down"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, condition, timeout=120):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def http_status(url):
    try:
        with httpx.Client(timeout=2) as client:
            return client.get(url).status_code
    except httpx.TransportError:
        return None


class Replica:
    def __init__(self, index, corral, plugins, cache, work, store):
        self.index = index
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.log = open(work / f"replica-{index}.log", "w")
        self.command = [
            corral, "--plugins", str(plugins), "--cache-dir", str(cache),
            "serve", "--no-watch", "--http", self.addr,
            "--state-key-file", str(work / "state.key"),
            "--standing-approvals", str(work / "shared" / "approvals.json"),
            "--audit-log", str(work / "audit" / "audit-{replica}.jsonl"),
            "--replica-id", f"r{index}",
            "--drain-delay-ms", "1000", "--drain-grace-ms", "30000",
            # MCP tasks in the Redis every replica shares; a dead replica's
            # task fails 1.5 s after its last lease renewal.
            "--store", store, "--task-lease-ms", "1500",
            # Tenant quotas, their buckets in the same Redis: the host sets
            # none, two plugins' policies do (quotas_phase.py).
            "--quotas", str(work / "quotas.toml")]
        self.start()

    def start(self):
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=self.log)

    def ready(self):
        return http_status(f"http://{self.addr}/readyz") == 200


def haproxy_stats(sock):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    text = data.decode().lstrip("# ")
    return list(csv.DictReader(io.StringIO(text)))


def parse_message(body):
    for line in body.splitlines():
        if line.startswith("data:") and line[5:].strip().startswith("{"):
            return json.loads(line[5:])
    return json.loads(body)


class Tally:
    def __init__(self):
        self.sent = self.succeeded = self.retried_calls = 0
        self.retries = []  # (time, call, cause)
        self.failed = []  # (call, tool, cause)
        self.notes_ok = set()
        self.notes_failed = set()


async def one_call(client, url, i, tally, idempotent):
    if idempotent:
        tool, arguments = "word_count", {"text": f"call {i} " + "word " * (i % 7)}
        want = 2 + i % 7
    else:
        tool, arguments = "notes_write", {"name": f"n{i}", "text": f"note of call {i}"}
    body = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": META}}
    headers = {"Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28",
               "Mcp-Method": "tools/call", "Mcp-Name": tool}
    tally.sent += 1
    retried = False
    for attempt in range(10):
        cause = None
        try:
            response = await client.post(url, json=body, headers=headers)
        except httpx.TransportError as err:
            cause = f"connection error ({type(err).__name__})"
        else:
            if response.status_code == 200:
                message = parse_message(response.text)
                result = message.get("result", {})
                content = result.get("structuredContent") or {}
                ok = not result.get("isError") and (
                    content.get("words") == want if idempotent else content.get("name") == f"n{i}")
                if ok:
                    tally.succeeded += 1
                    tally.retried_calls += retried
                    if not idempotent:
                        tally.notes_ok.add(f"n{i}")
                    return
                cause = f"wrong result: {response.text[:300]}"
            elif response.status_code == 503:
                who = "corral draining" if DRAINING in response.text else "HAProxy, no replica"
                cause = f"503 ({who})"
            elif response.status_code in (502, 504):
                cause = f"{response.status_code} (HAProxy: its connection to a replica broke)"
            else:
                cause = f"HTTP {response.status_code}: {response.text[:300]}"
        retryable = idempotent and not cause.startswith(("wrong", "HTTP"))
        if not retryable:
            break
        tally.retries.append((time.monotonic(), i, cause))
        retried = True
        await asyncio.sleep(0.05 * (attempt + 1))
    tally.retried_calls += retried
    tally.failed.append((i, tool, cause))
    if not idempotent:
        tally.notes_failed.add(f"n{i}")


async def load(url, calls, concurrency, on_progress, tally, seed):
    """`calls` calls, `concurrency` in flight: call i is issued when a slot
    frees, after `on_progress(i)`."""
    slots = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        # Which calls write a note: one in four, drawn from `seed`. Not a
        # pattern of the call's index (every fourth call): round robin over
        # two replicas would send them all to one, and the SIGKILLed replica
        # would never hold one in flight.
        draw = random.Random(seed)
        writes = [draw.random() < 0.25 for _ in range(calls)]

        async def run(i):
            try:
                await one_call(client, url, i, tally, not writes[i])
            finally:
                slots.release()
        tasks = []
        for i in range(calls):
            await slots.acquire()
            on_progress(i)
            tasks.append(asyncio.create_task(run(i)))
        await asyncio.gather(*tasks)


async def sessions(url, clients, calls):
    """Session-based clients through the proxy: each must reach its own
    replica for every request (stick table on Mcp-Session-Id)."""
    async def one(c):
        async with Client(url, mode="legacy") as client:
            for k in range(calls):
                result = await client.call_tool("word_count", {"text": f"session {c} call {k}"})
                assert not result.is_error, result
    async with anyio.create_task_group() as group:
        for c in range(clients):
            group.start_soon(one, c)


async def answer_while_draining(url, replica, stats_sock):
    """A legacy session's gated call (`notes_delete`) waits on its client's
    approval when the session's replica gets SIGTERM. The client answers
    once HAProxy has taken the replica out of rotation and the replica
    refuses new requests: the answer must still reach it (HAProxy's
    `option persist`, corral's drain letting a session's answers in), and
    the call must succeed. Returns (the call's result, the question asked)."""
    from mcp_types import ElicitResult

    asked = []

    async def user(context, params):
        asked.append(params)
        replica.process.send_signal(signal.SIGTERM)
        name = f"r{replica.index}"
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient(timeout=5) as direct:
            while True:
                down = any(row["svname"] == name and row["status"].startswith("DOWN")
                           for row in haproxy_stats(stats_sock) if row["pxname"] == "corral")
                probe = await direct.post(
                    f"http://{replica.addr}/mcp",
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={"Accept": "application/json, text/event-stream"})
                if down and probe.status_code == 503 and DRAINING in probe.text:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"{name} never got out of rotation and refusing")
                await anyio.sleep(0.05)
        return ElicitResult(action="accept", content={"decision": "allow"})

    async with Client(url, mode="legacy", elicitation_callback=user) as client:
        written = await client.call_tool("notes_write", {"name": "drain-probe", "text": "x"})
        assert not written.is_error, written
        result = await client.call_tool("notes_delete", {"name": "drain-probe"})
    return result, asked


def audit_executions(audit_dir):
    """notes_write executions per note name, from every replica's audit log."""
    counts, replicas = {}, {}
    for path in sorted(audit_dir.glob("audit-*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a record torn by the SIGKILL
            if record.get("event") == "call" and record.get("tool") == "notes_write" \
                    and record.get("outcome") == "ok":
                name = record["arguments"]["name"]
                counts[name] = counts.get(name, 0) + 1
                replicas[record.get("replica")] = replicas.get(record.get("replica"), 0) + 1
    return counts, replicas


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("corral")
    parser.add_argument("plugins")
    parser.add_argument("cache")
    parser.add_argument("haproxy_cfg")
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--session-clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=None,
                        help="which calls write a note (default: a new draw, printed)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)

    work = pathlib.Path(tempfile.mkdtemp(prefix="corral-replicas-"))
    (work / "shared").mkdir()
    (work / "audit").mkdir()
    (work / "state.key").write_text(os.urandom(32).hex())
    (work / "quotas.toml").write_text("version = 1\n")
    plugins = pathlib.Path(args.plugins)
    notes = plugins / "notes-data"
    redis = tasks_phase.Redis(free_port(), open(work / "redis.log", "w"))
    replicas = [Replica(i, args.corral, plugins, args.cache, work, redis.url) for i in (1, 2, 3)]
    stats_sock = work / "haproxy.sock"
    listen = f"127.0.0.1:{free_port()}"
    env = dict(os.environ, CORRAL_LISTEN=listen, CORRAL_HAPROXY_STATS=str(stats_sock),
               **{f"CORRAL_REPLICA_{r.index}": r.addr for r in replicas})
    haproxy_log = open(work / "haproxy.log", "w")
    haproxy = subprocess.Popen(["haproxy", "-db", "-f", args.haproxy_cfg],
                               env=env, stdout=haproxy_log, stderr=subprocess.STDOUT)
    status = "ok"
    try:
        for r in replicas:
            wait_until(f"replica {r.index} ready", r.ready)
        def all_up():
            wait_until("HAProxy sees every replica UP", lambda: stats_sock.exists() and all(
                row["status"] == "UP" for row in haproxy_stats(stats_sock)
                if row["pxname"] == "corral" and row["svname"] in ("r1", "r2", "r3")))

        def restart(replica):
            replica.start()
            wait_until(f"replica {replica.index} ready again", replica.ready)

        all_up()
        url = f"http://{listen}/mcp"
        task_problems = tasks_phase.run(f"http://{listen}", replicas, restart, all_up)
        redis_port = int(redis.url.rsplit(":", 1)[1])
        def redis_stop():
            redis.stop()
        def redis_start():
            nonlocal redis
            redis = tasks_phase.Redis(redis_port, open(work / "redis.log", "a"))
        quota_problems = quotas_phase.run(f"http://{listen}", replicas, redis_stop, redis_start)

        started = time.monotonic()
        anyio.run(sessions, url, args.session_clients, 10)
        print(f"session affinity: {args.session_clients} legacy clients x 10 calls through "
              f"HAProxy, all answered by their own replica "
              f"({time.monotonic() - started:.1f} s)")

        tally = Tally()
        kill_times = {}
        def on_progress(i):
            if i == args.calls // 3 and "TERM" not in kill_times:
                kill_times["TERM"] = time.monotonic()
                replicas[0].process.send_signal(signal.SIGTERM)
            if i == 2 * args.calls // 3 and "KILL" not in kill_times:
                kill_times["KILL"] = time.monotonic()
                replicas[1].process.send_signal(signal.SIGKILL)
        started = time.monotonic()
        asyncio.run(load(url, args.calls, args.concurrency, on_progress, tally, seed))
        took = time.monotonic() - started
        term_exit = replicas[0].process.wait(timeout=60)

        counts, per_replica = audit_executions(work / "audit")
        # The notes plugin keeps note NAME in NAME.md; its text names the call.
        written = {p.stem for p in notes.glob("*.md")
                   if p.read_text() == f"note of call {p.stem[1:]}"}
        missing = sorted(n for n in tally.notes_ok if n not in written)
        not_once = sorted(n for n in tally.notes_ok if counts.get(n) != 1)
        lost_written = sorted(n for n in tally.notes_failed if n in written)
        idempotent_failed = [f for f in tally.failed if f[1] != "notes_write"]
        before_kill = [r for r in tally.retries if r[0] < kill_times.get("KILL", float("inf"))]
        stats = {row["svname"]: row for row in haproxy_stats(stats_sock) if row["pxname"] == "corral"}

        print(f"calls: {tally.sent} sent in {took:.1f} s, {args.concurrency} in flight "
              f"(seed {seed}); "
              f"{tally.succeeded} succeeded, {tally.retried_calls} retried "
              f"({len(tally.retries)} retries), {len(tally.failed)} failed")
        for when, i, cause in tally.retries[:20]:
            print(f"  retry of call {i}: {cause}")
        for i, tool, cause in tally.failed[:20]:
            print(f"  failed call {i} ({tool}): {cause}")
        print(f"notes_write: {len(tally.notes_ok)} succeeded, each written and executed once: "
              f"{'yes' if not missing and not not_once else 'NO'}; {len(tally.notes_failed)} lost "
              f"with the SIGKILLed replica ({len(lost_written)} of them written before it died); "
              f"executions per replica {dict(sorted(per_replica.items()))}")
        print(f"SIGTERMed replica exit status {term_exit}; retries before the SIGKILL "
              f"{len(before_kill)}")
        # The last replica standing drains with a session's call waiting on
        # its client's approval.
        try:
            result, asked = anyio.run(answer_while_draining, url, replicas[2], stats_sock)
            answered = not result.is_error and len(asked) == 1
            answer_problem = None if answered else f"asked {len(asked)}, result {result}"
        except Exception as err:  # reported below with the replica's log
            answered, answer_problem = False, f"{type(err).__name__}: {err}"
        last_exit = replicas[2].process.wait(timeout=60)
        outcome = ("the approval reached replica 3 out of rotation, the call succeeded"
                   if answered else f"FAILED ({answer_problem})")
        print(f"session answer while draining: {outcome}, exit status {last_exit}")

        print("HAProxy counters (server: status, sessions, connection errors, response errors, "
              "retries, redispatches, 5xx answered):")
        for name in ("r1", "r2", "r3", "BACKEND"):
            row = stats.get(name, {})
            print(f"  {name}: {row.get('status')}, stot {row.get('stot')}, econ {row.get('econ')}, "
                  f"eresp {row.get('eresp')}, wretr {row.get('wretr')}, wredis {row.get('wredis')}, "
                  f"hrsp_5xx {row.get('hrsp_5xx')}")

        problems = list(task_problems) + list(quota_problems)
        if idempotent_failed:
            problems.append(f"{len(idempotent_failed)} idempotent calls failed after retries")
        if len(tally.failed) != len(tally.notes_failed):
            problems.append("a failure other than a lost notes_write")
        if before_kill:
            problems.append(f"{len(before_kill)} retries before the SIGKILL (the SIGTERM needs none)")
        if missing or not_once:
            problems.append(f"notes not written once: missing {missing[:5]}, not once {not_once[:5]}")
        if term_exit != 0:
            problems.append(f"the SIGTERMed replica exited {term_exit}")
        if not answered or last_exit != 0:
            problems.append(f"a session's answer while draining: {answer_problem}, "
                            f"exit status {last_exit}")
        if problems:
            status = "FAILED"
            for p in problems:
                print(f"problem: {p}")
            for name in ("haproxy.log", "redis.log", "replica-1.log", "replica-2.log",
                         "replica-3.log"):
                print(f"--- {name} (last lines)")
                print("\n".join((work / name).read_text().splitlines()[-15:]))
        print(f"replicas: {tally.sent} calls, {tally.succeeded} succeeded, {tally.retried_calls} "
              f"retried, {len(tally.failed)} failed ({len(tally.notes_failed)} notes_write lost "
              f"with the SIGKILLed replica), SIGTERM retries {len(before_kill)}, "
              f"HAProxy retries {stats.get('BACKEND', {}).get('wretr')} redispatches "
              f"{stats.get('BACKEND', {}).get('wredis')}: {status}")
    finally:
        haproxy.terminate()
        for r in replicas:
            if r.process.poll() is None:
                r.process.kill()
        haproxy.wait(timeout=30)
        redis.stop()
    sys.exit(0 if status == "ok" else 1)


if __name__ == "__main__":
    main()
