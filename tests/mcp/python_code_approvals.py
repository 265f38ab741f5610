"""Code mode's approvals over MCP with the official Python client (`mcp` on
PyPI): a script's gated calls, in the client's default mode (2026-07-28: the
run stops at the gated call, the input-required result's state carries the
script's journal, and the retry replays it) and in `legacy` mode
(elicitation during the run), over stdio and streamable HTTP.

Usage: python_code_approvals.py CORRAL_BIN NOTES_WASM CACHE_DIR

The `notes` sample, with a policy that gates `notes_delete` only and audits
every execution. For each transport and mode: a script writes a note and
deletes it; the write runs exactly once (the audit log and the disk say so),
whatever the user answers: accept, decline (the script catches the
denial) or cancel; a script with two gated calls is asked twice; "always
for this build" holds for the next script; and
Math.random() and Date.now() on the retry are what the run that wrote the
note saw. In the default mode also: a tampered, a client-made, a replayed
state and a retry with other code are refused, and a replica with the same
key finishes a run another process began. Exits non-zero on the first
failed check.
"""

import json
import os
import shutil
import sys
import tempfile

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp_support import HttpServer, User, is_error, text

CORRAL, NOTES, CACHE = sys.argv[1:4]
KEY = "k" * 48

POLICY = """version = 1
[[filesystem]]
host = "notes-data"
guest = "/notes"
access = "read-write"
[approval]
require = ["notes_delete"]
[resilience]
audit = { level = "all" }
"""

# Writes a note whose text holds Math.random() and Date.now(), then deletes
# it (gated), and returns what it wrote and how the delete went.
WRITE_THEN_DELETE = """const text = `r=${Math.random()} t=${Date.now()}`;
await tools.notes_write({name: NAME, text});
let deleted;
try { deleted = (await tools.notes_delete({name: NAME})).deleted; }
catch (e) { deleted = e.kind; }
return {text, deleted};"""

TWO_DELETES = """await tools.parallel([["notes_write", {name: "a", text: "1"}], ["notes_write", {name: "b", text: "2"}]]);
const a = await tools.notes_delete({name: "a"});
const b = await tools.notes_delete({name: "b"});
return [a.deleted, b.deleted];"""


def script(name):
    return WRITE_THEN_DELETE.replace("NAME", json.dumps(name))


class World:
    """The plugin directory, the notes on disk and the audit log."""

    def __init__(self, root):
        self.plugins = os.path.join(root, "plugins")
        self.notes = os.path.join(self.plugins, "notes-data")
        os.makedirs(self.notes)
        shutil.copy(NOTES, os.path.join(self.plugins, "notes.wasm"))
        with open(os.path.join(self.plugins, "notes.policy.toml"), "w") as f:
            f.write(POLICY)
        self.key = os.path.join(root, "key")
        with open(self.key, "w") as f:
            f.write(KEY)
        self.audit = os.path.join(root, "audit.jsonl")

    def args(self, key=None, audit=None):
        return ["--plugins", self.plugins, "--cache-dir", CACHE, "serve", "--no-watch",
                "--state-key-file", key or self.key, "--audit-log", audit or self.audit]

    def note(self, name):
        path = os.path.join(self.notes, f"{name}.md")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return f.read()

    def executions(self, tool, audit=None):
        """How many times `tool` ran, by the audit log's `call` lines."""
        count = 0
        with open(audit or self.audit) as f:
            for line in f:
                record = json.loads(line)
                if record.get("event") == "call" and record.get("tool") == tool:
                    count += 1
        return count


async def decisions(client, user, world, label):
    # Accept: asked once, about the delete, naming the script; the write ran
    # once, and the note is gone.
    user.plan(("accept", {"decision": "allow"}))
    result = await client.call_tool("execute_code", {"code": script("todo")})
    assert not is_error(result), f"{label}: {result}"
    out = json.loads(text(result))
    assert out["result"]["deleted"] == "todo", f"{label}: {out}"
    assert len(user.asked) == 1, f"{label}: asked {len(user.asked)} times"
    question = user.asked[0].message
    assert "tool:      notes_delete" in question, question
    assert "call 2 of a script (execute_code, sha256 " in question, question
    assert world.note("todo") is None, f"{label}: the note is still there"
    assert world.executions("notes_write") == 1, f"{label}: the write ran again"
    assert world.executions("notes_delete") == 1, label

    # Decline: the script catches the denial; the note stays, holding the
    # text the script returns, so the retry saw the first run's random
    # number and clock.
    user.plan(("decline", None))
    result = await client.call_tool("execute_code", {"code": script("kept")})
    assert not is_error(result), f"{label}: {result}"
    out = json.loads(text(result))
    assert out["result"]["deleted"] == "denied", f"{label}: {out}"
    assert world.note("kept") == out["result"]["text"], f"{label}: {world.note('kept')!r} {out}"
    assert world.executions("notes_write") == 2, f"{label}: the write ran again"
    assert world.executions("notes_delete") == 1, label

    # Cancel: the same, as a dismissal.
    user.plan(("cancel", None))
    result = await client.call_tool("execute_code", {"code": script("dismissed")})
    out = json.loads(text(result))
    assert out["result"]["deleted"] == "denied", f"{label}: {out}"
    assert world.note("dismissed") == out["result"]["text"], label
    assert world.executions("notes_write") == 3, f"{label}: the write ran again"

    # Two gated calls: two questions, each once.
    user.plan(("accept", {"decision": "allow"}), ("accept", {"decision": "allow"}))
    result = await client.call_tool("execute_code", {"code": TWO_DELETES})
    assert not is_error(result), f"{label}: {result}"
    assert json.loads(text(result))["result"] == ["a", "b"], text(result)
    assert len(user.asked) == 2, f"{label}: asked {len(user.asked)} times"
    assert world.executions("notes_write") == 5, f"{label}: a write ran again"
    assert world.executions("notes_delete") == 3, label
    assert world.note("a") is None and world.note("b") is None, label


async def always(client, user, label):
    """"Always for this build" given inside a script holds for later scripts
    (and direct calls) as it does for direct calls."""
    user.plan(("accept", {"decision": "allow_always"}))
    result = await client.call_tool("execute_code", {"code": script("first")})
    assert json.loads(text(result))["result"]["deleted"] == "first", f"{label}: {result}"
    assert len(user.asked) == 1, label
    user.plan()
    result = await client.call_tool("execute_code", {"code": script("second")})
    assert json.loads(text(result))["result"]["deleted"] == "second", f"{label}: {result}"
    assert not user.asked, f"{label}: asked again: {user.asked}"


async def states(client, world, label, replica_url):
    """The request state, driven by hand."""
    session = client.session
    code = {"code": script("s")}
    asked = await session.call_tool("execute_code", code, allow_input_required=True)
    assert getattr(asked, "result_type", None) == "input_required", f"{label}: {asked}"
    state = asked.request_state
    # The state is encrypted where it holds the journal: no result is readable.
    assert "notes_write" not in state and "r=" not in state, state
    yes = {"approval": {"action": "accept", "content": {"decision": "allow"}}}

    async def refused(arguments, request_state, needle):
        try:
            result = await client.call_tool("execute_code", arguments, input_responses=yes,
                                            request_state=request_state)
        except MCPError as err:
            assert needle in str(err), f"{label}: {err}"
            return
        raise AssertionError(f"{label}: accepted ({needle}): {result}")

    middle = len(state) // 2
    altered = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1:]
    await refused(code, altered, "not one this server issued")
    await refused(code, "rs2.forged.by-the-client", "not one this server issued")
    await refused({"code": script("s") + "\n// changed"}, state, "other arguments")
    writes = world.executions("notes_write")
    result = await client.call_tool("execute_code", code, input_responses=yes, request_state=state)
    assert not is_error(result), f"{label}: {result}"
    assert json.loads(text(result))["result"]["deleted"] == "s", text(result)
    assert world.executions("notes_write") == writes, f"{label}: the write ran again"
    await refused(code, state, "already used")

    if replica_url is None:
        return
    # Another process with the same key finishes a run this one began.
    asked = await session.call_tool("execute_code", {"code": script("r")}, allow_input_required=True)
    async with Client(replica_url, elicitation_callback=User()) as replica:
        result = await replica.call_tool("execute_code", {"code": script("r")}, input_responses=yes,
                                         request_state=asked.request_state)
        assert not is_error(result), f"{label}: the replica refused: {result}"
        assert json.loads(text(result))["result"]["deleted"] == "r", text(result)
    assert world.note("r") is None, label


async def main():
    user = User()
    for mode in ("default", "legacy"):
        modern = mode == "default"
        kwargs = {} if modern else {"mode": "legacy"}
        for transport in ("stdio", "streamable HTTP"):
            label = f"{transport}, {mode} mode"
            with tempfile.TemporaryDirectory() as root:
                world = World(root)
                servers = []
                try:
                    if transport == "stdio":
                        target = StdioServerParameters(command=CORRAL, args=world.args())
                        replica = None
                    else:
                        servers = [HttpServer(CORRAL, world.args())]
                        if modern:
                            servers.append(HttpServer(CORRAL, world.args(audit=world.audit + ".b")))
                        target = servers[0].url
                        replica = servers[1].url if modern else None
                    async with Client(target, elicitation_callback=user, **kwargs) as client:
                        await decisions(client, user, world, label)
                        if modern:
                            await states(client, world, label, replica)
                        await always(client, user, label)
                finally:
                    for server in servers:
                        server.stop()
            print(f"python mcp client code-mode approvals over {label}: ok")


anyio.run(main)
