"""Write corral tools in Python.

A tool is a plain function with type hints. ``@tool`` registers it; the
function's docstring is the tool description, the ``Args:`` section of the
docstring gives each parameter's description, and the type hints become the
JSON Schema the host validates calls against::

    from corral_tool import tool, InvalidArguments

    @tool(category="text", idempotent=True)
    def shout(text: str, times: int = 1) -> dict:
        \"\"\"Upper-case a text.

        Args:
            text: The text to shout.
            times: How often to repeat it.
        \"\"\"
        if times < 1:
            raise InvalidArguments("times must be at least 1")
        return {"text": " ".join([text.upper()] * times)}

    from corral_tool import Tool  # the export componentize-py looks for

Build with ``componentize-py -d wit -w corral:tool/plugin@0.3.0 componentize
app -p <this directory> -o app.wasm`` (``wit`` is corral's ``wit/`` folder:
contract 0.3.0).

What the helper does for you:

- ``describe`` lists every ``@tool`` function of the component with its schema
  and metadata (the same defaults as the Rust SDK).
- ``call`` dispatches by name, parses the arguments, checks required, unknown
  and mistyped top-level fields (the host has validated them against the
  schema already; this guards the tool against a host that did not), passes
  them as keyword arguments and returns the result: ``None`` as no part, an
  ``Output`` (or a ``Part``) as its parts, anything else as one JSON part
  (the structured result, which plans reference with ``$ref``).
- ``InvalidArguments`` and ``ExecutionFailed`` raised by the function become
  the contract's ``tool-error`` cases. Any other exception is a bug: it
  propagates, the guest traps with the traceback on stderr, and the host
  reports a crash of the tool and keeps serving.
- ``log``, ``progress`` and ``request_approval`` call the host; ``elicit``,
  ``sample``, ``roots`` and ``ask`` ask the MCP client that made the call,
  as the plugin's policy (``[client]``) allows.

A result of several parts (an image, audio, a resource)::

    from corral_tool import Output, Part

    @tool(idempotent=True)
    def chart(values: list[float]) -> Output:
        \"\"\"Draw the values.\"\"\"
        png = render(values)
        return Output(Part.text(f"{len(values)} bars"), Part.image("image/png", png),
                      Part.json({"values": values}))

Type hints understood: ``str``, ``int``, ``float``, ``bool``, ``list[T]``,
``dict[str, T]``, ``dict``, ``Optional[T]`` / ``T | None``, ``Literal[...]``
and ``Any``. A parameter with a default is optional (its default appears in
the schema). A parameter annotated ``Context`` receives the call context and
is not part of the schema.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Optional

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host
from wit_world.imports import types as wit

from ._names import name_problem
from ._client import ClientError, Request, ask, elicit, roots, sample
from ._parts import Output, Part

__all__ = [
    "ClientError",
    "Context",
    "ExecutionFailed",
    "InvalidArguments",
    "Output",
    "Part",
    "Request",
    "Tool",
    "ToolError",
    "ask",
    "elicit",
    "log",
    "progress",
    "request_approval",
    "roots",
    "sample",
    "tool",
]


class Context(dict):
    """The call context: the out-of-band keys (tenant, user id, ...) the host
    let through to this plugin, as a ``dict`` of ``str`` to ``str``. Declare a
    parameter of this type to receive it; it never appears in the schema."""


class ToolError(Exception):
    """Base of the errors a tool reports through the contract.

    ``message`` says what went wrong and how to fix it (the model reads it);
    ``code`` is an optional tool-defined 32-bit integer; ``retryable`` says
    the same call may succeed if tried again (the host retries only
    idempotent tools, and only such errors)."""

    def __init__(self, message: str, code: Optional[int] = None, retryable: bool = False):
        super().__init__(message)
        self.message = message
        self.code = code
        self.retryable = retryable


class InvalidArguments(ToolError):
    """The arguments cannot be used; the caller should fix them (WIT
    ``invalid-arguments``)."""


class ExecutionFailed(ToolError):
    """The work failed (WIT ``execution-failed``)."""


@dataclass
class _Registered:
    name: str
    function: Callable[..., Any]
    schema: dict
    spec: wit.ToolSpec
    context_param: Optional[str]
    params: dict = field(default_factory=dict)


_TOOLS: dict[str, _Registered] = {}

_LATENCY = {
    "fast": wit.LatencyHint.FAST,
    "medium": wit.LatencyHint.MEDIUM,
    "slow": wit.LatencyHint.SLOW,
}
_RETURN = {"to_llm": wit.ReturnBehavior.TO_LLM, "immediate": wit.ReturnBehavior.IMMEDIATE}


def tool(
    function: Optional[Callable[..., Any]] = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    category: str = "",
    keywords: tuple[str, ...] | list[str] = (),
    version: str = "",
    idempotent: bool = False,
    sequential: bool = False,
    requires_approval: bool = False,
    latency: str = "fast",
    return_behavior: str = "to_llm",
    priority: int = 50,
    depends_on: tuple[str, ...] | list[str] = (),
    output_schema: Optional[dict] = None,
):
    """Registers a function as a tool of this plugin; use as ``@tool`` or
    ``@tool(...)``.

    Options (defaults as in the Rust SDK): ``name`` (the function name,
    ``[A-Za-z0-9_]{1,64}``, not ``execute_tool_plan``, ``tool_search`` or
    ``execute_code``),
    ``description`` (the docstring up to ``Args:``),
    ``category`` (``""``), ``keywords`` (none), ``version`` (``""``),
    ``idempotent`` (False), ``sequential`` (False: calls may run in
    parallel), ``requires_approval`` (False), ``latency`` (``"fast"``,
    ``"medium"`` or ``"slow"``), ``return_behavior`` (``"to_llm"`` or
    ``"immediate"``), ``priority`` (0 to 100 among similar tools, 50),
    ``depends_on`` (the tools whose results this one usually consumes,
    none) and ``output_schema`` (a JSON Schema ``dict`` the host checks
    every structured result against, and MCP clients get as
    ``outputSchema``; none).

    Raises ``TypeError`` naming the function when the build imports the
    module, for an invalid or duplicate name, a missing description, a
    parameter without a type hint or with an unsupported one, an unknown
    latency or return behavior, or a priority outside 0 to 100.
    """

    def register(f: Callable[..., Any]) -> Callable[..., Any]:
        tool_name = name or f.__name__
        where = f"@tool {f.__module__}.{f.__qualname__}"
        problem = name_problem(tool_name)
        if problem is not None:
            raise TypeError(f"{where}: {problem}")
        if tool_name in _TOOLS:
            raise TypeError(f"{where}: a tool named {tool_name!r} is already registered")
        summary, arg_docs = _parse_docstring(inspect.getdoc(f) or "")
        text = description or summary
        if not text.strip():
            raise TypeError(f"{where}: needs a docstring or description=...; the model reads it")
        if latency not in _LATENCY:
            raise TypeError(f"{where}: latency must be one of {', '.join(_LATENCY)}")
        if return_behavior not in _RETURN:
            raise TypeError(f"{where}: return_behavior must be 'to_llm' or 'immediate'")
        if not (isinstance(priority, int) and 0 <= priority <= 100):
            raise TypeError(f"{where}: priority must be an integer from 0 to 100")
        schema, context_param = _signature_schema(where, f, arg_docs)
        spec = wit.ToolSpec(
            name=tool_name,
            description=text,
            parameters=json.dumps(schema),
            metadata=wit.ToolMetadata(
                category=category,
                keywords=list(keywords),
                version=version,
                idempotent=idempotent,
                parallelizable=not sequential,
                latency=_LATENCY[latency],
                requires_approval=requires_approval,
                return_behavior=_RETURN[return_behavior],
                priority=priority,
                depends_on=list(depends_on),
                output_schema=None if output_schema is None else json.dumps(output_schema),
                resilience=None,
            ),
        )
        _TOOLS[tool_name] = _Registered(tool_name, f, schema, spec, context_param)
        return f

    if function is not None:
        return register(function)
    return register


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Splits a Google-style docstring into the summary (everything before
    ``Args:``) and the description of each argument."""
    lines = doc.splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    current = None
    in_args = False
    for line in lines:
        stripped = line.strip()
        if re.match(r"^(Args|Arguments|Parameters):$", stripped):
            in_args = True
            continue
        if in_args:
            if re.match(r"^(Returns|Raises|Yields|Examples?|Notes?):$", stripped):
                in_args = False
                current = None
                continue
            match = re.match(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", stripped)
            if match and line.startswith((" ", "\t")) and len(line) - len(line.lstrip()) <= 8:
                current = match.group(1)
                args[current] = match.group(2)
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
            continue
        summary.append(line)
    return "\n".join(summary).strip(), args


def _signature_schema(where: str, f: Callable[..., Any], docs: dict[str, str]):
    hints = typing.get_type_hints(f)
    properties: dict[str, Any] = {}
    required: list[str] = []
    context_param = None
    for param in inspect.signature(f).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs are not supported; name every parameter")
        if param.name not in hints:
            raise TypeError(f"{where}: parameter {param.name!r} needs a type hint")
        hint = hints[param.name]
        if hint is Context:
            context_param = param.name
            continue
        try:
            prop = _type_schema(hint)
        except TypeError as e:
            raise TypeError(f"{where}: parameter {param.name!r}: {e}") from None
        if param.name in docs:
            prop["description"] = docs[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        else:
            try:
                json.dumps(param.default)
                prop["default"] = param.default
            except (TypeError, ValueError):
                pass
        properties[param.name] = prop
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema, context_param


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type_schema(hint: Any) -> dict:
    if hint is Any:
        return {}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if hint is list:
        return {"type": "array"}
    if hint is dict:
        return {"type": "object"}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is list:
        return {"type": "array", "items": _type_schema(args[0])}
    if origin is dict:
        if args and args[0] is not str:
            raise TypeError("dict keys must be str (JSON object keys are strings)")
        return {"type": "object", "additionalProperties": _type_schema(args[1])} if args else {"type": "object"}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1 and len(args) == 2:
            inner = _type_schema(options[0])
            return {"anyOf": [inner, {"type": "null"}]}
        return {"anyOf": [_type_schema(a) for a in args]}
    if hint is type(None):
        return {"type": "null"}
    raise TypeError(f"type {hint!r} is not supported; use str, int, float, bool, list, dict, Optional, Literal or Any")


def _check_type(name: str, schema: dict, value: Any) -> None:
    expected = schema.get("type")
    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    if expected in checks and not checks[expected](value):
        raise InvalidArguments(f"invalid argument {name!r}: expected {expected}, got {json.dumps(value)[:80]}")


def _decode(registered: _Registered, arguments: str) -> dict:
    try:
        args = json.loads(arguments)
    except ValueError as e:
        raise InvalidArguments(f"arguments are not valid JSON: {e}") from None
    if not isinstance(args, dict):
        raise InvalidArguments("arguments must be a JSON object")
    properties = registered.schema["properties"]
    for field_name in registered.schema.get("required", []):
        if field_name not in args:
            raise InvalidArguments(f"missing argument {field_name!r}")
    for field_name, value in args.items():
        if field_name not in properties:
            raise InvalidArguments(
                f"unknown argument {field_name!r}; expected one of: {', '.join(properties)}"
            )
        _check_type(field_name, properties[field_name], value)
    return args


def _wit_error(error: ToolError) -> Err:
    info = wit.ErrorInfo(message=error.message, code=error.code, retryable=error.retryable)
    if isinstance(error, InvalidArguments):
        return Err(wit.ToolError_InvalidArguments(info))
    return Err(wit.ToolError_ExecutionFailed(info))


class Tool(exports.Tool):
    """The ``tool`` interface export: import it into the app module
    (``from corral_tool import Tool``) and componentize-py exports it."""

    def describe(self) -> list[wit.ToolSpec]:
        return [registered.spec for registered in _TOOLS.values()]

    def call(self, name: str, arguments: str, context: list[tuple[str, str]]) -> list[wit.Part]:
        registered = _TOOLS.get(name)
        if registered is None:
            raise _wit_error(
                InvalidArguments(f"unknown tool {name!r}; this plugin has: {', '.join(_TOOLS)}")
            )
        try:
            kwargs = _decode(registered, arguments)
            if registered.context_param:
                kwargs[registered.context_param] = Context(context)
            result = registered.function(**kwargs)
        except ToolError as e:
            raise _wit_error(e) from None
        try:
            # A tool that returns nothing succeeds with no part: the empty
            # result (AgentEnsemble's result contract), not "null".
            if result is None:
                return []
            if isinstance(result, Output):
                return result._wit()
            if isinstance(result, Part):
                return Output(result)._wit()
            return Output(Part.json(result))._wit()
        except (TypeError, ValueError) as e:
            raise _wit_error(
                ExecutionFailed(f"tool {name!r} returned a value that is not JSON-serializable: {e}")
            ) from None


class _Log:
    """``log.info("...")`` and friends: write to the host's log, tagged with the
    plugin and tool. Never fails."""

    def trace(self, message: str) -> None:
        host.log(wit.LogLevel.TRACE, str(message))

    def debug(self, message: str) -> None:
        host.log(wit.LogLevel.DEBUG, str(message))

    def info(self, message: str) -> None:
        host.log(wit.LogLevel.INFO, str(message))

    def warn(self, message: str) -> None:
        host.log(wit.LogLevel.WARN, str(message))

    def error(self, message: str) -> None:
        host.log(wit.LogLevel.ERROR, str(message))


log = _Log()


def progress(message: str) -> None:
    """Reports progress of the current call (MCP progress notifications when
    the client asked for them; the host log otherwise). Never fails."""
    host.progress(str(message))


def request_approval(description: str) -> tuple[str, Any]:
    """Asks a reviewer before a dangerous action (WIT ``request-approval``).

    Returns ``("continue", None)``, ``("exit-early", reason)`` or
    ``("edit", arguments)`` where ``arguments`` is the revised arguments
    ``dict``, already validated by the host against the tool's schema."""
    decision = host.request_approval(str(description))
    if isinstance(decision, wit.ApprovalDecision_ExitEarly):
        return ("exit-early", decision.value)
    if isinstance(decision, wit.ApprovalDecision_Edit):
        return ("edit", json.loads(decision.value))
    return ("continue", None)
