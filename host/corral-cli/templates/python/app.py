"""{{name}}: a corral tool. Each `@tool` function is one tool: its docstring
is the description the model reads (the `Args:` section documents each
argument), and its type hints are the JSON Schema of its arguments."""

from corral_tool import InvalidArguments, Output, Part, Tool, tool  # noqa: F401 (Tool is the export)


@tool(category="text", keywords=["reverse", "example"], idempotent=True)
def {{tool}}(text: str) -> Output:
    """Reverse a text, character by character.

    Args:
        text: The text to reverse.
    """
    if not text:
        raise InvalidArguments("`text` is empty: give some text to reverse")
    # A result of parts: a sentence for the model, and the structured data
    # (which plans reference with $ref). A plain dict return is one JSON part.
    return Output(
        Part.text(f"Reversed: {text[::-1]}"),
        Part.json({"reversed": text[::-1], "characters": len(text)}),
    )
