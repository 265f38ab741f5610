"""The tool-name rule of the corral host, for the Python helper.

The ``corral-names`` crate is the rule's one source; the host's tests run
``name_problem`` on the same names as the crate's ``check_name`` and fail when
the two disagree. This module imports nothing from the component's world, so
those tests can run it on a plain Python.
"""

from __future__ import annotations

import re
from typing import Optional

NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
RESERVED = ("execute_tool_plan", "tool_search", "execute_code")


def name_problem(name: object) -> Optional[str]:
    """What is wrong with ``name`` as a tool name, or ``None`` when it is valid."""
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        return f"name {name!r} is invalid: use 1 to 64 of [A-Za-z0-9_]"
    if name in RESERVED:
        return f"name {name!r} is reserved for a corral built-in tool; rename it"
    return None
