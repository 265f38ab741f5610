"""Tools of components of another world (any-component mode) over MCP with
the official Python client (`mcp` on PyPI), over stdio and streamable HTTP.

Usage: python_any_component.py CORRAL_BIN RUST_COMPONENT JS_COMPONENT WIT CACHE_DIR

The two components are builds of the same WIT (`tests/fixtures/any_types`:
wit-bindgen in Rust, componentize-js in JavaScript); each is served from its
own directory with the WIT beside it. For each build and transport: the
tools are listed with their descriptions and parameter docs from the WIT,
every kind of value crosses (a nested record, a variant, flags, a 64-bit
integer as a string, NaN), a result's `err` is `isError` with its JSON,
arguments the types do not allow are `isError` before the component runs,
and a plan chains two calls with `$ref`. Exits non-zero on the first failed
check.
"""

import json
import re
import shutil
import subprocess
import sys
import tempfile

import anyio
from mcp import Client, StdioServerParameters

CORRAL, RUST, JS, WIT, CACHE = sys.argv[1:6]


def is_error(result):
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def text(result):
    return result.content[0].text


async def exercise(client, label):
    async with client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("greet", "kinds_divide", "kinds_echo_everything", "execute_tool_plan"):
            assert name in tools, f"{label}: {name} not listed: {sorted(tools)}"
        assert "counter" not in " ".join(tools), f"{label}: a resource became a tool"
        divide = tools["kinds_divide"]
        assert divide.description.startswith("Divides a by b"), f"{label}: {divide.description}"
        schema = divide.input_schema
        assert schema["properties"]["b"]["description"] == "the divisor, not zero", schema

        result = await client.call_tool("kinds_divide", {"a": 3, "b": 4})
        assert not is_error(result), f"{label}: {result}"
        assert json.loads(text(result)) == 0.75, text(result)

        result = await client.call_tool("kinds_divide", {"a": 1, "b": 0})
        assert is_error(result), f"{label}: err must be isError: {result}"
        assert "cannot divide 1 by zero" in text(result), text(result)

        value = {"flag": True, "tiny": -1, "byte": 255, "short": 2, "ushort": 3, "int": -4,
                 "uint": 5, "big": "-9223372036854775808", "ubig": "18446744073709551615",
                 "single": 0.5, "double": "NaN", "letter": "λ", "text": "t", "bytes": "AAE=",
                 "words": ["w"], "nested-maybe": {"some": None}, "pair": ["p", 1],
                 "at": {"x": 1.5, "y": -2}, "shape": {"tag": "circle", "value": 2.5},
                 "color": "blue", "perms": ["exec", "read"], "shapes": [{"tag": "empty"}]}
        result = await client.call_tool("kinds_echo_everything", {"value": value})
        assert not is_error(result), f"{label}: {result}"
        echoed = json.loads(text(result))
        expected = dict(value, perms=["read", "exec"])
        for key, want in expected.items():
            got = echoed.get(key)
            same = got == want or (isinstance(want, (int, float)) and not isinstance(want, bool)
                                   and float(got) == float(want))
            assert same, f"{label}: {key}: sent {want!r}, got {got!r}"
        assert "maybe" not in echoed, f"{label}: a missing option came back: {echoed}"

        for tool, args in [("kinds_only_blue", {"color": "mauve"}),
                           ("kinds_count_perms", {"perms": ["read", "read"]}),
                           ("greet", {"name": 5})]:
            result = await client.call_tool(tool, args)
            assert is_error(result), f"{label}: {tool} {args} must be refused: {result}"

        plan = {"steps": [
            {"id": "a", "tool": "greet", "arguments": {"name": "Ana"}},
            {"id": "b", "tool": "greet", "arguments": {"name": "$ref:a"}},
        ]}
        result = await client.call_tool("execute_tool_plan", plan)
        assert not is_error(result), f"{label}: {result}"
        assert "Hello, Hello, Ana!!" in text(result), text(result)
    print(f"python mcp client, any-component tools over {label}: ok")


async def serve(component, build):
    plugins = tempfile.mkdtemp()
    try:
        shutil.copy(component, f"{plugins}/types.wasm")
        shutil.copy(WIT, f"{plugins}/types.wit")
        args = ["--plugins", plugins, "--cache-dir", CACHE, "serve", "--no-watch"]
        await exercise(Client(StdioServerParameters(command=CORRAL, args=args)),
                       f"stdio ({build})")
        server = subprocess.Popen([CORRAL, *args, "--http", "127.0.0.1:0"],
                                  stderr=subprocess.PIPE, text=True)
        try:
            url = None
            for line in server.stderr:
                match = re.search(r"serving MCP at (http://\S+)", line)
                if match:
                    url = match.group(1)
                    break
            assert url, "the HTTP server did not print its address"
            await exercise(Client(url), f"streamable HTTP ({build})")
        finally:
            server.terminate()
            server.wait(timeout=60)
    finally:
        shutil.rmtree(plugins)


async def main():
    await serve(RUST, "Rust, wit-bindgen")
    await serve(JS, "JavaScript, componentize-js")


anyio.run(main)
