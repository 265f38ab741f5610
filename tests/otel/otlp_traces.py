"""corral's traces, as an OpenTelemetry collector receives them (issue 30).

    python otlp_traces.py CORRAL PLUGINS CACHE

A small OTLP/HTTP trace receiver, built on the official protobuf
definitions (PyPI `opentelemetry-proto`; no collector installs from the
registries here), takes what `corral serve --http --otlp-endpoint` exports.
It is the receiver of corral's real exporter, not a stand-in for corral.

Three stateless MCP 2026-07-28 requests:
1. `execute_tool_plan` (two waves: `word_count`, then `slugify` of a `$ref`)
   with `traceparent` in `_meta` (SEP-414);
2. `word_count` with `traceparent` in the HTTP header only;
3. `word_count` with no trace context.

Then SIGTERM (the exporter sends what is left as the process exits) and the
checks: (1) and everything under it share the client's trace id, the
`tools/call` span's parent is the client's span, each plan step is a
`corral.call` span under the plan's, and each step has its stages
(`corral.validate`, `corral.gate`, `corral.instantiate`, `corral.run`,
`corral.output`) with the attributes `corral.tool`, `corral.plugin.sha256`,
`corral.fuel`, `corral.outcome`; (2) continues the header's trace; (3)
starts a trace of its own; the resource names the service and the replica.
Prints one line: `otlp traces: ...: ok` or raises.
"""

import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

CORRAL, PLUGINS, CACHE = sys.argv[1:4]
SPANS = []
RESOURCES = []
LOCK = threading.Lock()


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        assert self.path == "/v1/traces", self.path
        assert self.headers["Content-Type"] == "application/x-protobuf", self.headers
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        with LOCK:
            for resource_spans in request.resource_spans:
                RESOURCES.append({a.key: value(a.value) for a in resource_spans.resource.attributes})
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        SPANS.append({
                            "name": span.name,
                            "trace": span.trace_id.hex(),
                            "id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "kind": span.kind,
                            "attributes": {a.key: value(a.value) for a in span.attributes},
                        })
        response = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(response)))
        self.end_headers()
        self.wfile.write(response)

    def log_message(self, *args):
        pass


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def mcp(url, tool, arguments, meta=None, headers=None):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "otlp-test", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
            **(meta or {})}}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool,
        **(headers or {})})
    with urllib.request.urlopen(request, timeout=60) as response:
        text = response.read().decode()
    data = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    result = json.loads(data)["result"]
    assert not result.get("isError"), result
    return result


def main():
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    server = subprocess.Popen(
        [CORRAL, "--plugins", PLUGINS, "--cache-dir", CACHE, "--otlp-endpoint", endpoint,
         "--replica-id", "otlp-replica", "serve", "--no-watch", "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True, env={k: v for k, v in os.environ.items()
                                                if not k.startswith("OTEL_")})
    url = None
    for line in server.stderr:
        match = re.search(r"serving MCP at (http://\S+/mcp)$", line.strip())
        if match:
            url = match.group(1)
            break
    assert url, "the server did not print its address"
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()

    plan_trace, plan_parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    header_trace, header_parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    plan = {"steps": [
        {"id": "words", "tool": "word_count", "arguments": {"text": "one trace per agent turn"}},
        {"id": "slug", "tool": "slugify", "arguments": {"text": "$ref:words.words words"}}],
        "output_steps": ["slug"]}
    result = mcp(url, "execute_tool_plan", plan,
                 meta={"traceparent": f"00-{plan_trace}-{plan_parent}-01", "tracestate": "corral=test"})
    assert "5-words" in json.dumps(result), result
    mcp(url, "word_count", {"text": "header only"},
        headers={"traceparent": f"00-{header_trace}-{header_parent}-01"})
    mcp(url, "word_count", {"text": "no context"})
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=60) == 0, "corral serve exited with an error"
    receiver.shutdown()

    with LOCK:
        spans = list(SPANS)
        resources = list(RESOURCES)
    by_id = {s["id"]: s for s in spans}
    names = sorted({s["name"] for s in spans})

    def children(span, name=None):
        return [s for s in spans if s["parent"] == span["id"] and (name is None or s["name"] == name)]

    # 1. The plan: one trace, under the client's span.
    in_plan = [s for s in spans if s["trace"] == plan_trace]
    roots = [s for s in in_plan if s["name"] == "tools/call execute_tool_plan"]
    assert len(roots) == 1, (names, in_plan)
    root = roots[0]
    assert root["parent"] == plan_parent, root
    assert root["kind"] == 2, f"a server span: {root}"  # SPAN_KIND_SERVER
    assert root["attributes"].get("mcp.method.name") == "tools/call", root
    assert root["attributes"].get("gen_ai.tool.name") == "execute_tool_plan", root
    plan_calls = children(root, "corral.call")
    assert len(plan_calls) == 1 and plan_calls[0]["attributes"]["corral.tool"] == "execute_tool_plan", plan_calls
    steps = children(plan_calls[0], "corral.call")
    assert sorted(s["attributes"]["corral.tool"] for s in steps) == ["slugify", "word_count"], steps
    for step in steps:
        attributes = step["attributes"]
        assert attributes["corral.outcome"] == "ok", step
        assert attributes["corral.plugin"] == "text", step
        assert re.fullmatch(r"[0-9a-f]{64}", attributes["corral.plugin.sha256"]), step
        assert attributes["corral.fuel"] > 0, step
        stages = {s["name"] for s in children(step)}
        assert {"corral.validate", "corral.gate"} <= stages, (step, stages)
        sandboxed = [s for s in spans if by_id.get(s["parent"], {}).get("parent") == step["id"]]
        sandboxed = {s["name"] for s in sandboxed} | stages
        # A fresh instance is instantiated in the call; one made ahead of it
        # (instances made ahead, issue 51) is bound to it instead.
        assert {"corral.run", "corral.output"} <= sandboxed, (step, sandboxed)
        assert sandboxed & {"corral.instantiate", "corral.bind"}, (step, sandboxed)
    # Every span of the request is in the trace, none elsewhere.
    def descendants(span):
        found = [span]
        for child in children(span):
            found += descendants(child)
        return found
    assert len(descendants(root)) == len(in_plan), (len(descendants(root)), len(in_plan))

    # 2. The HTTP header's trace.
    header_roots = [s for s in spans if s["trace"] == header_trace and s["name"] == "tools/call word_count"]
    assert len(header_roots) == 1 and header_roots[0]["parent"] == header_parent, header_roots

    # 3. No context: a trace of its own, with no parent.
    others = [s for s in spans if s["name"] == "tools/call word_count" and s["trace"] != header_trace]
    assert len(others) == 1 and others[0]["parent"] == "", others
    assert others[0]["trace"] not in (plan_trace, header_trace), others

    assert any(r.get("service.name") == "corral" and r.get("service.instance.id") == "otlp-replica"
               for r in resources), resources
    print(f"otlp traces: {len(spans)} spans received ({len(in_plan)} in the plan's trace, "
          f"{len(steps)} steps under it), header and fresh traces: ok")


main()
