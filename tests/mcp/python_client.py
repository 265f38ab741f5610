"""Drive `corral serve` with the official Python MCP client (`mcp` on PyPI),
over stdio and over streamable HTTP.

Usage: python_client.py CORRAL_BIN PLUGIN_DIR CACHE_DIR

For each transport: list tools, call a sample tool, call with invalid
arguments (isError with the validator's message), run a plan, receive progress,
cancel a long call and see the server answer the next call. Exits non-zero on
the first failed check.
"""

import re
import subprocess
import sys

import anyio
from mcp import Client, StdioServerParameters

CORRAL, PLUGINS, CACHE = sys.argv[1:4]
GLOBAL = ["--plugins", PLUGINS, "--cache-dir", CACHE, "--fuel", "100000000000000", "--timeout-ms", "600000"]
SERVE = ["serve", "--no-watch", "--approve", "auto"]


def is_error(result):
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def text(result):
    return result.content[0].text


async def exercise(client, label):
    async with client:
        tools = (await client.list_tools()).tools
        names = {t.name for t in tools}
        for expected in ("sha256", "execute_tool_plan", "ask", "spin"):
            assert expected in names, f"{label}: {expected} not listed: {sorted(names)}"

        result = await client.call_tool("sha256", {"text": "abc"})
        assert not is_error(result), f"{label}: {result}"
        assert "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" in text(result)

        result = await client.call_tool("sha256", {"text": 5})
        assert is_error(result), f"{label}: invalid arguments must be isError: {result}"
        assert "`/text`: 5 is not of type \"string\"" in text(result), text(result)

        plan = {"steps": [
            {"id": "w", "tool": "word_count", "arguments": {"text": "one two three"}},
            {"id": "h", "tool": "sha256", "arguments": {"text": "words: $ref:w.words"}},
        ]}
        result = await client.call_tool("execute_tool_plan", plan)
        assert not is_error(result), f"{label}: {result}"
        assert '"status":"succeeded"' in text(result), text(result)

        seen = []

        async def on_progress(progress, total, message):
            seen.append(message)

        result = await client.call_tool("ask", {"message": "m"}, progress_callback=on_progress)
        assert not is_error(result), f"{label}: {result}"
        # Progress is coalesced (the latest message wins, at most one per
        # 100 ms); the last message always arrives, in order.
        assert seen and seen[-1] == "step 2 of 2", f"{label}: progress {seen}"
        assert seen in (["step 2 of 2"], ["step 1 of 2", "step 2 of 2"]), f"{label}: {seen}"

        # A call that only cancellation can stop (unlimited fuel and time).
        with anyio.move_on_after(1.0) as scope:
            await client.call_tool("spin", {})
        assert scope.cancelled_caught, f"{label}: spin returned?"
        with anyio.fail_after(30):
            result = await client.call_tool("echo", {"text": "after cancel"})
        assert "after cancel" in text(result), text(result)
    print(f"python mcp client over {label}: ok")


async def main():
    await exercise(Client(StdioServerParameters(command=CORRAL, args=GLOBAL + SERVE)), "stdio")

    server = subprocess.Popen(
        [CORRAL, *GLOBAL, *SERVE, "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True,
    )
    try:
        url = None
        for line in server.stderr:
            match = re.search(r"serving MCP at (http://\S+)", line)
            if match:
                url = match.group(1)
                break
        assert url, "the HTTP server did not print its address"
        await exercise(Client(url), "streamable HTTP")
    finally:
        server.terminate()
        server.wait(timeout=60)


anyio.run(main)
