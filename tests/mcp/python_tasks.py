"""MCP tasks (SEP-2663) with the official Python client (`mcp` on PyPI) in
its default (2026-07-28) mode, over stdio and streamable HTTP.

Usage: python_tasks.py CORRAL_BIN REFERENCE_TOOLS_WASM HOSTILE_WASM CACHE_DIR

The client takes tasks through a `ClientExtension` that claims
`resultType: "task"`: its resolver polls `tasks/get` at the server's
`pollIntervalMs`, hands each `inputRequests` entry to the client's own
elicitation callback and answers with `tasks/update`, so `call_tool` returns
the task's final result as if the call had waited. Checked:
- a slow call (`slow_compute`) comes back as a task and completes;
- a task that needs approval (`confirm_delete`, asked mid-call) waits in
  `input_required` until the user's answer, and an allow and a decline
  each end it as the user chose;
- `tasks/cancel` stops a spinning guest: over HTTP, `/metrics`'
  `corral_instances_in_use` shows its sandbox held while it spins and
  released once the task is `cancelled`;
- another tenant's `tasks/get` and `tasks/cancel` get "no task" (-32602);
- a finished task is gone once its TTL (`--task-ttl-ms`) has passed.
Exits non-zero on the first failed check.
"""

import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request
from typing import Any, Literal

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_support import HttpServer, User, is_error, text
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import ConfigDict, Field, TypeAdapter

CORRAL, REFERENCE, HOSTILE, CACHE = sys.argv[1:5]
TASKS = "io.modelcontextprotocol/tasks"
ANY = TypeAdapter(dict[str, Any])
# The tenant of every call here: out-of-band context, the client asserts it.
ACME = {"corral/context": {"tenant": "acme"}}


class TaskHandle(Result):
    """What a `tools/call` answers when it made a task."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskParams(RequestParams):
    model_config = ConfigDict(extra="allow")
    task_id: str


class TaskRequest(Request[TaskParams, str]):
    """`tasks/get`, `tasks/update` or `tasks/cancel`; `Mcp-Name` carries the id."""

    name_param = "taskId"


async def task_request(session, method, task_id, tenant=None, **params):
    meta = {"corral/context": {"tenant": tenant}} if tenant else None
    request = TaskRequest(method=method, params=TaskParams(task_id=task_id, _meta=meta, **params))
    return await session.send_request(request, ANY)


class Tasks(ClientExtension):
    """The client side of the Tasks extension, as a tool author's client
    would write it with the SDK's extension interface."""

    identifier = TASKS

    def __init__(self, tenant=None):
        self.tenant = tenant
        self.statuses = []
        self.handles = []

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
        self.handles.append(handle.task_id)
        answered = set()
        while True:
            task = await task_request(ctx.session, "tasks/get", handle.task_id, self.tenant)
            self.statuses.append(task["status"])
            if task["status"] == "completed":
                return CallToolResult.model_validate(task["result"])
            if task["status"] in ("failed", "cancelled"):
                raise MCPError(code=-32603, message=f"task {task['status']}: {task}")
            if task["status"] == "input_required":
                responses = {}
                for key, raw in task["inputRequests"].items():
                    if key in answered:
                        continue
                    from mcp_types import ElicitRequest

                    request = ElicitRequest.model_validate(raw)
                    context = ClientRequestContext(session=ctx.session, request_id=key, meta=None)
                    answer = await ctx.session.dispatch_input_request(context, request)
                    responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
                    answered.add(key)
                if responses:
                    ack = await task_request(
                        ctx.session, "tasks/update", handle.task_id, self.tenant, inputResponses=responses
                    )
                    assert ack == {"resultType": "complete"}, ack
            await anyio.sleep((handle.poll_interval_ms or 200) / 1000)


def instances_in_use(url):
    text_ = urllib.request.urlopen(url.rsplit("/mcp", 1)[0] + "/metrics").read().decode()
    match = re.search(r"^corral_instances_in_use (\d+)", text_, re.M)
    return int(match.group(1)) if match else 0


async def until(what, check, within=60):
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, f"never: {what}"
        await anyio.sleep(0.05)


async def checks(target, url, label):
    user = User()
    tasks = Tasks(tenant="acme")
    async with Client(target, elicitation_callback=user, extensions=[tasks]) as client:
        # A slow call: a task, polled to its end.
        result = await client.call_tool("slow_compute", {"seconds": 0.3, "label": "report"}, meta=ACME)
        assert not is_error(result), result
        assert text(result) == "computed report after 0.3s", result
        assert tasks.statuses[-1] == "completed" and "working" in tasks.statuses, tasks.statuses

        # A question inside the task, answered by the user through the
        # client's own elicitation callback.
        user.plan(("accept", {"decision": "allow"}))
        result = await client.call_tool("confirm_delete", {"filename": "draft.txt"}, meta=ACME)
        assert text(result) == "deleted draft.txt", result
        assert "input_required" in tasks.statuses, tasks.statuses
        assert "draft.txt" in user.asked[0].message, user.asked[0].message
        user.plan(("decline", None))
        result = await client.call_tool("confirm_delete", {"filename": "keep.txt"}, meta=ACME)
        assert is_error(result) and "declined" in text(result), result

        # Another tenant: the same "no task" as an id that never existed.
        done = tasks.handles[-1]
        for method in ("tasks/get", "tasks/cancel"):
            try:
                await task_request(client.session, method, done, "globex")
                raise AssertionError(f"{method} of acme's task as globex succeeded")
            except MCPError as err:
                assert err.error.code == -32602 and "no task" in err.error.message, err
        assert (await task_request(client.session, "tasks/get", done, "acme"))["status"] == "completed"

        # A cancel stops a spinning guest: its sandbox goes.
        handle = await client.session.call_tool("spin", {}, meta=ACME, allow_claimed=True)
        assert isinstance(handle, TaskHandle), handle
        if url:
            await until("the spinning guest holds an instance", lambda: anyio.to_thread.run_sync(lambda: instances_in_use(url) == 1))
        ack = await task_request(client.session, "tasks/cancel", handle.task_id, "acme")
        assert ack == {"resultType": "complete"}, ack

        async def cancelled():
            task = await task_request(client.session, "tasks/get", handle.task_id, "acme")
            return task["status"] == "cancelled"

        await until("the task is cancelled", cancelled)
        if url:
            await until("the sandbox is released", lambda: anyio.to_thread.run_sync(lambda: instances_in_use(url) == 0))

        # The TTL: a finished task is kept --task-ttl-ms after its last change.
        async def expired():
            try:
                await task_request(client.session, "tasks/get", done, "acme")
                return False
            except MCPError as err:
                return err.error.code == -32602

        await until("the finished task expires", expired)
    print(f"python mcp client tasks over {label}: ok")


async def main():
    plugins = tempfile.mkdtemp()
    try:
        shutil.copy(REFERENCE, os.path.join(plugins, "reference_tools.wasm"))
        shutil.copy(os.path.join(os.path.dirname(__file__), "reference_tools.policy.toml"), plugins)
        os.mkdir(os.path.join(plugins, "reference-data"))
        shutil.copy(HOSTILE, os.path.join(plugins, "hostile.wasm"))
        with open(os.path.join(plugins, "hostile.policy.toml"), "w") as f:
            f.write('version = 1\n[limits]\ntimeout_ms = 300_000\n[tasks]\nmode = "never"\ntools = { spin = "always" }\n')
        args = ["--plugins", plugins, "--cache-dir", CACHE, "--fuel", "100000000000000",
                "serve", "--no-watch", "--task-ttl-ms", "5000"]
        await checks(StdioServerParameters(command=CORRAL, args=args), None, "stdio")
        server = HttpServer(CORRAL, args)
        try:
            await checks(server.url, server.url, "streamable HTTP")
        finally:
            server.stop()
    finally:
        shutil.rmtree(plugins)


anyio.run(main)
