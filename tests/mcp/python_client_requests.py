"""A guest's requests to its client (contract 0.3.0 `elicit`, `sample`,
`roots`, and several at once with `ask`) with the official Python client
(`mcp` on PyPI) and its callbacks, over stdio and streamable HTTP.

Usage: python_client_requests.py CORRAL_BIN REFERENCE_TOOLS_WASM CACHE_DIR

In both modes, every kind of part arrives as its content block (a linked
`corral://` file as its link, read back with `resources/read` by its tenant
and no other), and the callbacks answer the same way: the elicitation callback
sees the plugin's framed message and answers accept, decline or cancel;
the sampling callback sees the warning in `_meta` and answers; the roots
callback lists the workspace; all three asked at once are answered. In
`legacy` mode (a session) the server asks in line; in the default mode
(2026-07-28, stateless) it answers input-required results, and the client
retries with the answers (as many rounds as the tool asks). A tool that
may write and is not idempotent is asked in line, but never by a retry
(which would run it twice). A tool that needs sampling is refused before
it runs when the client cannot sample. Exits non-zero on the first failed
check.
"""

import os
import shutil
import sys
import tempfile

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp_support import HttpServer, User, is_error, text

CORRAL, REFERENCE, CACHE = sys.argv[1:4]

POLICY = """version = 1
[[filesystem]]
host = "data"
guest = "/data"
access = "read-write"

[client]
elicitation = true
roots = true
sampling = { max_tokens = 100, calls_per_call = 2, required_by = ["test_missing_capability"] }
"""


class Model:
    """The scripted model behind the sampling callback."""

    def __init__(self):
        self.asked = []

    async def __call__(self, context, params):
        from mcp_types import CreateMessageResult, TextContent

        self.asked.append(params)
        question = params.messages[0].content.text
        return CreateMessageResult(role="assistant", model="scripted",
                                   content=TextContent(type="text", text=f"echo {question}"))


async def roots(context):
    from mcp_types import ListRootsResult, Root

    return ListRootsResult(roots=[Root(uri="file:///work/a", name="a")])


async def session_checks(client, user, model, label):
    user.plan(("accept", {"name": "Ada"}))
    result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
    assert text(result) == "Hello, Ada!", f"{label}: {result}"
    asked = user.asked[0].message
    assert asked.startswith("The tool `test_elicitation` (plugin `reference_tools`) asks:"), asked
    for action, want in (("decline", "The user declined."), ("cancel", "The user cancelled.")):
        user.plan((action, None))
        result = await client.call_tool("test_elicitation", {"message": "Again?"})
        assert text(result) == want, f"{label} {action}: {result}"

    result = await client.call_tool("test_sampling", {"prompt": "2+2?"})
    assert text(result) == "LLM response: echo 2+2?", f"{label}: {result}"
    meta = model.asked[-1].meta
    warning = (meta.model_dump() if hasattr(meta, "model_dump") else dict(meta or {})).get("corral/warning", "")
    assert "plugin" in warning, f"{label}: no warning in the sampling request's _meta: {meta!r}"

    result = await client.call_tool("test_list_roots", {})
    assert text(result) == "roots: file:///work/a", f"{label}: {result}"

    user.plan(("accept", {"name": "Bo"}))
    result = await client.call_tool("test_ask_all", {})
    assert text(result) == 'name "Bo"; model echo What is 2+2?; 1 roots', f"{label}: {result}"


async def parts_checks(client, label):
    result = await client.call_tool("test_multiple_content_types", {})
    kinds = [block.type for block in result.content]
    assert kinds == ["text", "image", "resource"], f"{label}: {kinds}"
    assert result.content[1].mime_type == "image/png", f"{label}: {result.content[1]}"
    result = await client.call_tool("test_audio_content", {})
    assert result.content[0].type == "audio" and result.content[0].mime_type == "audio/wav", label
    # A linked corral:// file: the link alone, read back by its tenant only.
    mine = {"corral/context": {"tenant": "t1"}}
    result = await client.call_tool("test_resource_link", {}, meta=mine)
    kinds = [block.type for block in result.content]
    assert kinds == ["text", "resource_link"], f"{label}: {kinds}"
    uri = str(result.content[1].uri)
    read = await client.read_resource(uri, meta=mine, cache_mode="bypass")
    assert read.contents[0].text == "all is well", f"{label}: {read}"
    try:
        other = await client.read_resource(uri, meta={"corral/context": {"tenant": "t2"}},
                                           cache_mode="bypass")
    except MCPError as err:
        # Resource not found: -32002 before 2026-07-28, -32602 since (SEP-2164).
        assert err.error.code in (-32002, -32602), f"{label}: {err.error}"
        assert err.error.message.startswith("no resource `corral://"), f"{label}: {err.error}"
    else:
        raise AssertionError(f"{label}: another tenant read the file: {other}")


async def rounds_checks(client, user, label):
    user.plan(("accept", {"name": "Ada"}), ("accept", {"color": "teal"}))
    result = await client.call_tool("test_input_required_result_multi_round", {})
    assert text(result) == "Ada likes teal", f"{label}: {result}"
    user.plan(("accept", {"name": "Eve"}))
    result = await client.call_tool("remember_name", {})
    assert is_error(result) and "retry of the whole call" in text(result), f"{label}: {result}"


async def inline_write_checks(client, user, label):
    user.plan(("accept", {"name": "Eve"}))
    result = await client.call_tool("remember_name", {})
    assert text(result) == "remembered Eve", f"{label}: {result}"


async def refused_without_sampling(target, label):
    async with Client(target) as plain:
        try:
            result = await plain.call_tool("test_missing_capability", {})
        except MCPError as err:
            assert err.error.code == -32021, f"{label}: {err.error}"
        else:
            raise AssertionError(f"{label}: a client that cannot sample was served: {result}")


async def main():
    with tempfile.TemporaryDirectory() as root:
        plugins = os.path.join(root, "plugins")
        os.mkdir(plugins)
        os.mkdir(os.path.join(plugins, "data"))
        shutil.copy(REFERENCE, os.path.join(plugins, "reference_tools.wasm"))
        with open(os.path.join(plugins, "reference_tools.policy.toml"), "w") as f:
            f.write(POLICY)
        args = ["--plugins", plugins, "--cache-dir", CACHE, "serve", "--no-watch"]
        for mode in ("legacy", "default"):
            kwargs = {"mode": "legacy"} if mode == "legacy" else {}
            for transport in ("stdio", "streamable HTTP"):
                label = f"{transport}, {mode} mode"
                server = HttpServer(CORRAL, args) if transport != "stdio" else None
                target = server.url if server else StdioServerParameters(command=CORRAL, args=args)
                try:
                    user, model = User(), Model()
                    async with Client(target, elicitation_callback=user, sampling_callback=model,
                                      list_roots_callback=roots, **kwargs) as client:
                        await session_checks(client, user, model, label)
                        await parts_checks(client, label)
                        if mode == "legacy":
                            await inline_write_checks(client, user, label)
                        else:
                            await rounds_checks(client, user, label)
                    await refused_without_sampling(target, label)
                finally:
                    if server:
                        server.stop()
                print(f"python mcp client requests over {label}: ok")


anyio.run(main)
