"""Approvals over MCP with the official Python client (`mcp` on PyPI), in its
default mode (protocol 2026-07-28: the server answers a gated call with an
input-required result and the client retries) and in `legacy` mode
(server-initiated `elicitation/create`), over stdio and streamable HTTP.

Usage: python_approvals.py CORRAL_BIN HOSTILE_WASM CACHE_DIR

The server has no reviewer of its own: only the client's user (a scripted
elicitation callback here) can approve. For each transport and mode:
allow, decline, cancel, deny with a reason, edit (and an edit that breaks
the schema), "always for this build" (then a rebuilt plugin asks again), a
guest's own mid-call request, a mid-call request of a tool that is not safe
to run again, and a plan whose arguments are edited as JSON. In the default
mode also: a forged, altered, replayed or foreign request state is refused,
and a state answered on a second server process with the same key (a
replica) completes the call, while one with another key refuses it. Exits
non-zero on the first failed check.
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp_support import HttpServer, User, is_error, text

CORRAL, HOSTILE, CACHE = sys.argv[1:4]
KEY = "k" * 48


def custom_section(tag):
    """A custom section: appended to a component, the same tools, a new sha256."""
    name = b"corral-version"
    payload = tag.encode()
    return bytes([0, 1 + len(name) + len(payload), len(name)]) + name + payload


def setup(root):
    plugins = os.path.join(root, "plugins")
    os.makedirs(os.path.join(plugins, "w-data"))
    shutil.copy(HOSTILE, os.path.join(plugins, "hostile.wasm"))
    # The same tools again, with a writable directory: `w_ask` is not safe
    # to run again after an abandoned run.
    shutil.copy(HOSTILE, os.path.join(plugins, "w.wasm"))
    with open(os.path.join(plugins, "w.policy.toml"), "w") as f:
        f.write('version = 1\n[presentation]\nprefix = "w_"\n'
                '[[filesystem]]\nhost = "w-data"\nguest = "/data"\naccess = "read-write"\n')
    key = os.path.join(root, "key")
    with open(key, "w") as f:
        f.write(KEY)
    return plugins, key


def serve_args(plugins, key):
    return ["--plugins", plugins, "--cache-dir", CACHE, "serve",
            "--require-approval", "execute_tool_plan", "--state-key-file", key]


async def sha_of(client, tool):
    for t in (await client.list_tools()).tools:
        if t.name == tool:
            return (t.meta or {}).get("corral/sha256")
    raise AssertionError(f"{tool} not listed")


async def decisions(client, user, label, plugins, tag):
    # Allow: the user sees the question, the call runs once.
    user.plan(("accept", {"decision": "allow"}))
    result = await client.call_tool("gated", {"message": "hi"})
    assert not is_error(result), f"{label}: {result}"
    assert json.loads(text(result)) == {"message": "hi"}, text(result)
    assert len(user.asked) == 1, f"{label}: asked {len(user.asked)} times"
    question = user.asked[0]
    assert question.message.startswith("Approve this call?"), question.message
    assert "tool:      gated" in question.message, question.message
    schema = question.requested_schema
    schema = schema if isinstance(schema, dict) else schema.model_dump(by_alias=True)
    assert "edit.message" in schema["properties"], schema
    assert schema["properties"]["edit.message"]["default"] == "hi", schema

    user.plan(("decline", None))
    result = await client.call_tool("gated", {"message": "hi"})
    assert is_error(result) and "declined" in text(result), f"{label}: {result}"

    user.plan(("cancel", None))
    result = await client.call_tool("gated", {"message": "hi"})
    assert is_error(result) and "dismissed" in text(result), f"{label}: {result}"

    user.plan(("accept", {"decision": "deny", "reason": "not on Fridays"}))
    result = await client.call_tool("gated", {"message": "hi"})
    assert is_error(result) and "not on Fridays" in text(result), f"{label}: {result}"

    # Edit: the call runs with the user's arguments, checked again first.
    user.plan(("accept", {"decision": "edit", "edit.message": "edited"}))
    result = await client.call_tool("gated", {"message": "hi"})
    assert not is_error(result), f"{label}: {result}"
    assert json.loads(text(result)) == {"message": "edited"}, text(result)
    user.plan(("accept", {"decision": "edit", "edit.message": 5}))
    result = await client.call_tool("gated", {"message": "hi"})
    assert is_error(result), f"{label}: an edit that breaks the schema ran: {result}"
    assert "edited arguments are invalid" in text(result), text(result)

    # A plan's arguments are not flat: the form offers them as JSON text.
    plan = {"steps": [{"id": "e", "tool": "echo", "arguments": {"text": "one"}}]}
    edited = {"steps": [{"id": "e", "tool": "echo", "arguments": {"text": "two"}}]}
    user.plan(("accept", {"decision": "edit", "edit.arguments": json.dumps(edited)}))
    result = await client.call_tool("execute_tool_plan", plan)
    assert not is_error(result), f"{label}: {result}"
    assert '"two"' in text(result) and '"one"' not in text(result), text(result)

    # A guest's own mid-call request.
    user.plan(("accept", {"decision": "allow"}))
    result = await client.call_tool("ask", {"message": "delete everything"})
    assert not is_error(result), f"{label}: {result}"
    assert json.loads(text(result)) == {"decision": "continue"}, text(result)
    assert "delete everything" in user.asked[0].message, user.asked[0].message
    user.plan(("accept", {"decision": "deny", "reason": "no"}))
    result = await client.call_tool("ask", {"message": "delete everything"})
    assert is_error(result) and "no" in text(result), f"{label}: {result}"

    # Always for this build: not asked again until the plugin is rebuilt.
    user.plan(("accept", {"decision": "allow_always"}))
    result = await client.call_tool("gated", {"message": "a"})
    assert not is_error(result), f"{label}: {result}"
    user.plan()
    result = await client.call_tool("gated", {"message": "b"})
    assert not is_error(result) and not user.asked, f"{label}: asked again: {user.asked}"
    path = os.path.join(plugins, "hostile.wasm")
    with open(HOSTILE, "rb") as f:
        rebuilt = f.read() + custom_section(tag)
    with open(path + ".tmp", "wb") as f:
        f.write(rebuilt)
    os.rename(path + ".tmp", path)
    want = hashlib.sha256(rebuilt).hexdigest()
    with anyio.fail_after(60):
        while await sha_of(client, "gated") != want:
            await anyio.sleep(0.05)
    user.plan(("accept", {"decision": "allow"}))
    result = await client.call_tool("gated", {"message": "c"})
    assert not is_error(result) and len(user.asked) == 1, f"{label}: the rebuilt plugin was not asked about"


async def mid_call_of_a_tool_unsafe_to_rerun(client, user, label, modern):
    user.plan(("accept", {"decision": "allow"}))
    result = await client.call_tool("w_ask", {"message": "write"})
    if modern:
        # The run cannot be resumed and running it again could repeat what it
        # did before it asked: refused, and the user was never asked.
        assert is_error(result), f"{label}: {result}"
        assert "asked for approval during its run" in text(result), text(result)
        assert not user.asked, user.asked
    else:
        assert not is_error(result), f"{label}: {result}"
        assert len(user.asked) == 1


async def states(client, user, label, url_b, url_c):
    """The request state, driven by hand: refused when forged, altered, for
    other arguments or replayed; good on a replica with the same key only."""
    session = client.session
    asked = await session.call_tool("gated", {"message": "s"}, allow_input_required=True)
    assert getattr(asked, "result_type", None) == "input_required", f"{label}: {asked}"
    assert "approval" in asked.input_requests, asked
    state = asked.request_state
    yes = {"approval": {"action": "accept", "content": {"decision": "allow"}}}

    async def refused(arguments, request_state, needle, on=client):
        try:
            result = await on.call_tool("gated", arguments, input_responses=yes,
                                        request_state=request_state)
        except MCPError as err:
            assert needle in str(err), f"{label}: {err}"
            return
        raise AssertionError(f"{label}: accepted ({needle}): {result}")

    middle = len(state) // 2
    altered = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1:]
    await refused({"message": "s"}, altered, "not one this server issued")
    await refused({"message": "s"}, "rs2.forged.by-the-client", "not one this server issued")
    await refused({"message": "other"}, state, "other arguments")
    result = await client.call_tool("gated", {"message": "s"}, input_responses=yes, request_state=state)
    assert not is_error(result), f"{label}: {result}"
    await refused({"message": "s"}, state, "already used")

    if url_b is None:
        return
    # A second process with the same key finishes an exchange this one began;
    # one with another key refuses it.
    asked = await session.call_tool("gated", {"message": "r"}, allow_input_required=True)
    async with Client(url_c, elicitation_callback=user) as other_key:
        await refused({"message": "r"}, asked.request_state, "not one this server issued", other_key)
    async with Client(url_b, elicitation_callback=user) as replica:
        result = await replica.call_tool("gated", {"message": "r"}, input_responses=yes,
                                         request_state=asked.request_state)
        assert not is_error(result), f"{label}: the replica refused: {result}"


async def main():
    user = User()
    for mode in ("default", "legacy"):
        modern = mode == "default"
        kwargs = {} if modern else {"mode": "legacy"}
        for transport in ("stdio", "streamable HTTP"):
            label = f"{transport}, {mode} mode"
            with tempfile.TemporaryDirectory() as root:
                plugins, key = setup(root)
                args = serve_args(plugins, key)
                servers = []
                try:
                    if transport == "stdio":
                        target = StdioServerParameters(command=CORRAL, args=args)
                        replica = other = None
                    else:
                        servers = [HttpServer(CORRAL, args)]
                        with open(os.path.join(root, "other-key"), "w") as f:
                            f.write("o" * 48)
                        servers.append(HttpServer(CORRAL, serve_args(plugins, key)))
                        servers.append(HttpServer(CORRAL, serve_args(plugins, os.path.join(root, "other-key"))))
                        target, replica, other = (s.url for s in servers)
                    async with Client(target, elicitation_callback=user, **kwargs) as client:
                        await mid_call_of_a_tool_unsafe_to_rerun(client, user, label, modern)
                        if modern:
                            await states(client, user, label, replica, other)
                        await decisions(client, user, label, plugins, f"{mode}-{transport}")
                finally:
                    for server in servers:
                        server.stop()
            print(f"python mcp client approvals over {label}: ok")


anyio.run(main)
