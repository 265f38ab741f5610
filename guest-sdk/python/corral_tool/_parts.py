"""The parts of a tool's result (contract 0.3.0 ``tool-output``): text, one
structured JSON value, images, audio, resource links and embedded
resources, each with an optional audience and priority.

The host checks them (at most 64 parts, one JSON part, image bytes that
match their type, ``https://`` or ``corral://`` URIs, priority 0.0 to 1.0,
every part's bytes against the output cap) and fails the call naming the
part that breaks a rule."""

from __future__ import annotations

import json
from typing import Any, Optional

from wit_world.imports import types as wit

_ROLES = {"user": wit.Role.USER, "assistant": wit.Role.ASSISTANT}


class Part:
    """One piece of a result. Make one with a constructor below; then
    ``for_audience("user")`` and ``with_priority(0.8)`` annotate it."""

    def __init__(self, content: Any):
        self._content = content
        self._audience: list[Any] = []
        self._priority: Optional[float] = None

    @staticmethod
    def text(text: str) -> "Part":
        """Text for the model or the person."""
        return Part(wit.Content_Text(str(text)))

    @staticmethod
    def json(value: Any) -> "Part":
        """The structured result (at most one per result): ``value`` as JSON.
        Raises ``TypeError`` or ``ValueError`` when it is not
        JSON-serializable."""
        return Part(wit.Content_Json(json.dumps(value, ensure_ascii=False)))

    @staticmethod
    def image(mime_type: str, data: bytes) -> "Part":
        """An image: PNG, JPEG, GIF or WebP bytes of that ``mime_type``."""
        return Part(wit.Content_Image(wit.Media(mime_type=mime_type, data=bytes(data))))

    @staticmethod
    def audio(mime_type: str, data: bytes) -> "Part":
        """Audio bytes of ``mime_type`` (``audio/wav``, ...)."""
        return Part(wit.Content_Audio(wit.Media(mime_type=mime_type, data=bytes(data))))

    @staticmethod
    def link(
        uri: str,
        name: str,
        description: str = "",
        mime_type: Optional[str] = None,
        size: Optional[int] = None,
    ) -> "Part":
        """A link to a resource the client can fetch: ``https://...``, or
        ``corral://...`` for one this result also embeds (an MCP client then
        gets the link alone and reads the contents with ``resources/read``,
        for an hour, as the same tenant)."""
        return Part(
            wit.Content_ResourceLink(
                wit.ResourceLink(
                    uri=uri, name=name, description=description, mime_type=mime_type, size=size
                )
            )
        )

    @staticmethod
    def resource_text(uri: str, text: str, mime_type: Optional[str] = None) -> "Part":
        """A resource of text carried in the result."""
        return Part(
            wit.Content_EmbeddedResource(
                wit.EmbeddedResource(
                    uri=uri, mime_type=mime_type, contents=wit.ResourceContents_Text(text)
                )
            )
        )

    @staticmethod
    def resource_blob(uri: str, data: bytes, mime_type: Optional[str] = None) -> "Part":
        """A resource of bytes carried in the result."""
        return Part(
            wit.Content_EmbeddedResource(
                wit.EmbeddedResource(
                    uri=uri, mime_type=mime_type, contents=wit.ResourceContents_Blob(bytes(data))
                )
            )
        )

    def for_audience(self, *roles: str) -> "Part":
        """Who the part is for: ``"user"``, ``"assistant"`` or both. Raises
        ``ValueError`` for another role."""
        for role in roles:
            if role not in _ROLES:
                raise ValueError(f"audience {role!r} is not 'user' or 'assistant'")
        self._audience = [_ROLES[role] for role in roles]
        return self

    def with_priority(self, priority: float) -> "Part":
        """How important the part is, 0.0 (least) to 1.0 (most)."""
        self._priority = float(priority)
        return self

    def _wit(self) -> wit.Part:
        annotations = None
        if self._audience or self._priority is not None:
            annotations = wit.Annotations(audience=self._audience, priority=self._priority)
        return wit.Part(content=self._content, annotations=annotations)


class Output:
    """A result of several parts, in the order a client shows them:
    ``Output(Part.text(...), Part.image(...))``."""

    def __init__(self, *parts: Part):
        self.parts: list[Part] = list(parts)

    def add(self, part: Part) -> "Output":
        """Appends ``part``; returns the output."""
        self.parts.append(part)
        return self

    def _wit(self) -> list[wit.Part]:
        return [part._wit() for part in self.parts]
