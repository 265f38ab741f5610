"""The replica test's MCP tasks phase (issue 47): three replicas that share
a real Redis (`--store redis://`) behind HAProxy. Imported by replicas.py.

- A task started through the proxy (`spin`, effectively unbounded) is found
  on the replica that runs it (`corral_tasks_running`), polled through each
  of the others, cancelled through another, and ends `cancelled` everywhere
  while its runner lets go of it.
- A second task's replica is SIGKILLed: once the lease (`--task-lease-ms`)
  has passed, every other replica and the proxy show the task `failed`,
  never `working`; the killed replica is then started again.
- A `subscriptions/listen` stream through the proxy is acknowledged with the
  filter it asked for.
Returns a list of problems (empty when all held) and prints one line per check.
"""

import json
import re
import shutil
import signal
import subprocess
import time

import httpx2 as httpx

TASKS_CAPS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def meta(capabilities):
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "corral-replica-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


def rpc(base, method, params, name):
    """One 2026-07-28 request to `base` (`http://host:port`), with the routing
    headers; returns the JSON-RPC response."""
    params = dict(params, _meta=meta(TASKS_CAPS))
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name}
    with httpx.Client(timeout=30) as client:
        response = client.post(f"{base}/mcp", headers=headers, content=json.dumps(body))
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip().startswith("{"):
            return json.loads(line[5:])
    return json.loads(response.text)


def task(base, method, task_id, **extra):
    return rpc(base, method, dict(extra, taskId=task_id), task_id)


def running(addr):
    """`corral_tasks_running` of the replica at `addr`."""
    with httpx.Client(timeout=5) as client:
        text = client.get(f"http://{addr}/metrics").text
    match = re.search(r"^corral_tasks_running (\S+)", text, re.M)
    return float(match.group(1)) if match else 0.0


def poll(base, task_id, want, within=60):
    deadline = time.monotonic() + within
    while True:
        got = task(base, "tasks/get", task_id)
        status = got.get("result", {}).get("status")
        if status in want:
            return got["result"]
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} never {want} at {base}: {got}")
        time.sleep(0.1)


def start_spin(proxy):
    created = rpc(proxy, "tools/call", {"name": "spin", "arguments": {}}, "spin")
    result = created.get("result", {})
    assert result.get("resultType") == "task", created
    return result["taskId"]


def runner_of(replicas, within=30):
    """The replica whose `corral_tasks_running` is 1."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        owners = [r for r in replicas if r.process.poll() is None and running(r.addr) == 1]
        if len(owners) == 1:
            return owners[0]
        time.sleep(0.05)
    raise AssertionError("no single replica runs the task")


def listen_through(proxy):
    """Opens a listen stream through the proxy and returns its first frame."""
    params = {"_meta": meta({}), "notifications": {"toolsListChanged": True}}
    body = {"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": params}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", f"{proxy}/mcp", headers=headers, content=json.dumps(body)) as response:
            for line in response.iter_lines():
                if line.startswith("data:") and line[5:].strip().startswith("{"):
                    return json.loads(line[5:])
    raise AssertionError("the listen stream ended without a frame")


def run(proxy, replicas, restart, wait_all_up):
    """The phase; `restart(replica)` starts a killed replica again and
    `wait_all_up()` waits until HAProxy has every replica back."""
    problems = []
    started = time.monotonic()
    try:
        task_id = start_spin(proxy)
        owner = runner_of(replicas)
        others = [r for r in replicas if r is not owner]
        for r in others:
            assert poll(f"http://{r.addr}", task_id, ("working",))["taskId"] == task_id
        ack = task(f"http://{others[0].addr}", "tasks/cancel", task_id)
        assert ack.get("result") == {"resultType": "complete"}, ack
        for base in [proxy] + [f"http://{r.addr}" for r in replicas]:
            assert poll(base, task_id, ("cancelled",))["status"] == "cancelled"
        deadline = time.monotonic() + 30
        while running(owner.addr) != 0:
            assert time.monotonic() < deadline, "the runner never let go of the cancelled task"
            time.sleep(0.05)
        print(f"tasks: started through HAProxy on replica {owner.index}, polled through "
              f"replicas {[r.index for r in others]}, cancelled through replica "
              f"{others[0].index}: cancelled everywhere, runner released "
              f"({time.monotonic() - started:.1f} s)")
    except AssertionError as err:
        problems.append(f"a task across replicas: {err}")
        return problems

    started = time.monotonic()
    try:
        task_id = start_spin(proxy)
        owner = runner_of(replicas)
        owner.process.send_signal(signal.SIGKILL)
        owner.process.wait(timeout=30)
        killed_at = time.monotonic()
        others = [r for r in replicas if r is not owner]
        failed = poll(f"http://{others[0].addr}", task_id, ("failed",))
        assert "lease expired" in failed["error"]["message"], failed
        assert "result" not in failed, failed
        assert poll(proxy, task_id, ("failed", "working"))["status"] == "failed"
        print(f"tasks: replica {owner.index} SIGKILLed during a task; failed everywhere "
              f"{time.monotonic() - killed_at:.1f} s later (the lease), never working forever")
        restart(owner)
        wait_all_up()
    except AssertionError as err:
        problems.append(f"a task whose replica was killed: {err}")
        return problems

    try:
        first = listen_through(proxy)
        assert first.get("method") == "notifications/subscriptions/acknowledged", first
        assert first["params"]["notifications"] == {"toolsListChanged": True}, first
        print("listen: a subscriptions/listen stream through HAProxy is acknowledged with its filter")
    except AssertionError as err:
        problems.append(f"a listen stream through HAProxy: {err}")
    return problems


class Redis:
    """Debian's `redis-server` on a free port, no persistence."""

    def __init__(self, port, log):
        assert shutil.which("redis-server"), "redis-server missing (scripts/system-deps.sh)"
        self.url = f"redis://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=log, stderr=subprocess.STDOUT)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
