"""What the Python MCP client checks share: a `corral serve --http` process,
the scripted person behind an elicitation callback, and reading results.
Imported by the scripts beside it (run as `python tests/mcp/NAME.py`)."""

import re
import subprocess


class HttpServer:
    """`CORRAL ARGS... --http 127.0.0.1:0`, its address read from the line it
    prints once it serves."""

    def __init__(self, corral, args):
        self.process = subprocess.Popen([corral, *args, "--http", "127.0.0.1:0"],
                                        stderr=subprocess.PIPE, text=True)
        self.url = None
        for line in self.process.stderr:
            match = re.search(r"serving MCP at (http://\S+/mcp)$", line.strip())
            if match:
                self.url = match.group(1)
                break
        assert self.url, "the HTTP server did not print its address"

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=60)


class User:
    """The scripted person behind the elicitation callback: answers in the
    order planned, and remembers what it was asked."""

    def __init__(self):
        self.planned = []
        self.asked = []

    def plan(self, *answers):
        self.planned = list(answers)
        self.asked = []

    async def __call__(self, context, params):
        from mcp_types import ElicitResult

        self.asked.append(params)
        assert self.planned, f"asked with nothing planned: {params.message!r}"
        action, content = self.planned.pop(0)
        return ElicitResult(action=action, content=content)


def is_error(result):
    """Whether a `tools/call` result is a tool error."""
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def text(result):
    """The text of a result's first content part."""
    return result.content[0].text
