"""Serving before compiling, seen by the official Python MCP client (`mcp` on
PyPI) over stdio, with a cold cache for one plugin, in its legacy (session)
mode and in its default (2026-07-28) mode, where the notification comes on a
`subscriptions/listen` stream.

Usage: python_cold_start.py CORRAL_BIN CACHED_PLUGIN SLOW_PLUGIN

The component cache (a new one) holds CACHED_PLUGIN only; SLOW_PLUGIN (the
JavaScript `versions` sample: QuickJS, whose compile takes seconds) is
compiled by the server in the background. The checks hold whatever the order of events:
- the first tools/list answers with the cached plugin's tools;
- if it lacked the slow plugin's tools, a `notifications/tools/list_changed`
  follows, after which tools/list has them;
- a call to the slow plugin's tool, made right after that first list,
  succeeds (the server waits for the compile instead of answering "unknown
  tool").
Exits non-zero on the first failed check.
"""

import json
import shutil
from contextlib import AsyncExitStack
import subprocess
import sys
import tempfile

import anyio
from mcp import Client, StdioServerParameters

CORRAL, CACHED, SLOW = sys.argv[1:4]


def is_error(result):
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def once(mode):
    """One cold start, seen by a `mode` client: `legacy` (a session: the
    notification comes unasked) or `default` (2026-07-28: it comes on a
    `subscriptions/listen` stream opened before the first list)."""
    with tempfile.TemporaryDirectory() as plugins, tempfile.TemporaryDirectory() as cache:
        shutil.copy(CACHED, plugins)
        # Warm the new cache with the cached plugin alone.
        subprocess.run([CORRAL, "--plugins", plugins, "--cache-dir", cache, "list"],
                       check=True, capture_output=True)
        cached_tools = {"base64_encode", "base64_decode", "sha256"}
        shutil.copy(SLOW, plugins)
        serve = StdioServerParameters(
            command=CORRAL,
            args=["--plugins", plugins, "--cache-dir", cache, "--timeout-ms", "600000", "serve", "--no-watch"],
        )

        changed = anyio.Event()

        async def on_message(message):
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                changed.set()
            await anyio.lowlevel.checkpoint()

        kwargs = {"mode": "legacy", "message_handler": on_message} if mode == "legacy" else {}
        async with Client(serve, **kwargs) as client, AsyncExitStack() as stack:
            if mode == "default":
                events = await stack.enter_async_context(client.listen(tools_list_changed=True))
                assert events.honored.tools_list_changed, events.honored
            first = {t.name for t in (await client.list_tools()).tools}
            assert cached_tools <= first, f"the cached plugin is not served at once: {sorted(first)}"
            # The slow plugin's tool, called while it may still compile: the
            # server waits for it rather than answering "unknown tool".
            with anyio.fail_after(600):
                result = await client.call_tool("semver_compare", {"a": "1.2.3", "b": "2.0.0-rc.1"})
            assert not is_error(result), f"a call made while compiling failed: {result}"
            answer = json.loads(result.content[0].text)
            assert answer["newer"] == "2.0.0-rc.1" and answer["order"] == -1, answer
            if "semver_compare" in first:
                print(f"cold start ({mode}): the slow plugin compiled before the first tools/list")
            else:
                with anyio.fail_after(60):
                    if mode == "legacy":
                        await changed.wait()
                    else:
                        event = await events.__anext__()
                        assert type(event).__name__ == "ToolsListChanged", event
                after = {t.name for t in (await client.list_tools()).tools}
                assert "semver_compare" in after, f"list_changed, but no semver_compare: {sorted(after)}"
                print(f"cold start ({mode}): first tools/list without the slow plugin, then list_changed with it")


async def main():
    for mode in ("legacy", "default"):
        await once(mode)
    print("python mcp client, cold start over stdio: ok")


anyio.run(main)
