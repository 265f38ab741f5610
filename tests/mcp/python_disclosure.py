"""Progressive disclosure over MCP with the official Python client (`mcp` on
PyPI), in its default mode (protocol 2026-07-28: the unfolded set travels
as a signed token the client sends back in `_meta`) and in `legacy` mode
(the unfolded set belongs to the session), over stdio and streamable HTTP.

Usage: python_disclosure.py CORRAL_BIN PLUGIN_DIR CACHE_DIR

PLUGIN_DIR holds the sample plugins. For each transport and mode, with the
operator's facades (`disclosure.toml`): the first list, unfolding, nesting,
the guide and its usage notes (shown once), calling a guide again, folding,
an exclusive facade, and a direct call of a hidden tool. Then facades per
category and per plugin, and (default mode) an unfolded set read by a second
server process with the same key, and not by one with another key. Exits
non-zero on the first failed check.
"""

import json
import os
import re
import shutil
import sys
import tempfile

import anyio
from mcp import Client, StdioServerParameters
from mcp_support import HttpServer

CORRAL, SAMPLES, CACHE = sys.argv[1:4]

DISCLOSURE = """version = 1

[facades.workspace]
description = "Everything for notes and text."
facades = ["notes_kit", "text_kit"]

[facades.notes_kit]
description = "Keep text notes: list, read, write and delete them."
tools = ["notes_*"]
usage_notes = "Writing replaces a note of the same name; deleting asks for approval."

[facades.text_kit]
description = "Work with words and slugs."
categories = ["text"]

[facades.versions_only]
description = "Semantic versions, and nothing else while you work on them."
categories = ["versions"]
exclusive = true
"""


class Session:
    """A client, and the disclosure token it sends back (default mode)."""

    def __init__(self, client):
        self.client = client
        self.token = None

    def meta(self):
        return {"corral/disclosure": self.token} if self.token else None

    async def names(self):
        return sorted(t.name for t in (await self.tools()))

    async def tools(self):
        return (await self.client.list_tools(meta=self.meta())).tools

    async def call(self, name, arguments=None):
        result = await self.client.call_tool(name, arguments or {}, meta=self.meta())
        token = (result.meta or {}).get("corral/disclosure")
        if token:
            self.token = token
        return result


def text(result):
    return result.content[0].text


def plugin_dir(root, disclosure):
    plugins = os.path.join(root, "plugins")
    shutil.copytree(SAMPLES, plugins)
    if disclosure:
        with open(os.path.join(plugins, "disclosure.toml"), "w") as f:
            f.write(disclosure)
    key = os.path.join(root, "key")
    with open(key, "w") as f:
        f.write("d" * 40)
    return plugins, key


def serve(plugins, key, source):
    return ["--plugins", plugins, "--cache-dir", CACHE, "serve", "--no-watch",
            "--approve", "auto", "--disclose", source, "--state-key-file", key]


async def operator_facades(s, label):
    first = await s.names()
    for name in ("workspace", "versions_only", "execute_tool_plan", "execute_code", "sha256",
                 "fetch_url"):
        assert name in first, f"{label}: {name} not in the first list {first}"
    for hidden in ("notes_kit", "text_kit", "notes_list", "semver_compare", "word_count"):
        assert hidden not in first, f"{label}: {hidden} in the first list {first}"

    # Unfold the outer facade: its nested facades appear, folded.
    listing = json.loads(text(await s.call("workspace")))
    assert [f["name"] for f in listing["facades"]] == ["notes_kit", "text_kit"], listing
    names = await s.names()
    assert "notes_kit" in names and "text_kit" in names and "notes_list" not in names, names

    # Unfold a nested one: its tools, with their schemas, and its usage notes.
    listing = json.loads(text(await s.call("notes_kit")))
    assert sorted(t["name"] for t in listing["tools"]) == [
        "notes_delete", "notes_list", "notes_read", "notes_write"], listing
    assert listing["tools"][0]["inputSchema"]["type"] == "object", listing
    assert "replaces a note" in listing["usage_notes"], listing
    tools = {t.name: t for t in await s.tools()}
    assert "notes_list" in tools, sorted(tools)
    guide = tools["notes_kit"].description
    assert guide.startswith("Guide to `notes_kit`") and "replaces a note" in guide, guide
    # The usage notes are said once, in the guide, not in each child.
    for child in ("notes_delete", "notes_list", "notes_read", "notes_write"):
        assert "replaces a note" not in (tools[child].description or ""), child
    # Calling a guide again gives the listing again.
    again = json.loads(text(await s.call("notes_kit")))
    assert again["tools"] == listing["tools"], again

    # Folding the outer facade hides everything inside it.
    await s.call("workspace", {"fold": True})
    names = await s.names()
    assert "notes_kit" not in names and "notes_list" not in names, names
    assert "workspace" in names, names

    # A hidden tool still runs, and says where it lives.
    result = await s.call("notes_list")
    assert not result.is_error, result
    assert any("belongs to `notes_kit`" in c.text for c in result.content), result
    assert (result.meta or {}).get("corral/facade") == "notes_kit", result.meta

    # Exclusive: while unfolded, only it, its tools and the built-ins.
    await s.call("versions_only")
    names = await s.names()
    assert names == sorted(["execute_code", "execute_tool_plan", "semver_bump", "semver_compare",
                            "semver_satisfies", "versions_only"]), f"{label}: {names}"
    await s.call("versions_only", {"fold": True})
    assert await s.names() == first, f"{label}: folding did not restore the first list"


async def generated(connect, root, label, http):
    for source, facade, members in (("category", "notes", 4), ("plugin", "text", 3)):
        plugins, key = plugin_dir(os.path.join(root, source), None)
        args = serve(plugins, key, source)
        server = HttpServer(CORRAL, args) if http else None
        try:
            async with connect(server.url if server else args) as client:
                s = Session(client)
                first = await s.names()
                assert facade in first and "notes_list" not in first, f"{label} {source}: {first}"
                listing = json.loads(text(await s.call(facade)))
                assert len(listing["tools"]) == members, f"{label} {source}: {listing}"
                names = await s.names()
                assert all(t["name"] in names for t in listing["tools"]), f"{label} {source}: {names}"
        finally:
            if server:
                server.stop()


async def across_processes(root):
    """A token issued by one process is read by another with the same key."""
    plugins, key = plugin_dir(os.path.join(root, "replicas"), DISCLOSURE)
    other_key = os.path.join(root, "other-key")
    with open(other_key, "w") as f:
        f.write("o" * 40)
    servers = [HttpServer(CORRAL, serve(plugins, key, "file")) for _ in range(2)]
    servers.append(HttpServer(CORRAL, serve(plugins, other_key, "file")))
    try:
        async with Client(servers[0].url) as a:
            s = Session(a)
            await s.call("versions_only")
            token = s.token
            assert token, "no token in the facade's result"
        async with Client(servers[1].url) as b:
            names = [t.name for t in (await b.list_tools(meta={"corral/disclosure": token})).tools]
            assert "semver_compare" in names and "workspace" not in names, names
        async with Client(servers[2].url) as c:
            names = [t.name for t in (await c.list_tools(meta={"corral/disclosure": token})).tools]
            assert "workspace" in names and "semver_compare" not in names, names
    finally:
        for server in servers:
            server.stop()


async def main():
    with tempfile.TemporaryDirectory() as root:
        for mode in ("default", "legacy"):
            kwargs = {} if mode == "default" else {"mode": "legacy"}
            for transport in ("stdio", "streamable HTTP"):
                label = f"{transport}, {mode} mode"
                base = os.path.join(root, f"{mode}-{transport.split()[-1]}")
                plugins, key = plugin_dir(base, DISCLOSURE)
                server = None
                if transport == "stdio":
                    def connect(args):
                        return Client(StdioServerParameters(command=CORRAL, args=args), **kwargs)
                else:
                    def connect(args):
                        return Client(args, **kwargs)
                try:
                    args = serve(plugins, key, "file")
                    if transport == "stdio":
                        target = args
                    else:
                        server = HttpServer(CORRAL, args)
                        target = server.url
                    async with connect(target) as client:
                        await operator_facades(Session(client), label)
                finally:
                    if server:
                        server.stop()
                await generated(connect, base, label, http=transport != "stdio")
                print(f"python mcp client disclosure over {label}: ok")
        await across_processes(root)
        print("python mcp client disclosure across server processes: ok")


anyio.run(main)
