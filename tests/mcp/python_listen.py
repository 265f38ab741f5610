"""`subscriptions/listen` (MCP 2026-07-28, SEP-2575) with the official Python
client (`mcp` on PyPI) in its default mode, over stdio and streamable HTTP.

Usage: python_listen.py CORRAL_BIN PLUGIN_WASM CACHE_DIR

A listen stream that asks for tool-list changes is acknowledged with
exactly that, and gets `tools/list_changed` when a plugin is dropped into
the served directory (the new tool is then listed); a second stream that
asked only for what corral does not send (prompts) is acknowledged with
nothing, and receives nothing of the change the first hears of. Over HTTP,
`/metrics`' `corral_change_subscribers` counts the stream's watcher while it
is open and none once the client closes it. `prompts/list`, whose capability
corral does not declare, is -32601. Exits non-zero on the first failed check.
"""

import os
import re
import shutil
import sys
import tempfile
import urllib.request

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp_support import HttpServer

CORRAL, PLUGIN, CACHE = sys.argv[1:4]


async def names(client):
    return {t.name for t in (await client.list_tools()).tools}


def listeners(url):
    """`corral_change_subscribers` from the server's /metrics (HTTP only)."""
    if url is None:
        return None
    text = urllib.request.urlopen(url.rsplit("/mcp", 1)[0] + "/metrics").read().decode()
    match = re.search(r"^corral_change_subscribers (\d+)", text, re.M)
    return int(match.group(1)) if match else 0


async def settled(url, want):
    """Waits (up to 20 s) until the listener gauge reads `want`."""
    with anyio.move_on_after(20):
        while listeners(url) != want:
            await anyio.sleep(0.05)
    return listeners(url)


async def check(client, plugins, label, url):
    try:
        await client.list_prompts()
        raise AssertionError(f"{label}: prompts/list was answered")
    except MCPError as err:
        assert err.error.code == -32601, f"{label}: {err}"

    before = await names(client)
    assert "extra_sha256" not in before, before
    idle = listeners(url)
    async with client.listen(tools_list_changed=True) as tools, \
            client.listen(prompts_list_changed=True) as nothing:
        if url:
            # One watcher per stream that has something to send.
            assert await settled(url, idle + 1) == idle + 1, f"{label}: {listeners(url)}"
        assert tools.honored.tools_list_changed, f"{label}: {tools.honored}"
        assert not nothing.honored.tools_list_changed, f"{label}: {nothing.honored}"
        assert not nothing.honored.prompts_list_changed, f"{label}: {nothing.honored}"
        # A new plugin in the directory: the stream says so, and the list
        # then holds its tools.
        with open(os.path.join(plugins, "extra.policy.toml"), "w") as f:
            f.write('version = 1\n[presentation]\nprefix = "extra_"\n')
        shutil.copy(PLUGIN, os.path.join(plugins, "extra.wasm.tmp"))
        os.rename(os.path.join(plugins, "extra.wasm.tmp"), os.path.join(plugins, "extra.wasm"))
        with anyio.fail_after(60):
            while "extra_sha256" not in await names(client):
                event = await tools.__anext__()
                assert type(event).__name__ == "ToolsListChanged", f"{label}: {event}"
        # The other stream asked only for what corral does not send: its
        # acknowledgment accepted nothing, and the server sends a stream only
        # what its acknowledgment accepted (rmcp's sink refuses the rest).
        assert nothing.honored.model_dump(exclude_none=True) == {}, nothing.honored
        # It got nothing of the change the first stream heard of (the same
        # server sent that one already; a second more for stragglers).
        with anyio.move_on_after(1):
            event = await nothing.__anext__()
            raise AssertionError(f"{label}: the prompts-only stream got {event}")
    # The streams ended with the client's context: no listener left behind.
    if url:
        assert await settled(url, idle) == idle, f"{label}: {listeners(url)} listeners left"


async def main():
    for transport in ("stdio", "streamable HTTP"):
        label = transport
        with tempfile.TemporaryDirectory() as root:
            plugins = os.path.join(root, "plugins")
            os.makedirs(plugins)
            shutil.copy(PLUGIN, os.path.join(plugins, "encode.wasm"))
            args = ["--plugins", plugins, "--cache-dir", CACHE, "serve"]
            server = None
            try:
                if transport == "stdio":
                    target = StdioServerParameters(command=CORRAL, args=args)
                else:
                    server = HttpServer(CORRAL, args)
                    target = server.url
                async with Client(target) as client:
                    await check(client, plugins, label, server.url if server else None)
            finally:
                if server:
                    server.stop()
        print(f"python mcp client subscriptions/listen over {label}: ok")


anyio.run(main)
