"""Asking the MCP client that made the call (contract 0.3.0 ``client``):
the person (``elicit``), the client's model (``sample``) and its workspace
roots (``roots``), or several at once (``ask``). Each needs a grant in the
tool's policy (``[client]``); a request without one raises ``ClientError``
of kind ``denied`` at once.

A stateless (MCP 2026-07-28) client outside a task is asked by a retry:
the call stops where it asks, and the client's retry runs the tool again
from the start, when the same requests get its answers. Ask before acting,
and ask the same things in the same order each run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional, Union

from componentize_py_types import Err
from wit_world.imports import client as wit
from wit_world.imports import types

_KINDS = {
    wit.ClientError_Denied: "denied",
    wit.ClientError_Unsupported: "unsupported",
    wit.ClientError_OverBudget: "over-budget",
    wit.ClientError_Failed: "failed",
}


class ClientError(Exception):
    """Why the client could not answer: ``kind`` is ``denied`` (no grant;
    the message names it), ``unsupported`` (no client can answer, or it
    lacks the capability), ``over-budget`` (a sampling limit) or ``failed``
    (the client failed, the answer did not fit, or the wait ran out)."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def _error(err: Any) -> ClientError:
    return ClientError(_KINDS.get(type(err), "failed"), str(getattr(err, "value", err)))


@dataclass
class Sampled:
    """The model's answer: its ``text`` (untrusted), the ``model`` and why it
    stopped, if the client says."""

    text: str
    model: str
    stop_reason: Optional[str]


@dataclass
class Request:
    """One request of ``ask``: make it with ``Request.elicit``,
    ``Request.sample`` or ``Request.roots``; ``key`` names it (1 to 64 ASCII
    letters, digits, ``_``, ``-`` or ``.``; an MCP 2026-07-28 client sees it
    as the key of ``inputRequests``; the host names it when ``None``)."""

    request: Any
    key: Optional[str] = None

    @staticmethod
    def elicit(message: str, schema: dict, key: Optional[str] = None) -> "Request":
        """As ``elicit``."""
        return Request(wit.Request_Elicit(wit.ElicitRequest(message, json.dumps(schema))), key)

    @staticmethod
    def sample(
        messages: Union[str, list[tuple[str, str]]], max_tokens: int, key: Optional[str] = None
    ) -> "Request":
        """As ``sample``."""
        return Request(
            wit.Request_Sample(wit.SampleRequest(_messages(messages), None, max_tokens)), key
        )

    @staticmethod
    def roots(key: Optional[str] = None) -> "Request":
        """As ``roots``."""
        return Request(wit.Request_Roots(), key)


def _messages(messages: Union[str, list[tuple[str, str]]]) -> list[Any]:
    if isinstance(messages, str):
        messages = [("user", messages)]
    roles = {"user": types.Role.USER, "assistant": types.Role.ASSISTANT}
    out = []
    for role, text in messages:
        if role not in roles:
            raise ValueError(f"role {role!r} is not 'user' or 'assistant'")
        out.append(wit.SamplingMessage(roles[role], wit.SamplingContent_Text(str(text))))
    return out


def _elicited(answer: Any) -> tuple[str, Optional[dict]]:
    if isinstance(answer, wit.ElicitAnswer_Accept):
        return ("accept", json.loads(answer.value))
    if isinstance(answer, wit.ElicitAnswer_Decline):
        return ("decline", None)
    return ("cancel", None)


def _sampled(sampled: Any) -> Sampled:
    return Sampled(sampled.text, sampled.model, sampled.stop_reason)


def _roots(roots: list[Any]) -> list[tuple[str, Optional[str]]]:
    return [(root.uri, root.name) for root in roots]


def elicit(message: str, schema: dict) -> tuple[str, Optional[dict]]:
    """Asks the person for input: ``schema`` is a JSON Schema ``dict`` of an
    object whose properties are strings, numbers, integers, booleans or
    string enums (MCP's form elicitation). Returns ``("accept", answers)``
    (checked against ``schema`` by the host), ``("decline", None)`` or
    ``("cancel", None)``. Needs ``[client] elicitation = true``; raises
    ``ClientError`` otherwise, or when no one can answer."""
    try:
        return _elicited(wit.elicit(message, json.dumps(schema)))
    except Err as err:
        raise _error(err.value) from None


def sample(messages: Union[str, list[tuple[str, str]]], max_tokens: int) -> Sampled:
    """Asks the client's model to continue ``messages`` (a text, or
    ``(role, text)`` pairs with role ``"user"`` or ``"assistant"``), in at
    most ``max_tokens`` tokens. The client is told the messages come from a
    plugin. Needs ``[client] sampling``; raises ``ClientError`` (kind
    ``over-budget`` past its limits)."""
    try:
        return _sampled(wit.sample(_messages(messages), None, max_tokens))
    except Err as err:
        raise _error(err.value) from None


def roots() -> list[tuple[str, Optional[str]]]:
    """The client's workspace roots, as ``(uri, name)`` pairs (untrusted
    text; they grant no access). Needs ``[client] roots = true``."""
    try:
        return _roots(wit.roots())
    except Err as err:
        raise _error(err.value) from None


def ask(requests: list[Request]) -> list[Any]:
    """Asks several requests at once (at most 8); returns an answer per
    request, in order: what ``elicit``, ``sample`` or ``roots`` would
    return, or the ``ClientError`` instance it would raise."""
    asked = [wit.InputRequest(r.key, r.request) for r in requests]
    out: list[Any] = []
    for answer in wit.ask(asked):
        if isinstance(answer, Err):
            out.append(_error(answer.value))
            continue
        value = getattr(answer, "value", answer)
        if isinstance(value, wit.Answer_Elicited):
            out.append(_elicited(value.value))
        elif isinstance(value, wit.Answer_Sampled):
            out.append(_sampled(value.value))
        elif isinstance(value, wit.Answer_Roots):
            out.append(_roots(value.value))
        else:
            out.append(ClientError("failed", "the host gave an answer of an unknown kind"))
    return out
