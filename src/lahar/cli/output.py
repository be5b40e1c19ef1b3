"""How the CLI prints: aligned tables for people, JSON / YAML for scripts, bars, and errors.

One module so that every command looks alike and a script can rely on the same shapes:

* tables are plain text, left-justified, padded and never truncated (like vcctl and kubectl),
  so that ``grep`` and ``awk`` work on them; a table never depends on the terminal's width;
* ``-o json`` / ``-o yaml`` print the server's documents as it sent them;
* errors go to stderr as the server worded them, then one line per field error, then a hint;
  ``reports_errors`` turns every ``LaharError`` into that text and its exit code (1, or 3 when
  the server cannot be reached), for commands run by ``lahar`` and by tests alike.
"""

from __future__ import annotations

import functools
import json
from datetime import datetime, timezone
from enum import Enum
from fractions import Fraction
from typing import Any, Callable, Iterable, Sequence

import typer

from lahar.errors import Invalid, LaharError

__all__ = [
    "Output",
    "table",
    "emit",
    "emit_document",
    "reports_errors",
    "print_error",
    "resource_text",
    "amount_text",
    "age",
    "bar",
    "fail",
    "OUTPUT_HELP",
]


class Output(str, Enum):
    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    YAML = "yaml"


OUTPUT_HELP = "Output format: table, wide (more columns), json or yaml."


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], widths: Sequence[int] | None = None, pad: int = 3, strip: bool = True) -> str:
    """Rows under headers, each column left-justified. ``widths`` fixes column widths (vcctl's
    ``%-25s%-8s...``; 0 for a computed one); otherwise a column is its widest cell plus ``pad``.
    Cells never truncate: a cell as wide as its column is followed by one space (where vcctl
    runs it into the next). ``strip=False`` keeps trailing spaces, as vcctl prints them."""
    text_rows = [[_cell(v) for v in row] for row in rows]
    columns = len(headers)
    sizes = []
    for i in range(columns):
        widest = max([len(headers[i])] + [len(r[i]) for r in text_rows])
        sizes.append(widths[i] if widths and i < len(widths) and widths[i] else widest + pad)
    lines = [_line(headers, sizes), *(_line(r, sizes) for r in text_rows)]
    return "\n".join(line.rstrip() if strip else line for line in lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _line(cells: Sequence[str], sizes: Sequence[int]) -> str:
    parts = [cell.ljust(size) if len(cell) < size else cell + " " for cell, size in zip(cells, sizes)]
    if parts and len(cells[-1]) >= sizes[len(parts) - 1]:
        parts[-1] = cells[-1]  # an overflowing last cell needs no separator
    return "".join(parts)


def emit_document(document: Any, output: Output) -> None:
    """Print a document as JSON or YAML."""
    if output is Output.JSON:
        typer.echo(json.dumps(document, indent=2))
    else:
        import yaml

        typer.echo(yaml.safe_dump(document, sort_keys=False, allow_unicode=True).rstrip("\n"))


def emit(document: Any, output: Output, render: Callable[[bool], str]) -> None:
    """JSON / YAML of ``document``, or ``render(wide)`` for the table formats."""
    if output in (Output.JSON, Output.YAML):
        emit_document(document, output)
    else:
        typer.echo(render(output is Output.WIDE))


# --------------------------------------------------------------------- errors


def print_error(exc: LaharError) -> None:
    """``error: <message>``, then one line per field error (when there are several), then the
    hint, all on stderr."""
    typer.echo(f"error: {exc.message}", err=True)
    causes = getattr(exc, "causes", None)
    if causes is None and isinstance(exc, Invalid):
        causes = [str(e) for e in exc.errors]
    causes = list(causes or [])
    if len(causes) == 1 and causes[0] in exc.message:
        causes = []  # the message already is that one field error
    for cause in causes:
        typer.echo(f"  {cause}", err=True)
    hint = getattr(exc, "hint", "")
    if hint:
        typer.echo(f"hint: {hint}", err=True)


def reports_errors(command: Callable) -> Callable:
    """Decorate a command: a ``LaharError`` is printed (``print_error``) and ends the command
    with its exit code. Usage errors stay Typer's (exit code 2)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except LaharError as exc:
            print_error(exc)
            raise typer.Exit(exc.exit_code) from None

    return wrapper


def fail(message: str, code: int = 1) -> None:
    """Stop a command with ``error: <message>`` and an exit code."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


# --------------------------------------------------------------------- quantities


def amount_text(name: str, value: Any) -> str:
    """One amount for people: ``4``, ``500m``, ``4Gi``; accepts quantity strings and JSON numbers
    (cpu in cores, memory in bytes)."""
    from lahar.quantity import QuantityFormat, format_quantity, parse_quantity

    try:
        exact = parse_quantity(value) if not isinstance(value, float) else Fraction(value).limit_denominator(1000)
    except Exception:  # noqa: BLE001 - show what the server sent rather than fail
        return str(value)
    fmt = QuantityFormat.BINARY if name in ("memory", "ephemeral-storage") else QuantityFormat.DECIMAL
    return format_quantity(exact, fmt)


def resource_text(resources: dict | None, skip: Iterable[str] = ("pods",)) -> str:
    """``cpu=4,memory=4Gi`` (``-`` when empty)."""
    items = [(k, v) for k, v in sorted((resources or {}).items()) if k not in skip]
    return ",".join(f"{k}={amount_text(k, v)}" for k, v in items) or "-"


def amount_value(value: Any) -> float:
    """A quantity string or JSON number as a float (0 when unreadable)."""
    from lahar.quantity import parse_quantity

    try:
        return float(value) if isinstance(value, (int, float)) else float(parse_quantity(value))
    except Exception:  # noqa: BLE001
        return 0.0


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """``42s``, ``5m``, ``3h``, ``2d`` since an RFC 3339 timestamp (``-`` when unknown)."""
    if not timestamp:
        return "-"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    seconds = max(0, int(((now or datetime.now(timezone.utc)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# --------------------------------------------------------------------- bars

FULL, OVER, FREE, DESERVED, CAP, NONE = "█", "▓", "·", "│", "┊", " "


def bar(allocated: float, deserved: float, capability: float | None, scale: float, width: int = 20) -> str:
    """A bar of ``width`` cells for ``scale`` (the cluster): allocated within deserved as ``█``,
    above deserved as ``▓``, free as ``·``, out of reach (beyond the capability) blank; ``│``
    marks deserved and ``┊`` the capability when they fall on a free cell."""
    if scale <= 0:
        return NONE * width

    def cells(value: float) -> int:
        return max(0, min(width, round(value / scale * width)))

    used, fair = cells(allocated), cells(deserved)
    cap = width if capability is None else cells(capability)
    chars = [FULL if i < min(used, fair) else OVER if i < used else FREE if i < cap else NONE for i in range(width)]
    if capability is not None and 0 < cap < width and chars[cap - 1] == FREE:
        chars[cap - 1] = CAP
    if 0 < fair and chars[fair - 1] == FREE:
        chars[fair - 1] = DESERVED
    return "".join(chars)


def manifest_documents(filename: str) -> list[Any]:
    """The documents of a manifest file (``-``: standard input), each refused YAML or JSON
    naming the file and line (``lahar.model.manifest.load_documents``)."""
    import sys
    from pathlib import Path

    from lahar.errors import BadRequest
    from lahar.model.manifest import load_documents

    if filename == "-":
        text = sys.stdin.read()
    elif Path(filename).is_file():
        text = Path(filename).read_text(encoding="utf-8")
    else:
        raise BadRequest(f"{filename}: no such file")
    return load_documents(text, filename if filename != "-" else "stdin")
