"""The replica test's tenant quotas phase (issue 49): three replicas that
keep quota buckets in a real Redis (`--store redis://`, `--quotas`) behind
HAProxy. Imported by replicas.py.

- `qc_echo` (a plugin whose policy gives each tenant 20 calls an hour): 60
  calls of one tenant, 12 in flight through the proxy, are admitted exactly
  20 times; the other 40 are `quota_exceeded` results with
  `corral/retryAfterMs` and `corral/quotaResetAt` in `_meta`.
- `qf_echo` (each tenant 1 fuel unit an hour: the first call empties the
  bucket): 30 calls, 6 in flight, are admitted at least once and at most
  6 times, the documented over-admission (the calls admitted before the
  first charge lands).
- Redis is stopped under load: calls still run, each replica's `/readyz`
  shows `quotas.fallback` with the store's error, and a fresh tenant is
  held to the quota by each replica alone. Redis is started again on the
  same port and every replica's next calls go back to it
  (`quotas.fallback` false).
Returns a list of problems and prints one line per check.
"""

import asyncio
import json
import time

import httpx2 as httpx

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}

POLICIES = {
    "qcalls": 'version = 1\n[presentation]\nprefix = "qc_"\n'
              '[quotas]\ncalls = { limit = 20, per = "1h" }\n',
    "qfuel": 'version = 1\n[presentation]\nprefix = "qf_"\n'
             '[quotas]\nfuel = { limit = 1, per = "1h" }\n',
}


def body(tool, tenant, i):
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "corral-quota-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "corral/context": {"tenant": tenant},
    }
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": f"call {i}"}, "_meta": meta}}


def parse(text):
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip().startswith("{"):
            return json.loads(line[5:])
    return json.loads(text)


async def burst(url, tool, tenant, calls, in_flight):
    """`calls` calls of `tool` as `tenant`, `in_flight` at once: the results."""
    slots = asyncio.Semaphore(in_flight)
    async with httpx.AsyncClient(timeout=60) as client:
        async def one(i):
            async with slots:
                headers = dict(HEADERS, **{"Mcp-Name": tool})
                response = await client.post(url, json=body(tool, tenant, i), headers=headers)
                return parse(response.text).get("result", {})
        return await asyncio.gather(*(one(i) for i in range(calls)))


def tally(results):
    admitted = [r for r in results if not r.get("isError")]
    refused = [r for r in results if (r.get("_meta") or {}).get("corral/errorKind") == "quota_exceeded"]
    return admitted, refused


def readyz(addr):
    with httpx.Client(timeout=5) as client:
        return client.get(f"http://{addr}/readyz").json()


def run(proxy, replicas, redis_stop, redis_start):
    problems = []
    url = f"{proxy}/mcp"

    started = time.monotonic()
    admitted, refused = tally(asyncio.run(burst(url, "qc_echo", "t-calls", 60, 12)))
    meta = (refused[0].get("_meta") or {}) if refused else {}
    ok = (len(admitted) == 20 and len(refused) == 40
          and meta.get("corral/retryAfterMs", 0) > 0 and meta.get("corral/quotaResetAt"))
    print(f"quota of calls across 3 replicas: 60 calls, 12 in flight, {len(admitted)} admitted "
          f"(quota 20), {len(refused)} refused ({time.monotonic() - started:.1f} s): "
          f"{'ok' if ok else 'FAILED'}")
    if not ok:
        problems.append(f"calls quota: {len(admitted)} admitted, {len(refused)} refused, "
                        f"meta {meta}")

    admitted, refused = tally(asyncio.run(burst(url, "qf_echo", "t-fuel", 30, 6)))
    ok = 1 <= len(admitted) <= 6 and len(admitted) + len(refused) == 30
    print(f"quota of fuel across 3 replicas: 30 calls, 6 in flight, {len(admitted)} admitted "
          f"(bucket of 1 unit; at most the 6 in flight), {len(refused)} refused: "
          f"{'ok' if ok else 'FAILED'}")
    if not ok:
        problems.append(f"fuel quota: {len(admitted)} admitted, {len(refused)} refused")

    # Redis down under load: calls run on each replica's own buckets.
    redis_stop()
    admitted, refused = tally(asyncio.run(burst(url, "qc_echo", "t-down", 90, 6)))
    states = [readyz(r.addr).get("quotas", {}) for r in replicas]
    fallback = all(s.get("fallback") and "unreachable" in s.get("detail", "") for s in states)
    # Each replica alone holds the fresh tenant to 20: 60 at most.
    ok = fallback and 20 <= len(admitted) <= 60 and len(admitted) + len(refused) == 90
    print(f"Redis stopped: 90 calls of a fresh tenant, {len(admitted)} admitted (20 per replica "
          f"at most), every replica's /readyz in fallback: {'yes' if fallback else 'NO'}: "
          f"{'ok' if ok else 'FAILED'}")
    if not ok:
        problems.append(f"fallback: admitted {len(admitted)}, states {states}")

    redis_start()
    deadline = time.monotonic() + 60
    recovered = False
    while time.monotonic() < deadline and not recovered:
        asyncio.run(burst(url, "qc_echo", "t-back", 6, 3))
        recovered = not any(readyz(r.addr).get("quotas", {}).get("fallback") for r in replicas)
        time.sleep(0.2)
    print(f"Redis started again: every replica back on the shared store: "
          f"{'ok' if recovered else 'FAILED'}")
    if not recovered:
        problems.append("the replicas never left the fallback after Redis returned")
    return problems
