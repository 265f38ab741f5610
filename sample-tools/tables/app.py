"""The `tables` sample plugin, in Python: render and read tables with the
`tabulate` package from PyPI (bundled into the component) and the standard
library's `csv` module."""

import csv
import io
from typing import Any, Literal, Optional

from tabulate import tabulate

from corral_tool import InvalidArguments, Tool, log, progress, tool  # noqa: F401 (Tool is the export)

Format = Literal["github", "grid", "simple", "plain", "pipe", "orgtbl", "rst", "html", "latex", "tsv"]


@tool(category="data", keywords=["table", "markdown", "format"], idempotent=True)
def table_render(
    rows: list[Any],
    headers: Optional[list[str]] = None,
    format: Format = "github",
    float_digits: Optional[int] = None,
) -> dict:
    """Render rows as a text table (Markdown by default) for a reader.

    Args:
        rows: The rows: either objects (keys become the columns, in order of
            first appearance) or arrays of cell values.
        headers: Column titles. For object rows, the keys to show and their
            order; for array rows, one title per column.
        format: Table style: github (Markdown), grid, simple, plain, pipe,
            orgtbl, rst, html, latex or tsv.
        float_digits: Round numbers to this many decimal places.
    """
    if not rows:
        raise InvalidArguments("rows is empty: give at least one row")
    if all(isinstance(r, dict) for r in rows):
        columns = headers or list(dict.fromkeys(k for r in rows for k in r))
        unknown = [c for c in columns if not any(c in r for r in rows)]
        if unknown:
            raise InvalidArguments(f"headers name columns no row has: {', '.join(unknown)}")
        table = [[r.get(c) for c in columns] for r in rows]
    elif all(isinstance(r, list) for r in rows):
        widths = {len(r) for r in rows}
        if len(widths) != 1:
            raise InvalidArguments(f"array rows must all have the same length; found lengths {sorted(widths)}")
        width = widths.pop()
        if headers is not None and len(headers) != width:
            raise InvalidArguments(f"{len(headers)} headers for {width} columns")
        columns = headers or []
        table = rows
    else:
        raise InvalidArguments("rows must be all objects or all arrays")
    options = {"floatfmt": f".{float_digits}f"} if float_digits is not None else {}
    text = tabulate(table, headers=columns, tablefmt=format, **options)
    return {"table": text, "rows": len(table), "columns": columns}


@tool(category="data", keywords=["csv", "parse", "table"], idempotent=True)
def csv_parse(text: str, delimiter: Optional[str] = None, header: bool = True, limit: int = 1000) -> dict:
    """Parse CSV text into rows (objects keyed by the header row, or arrays),
    detecting the delimiter unless given. Numbers stay strings.

    Args:
        text: The CSV text.
        delimiter: One character such as "," or ";" (default: detected).
        header: The first row holds the column names.
        limit: Return at most this many rows (the total is always counted).
    """
    if delimiter is not None and len(delimiter) != 1:
        raise InvalidArguments(f"delimiter must be one character, got {delimiter!r}")
    if limit < 1:
        raise InvalidArguments("limit must be at least 1")
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
        log.debug(f"detected delimiter {delimiter!r}")
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        records = []
        for count, record in enumerate(reader, start=1):
            records.append(record)
            if count % 10000 == 0:
                progress(f"parsed {count} rows")
    except csv.Error as e:
        raise InvalidArguments(f"not valid CSV at line {reader.line_num}: {e}") from None
    columns = records.pop(0) if header and records else []
    rows = [dict(zip(columns, r)) for r in records] if columns else records
    return {"columns": columns, "rows": rows[:limit], "total_rows": len(rows), "delimiter": delimiter}
