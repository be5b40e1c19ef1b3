"""Reading trace CSV files with errors people can act on.

Every trace loader reads its file through ``CsvTable``: the header is checked once (missing
columns, unknown ones where the format is closed), empty lines are skipped, and every bad cell
raises ``BadRequest`` naming the file, the line (as an editor counts it: the header is line 1)
and the column, with the rule it broke. Never a traceback.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from lahar.errors import BadRequest

__all__ = ["CsvTable", "CsvRow"]


@dataclass
class CsvRow:
    """One data line: ``get`` a cell by column name, or a checked number."""

    where: str  # "FILE: line N"
    values: list[str]
    index: dict[str, int]

    def get(self, column: str) -> str:
        i = self.index.get(column)
        return self.values[i].strip() if i is not None and i < len(self.values) else ""

    def fail(self, column: str, rule: str) -> BadRequest:
        return BadRequest(f"{self.where}, column {column}: {self.get(column)!r} {rule}")

    def number(self, column: str, *, minimum: float = 0.0) -> float:
        """A finite number >= ``minimum``."""
        text = self.get(column)
        try:
            value = float(text)
        except ValueError:
            raise self.fail(column, "is not a number") from None
        if math.isnan(value) or math.isinf(value) or value < minimum:
            raise self.fail(column, f"must be a finite number >= {minimum:g}")
        return value

    def integer(self, column: str, *, minimum: int = 0, maximum: int | None = None) -> int:
        """A whole number >= ``minimum`` (``8`` or ``8.0``), and <= ``maximum`` when given."""
        text = self.get(column)
        rule = f"must be a whole number >= {minimum}" if maximum is None else f"must be a whole number from {minimum} to {maximum}"
        try:
            value = float(text)
        except ValueError:
            raise self.fail(column, rule) from None
        if not value.is_integer() or value < minimum or (maximum is not None and value > maximum):
            raise self.fail(column, rule)
        return int(value)


class CsvTable:
    """A CSV file with a header. ``closed=True`` refuses columns outside required + optional."""

    def __init__(self, path: str | Path, kind: str, required: tuple[str, ...], optional: tuple[str, ...] = (), *, closed: bool = False) -> None:
        self.path = Path(path)
        self.kind = kind
        self.required, self.optional, self.closed = required, optional, closed
        if not self.path.is_file():
            raise BadRequest(f"{path}: no such file")

    def rows(self) -> Iterator[CsvRow]:
        with self.path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            index = self._header(next(reader, None) or [])
            for values in reader:
                if not values or all(not v.strip() for v in values):
                    continue
                yield CsvRow(f"{self.path}: line {reader.line_num}", values, index)

    def _header(self, header: list[str]) -> dict[str, int]:
        names = [h.strip() for h in header]
        missing = [c for c in self.required if c not in names]
        if missing:
            raise BadRequest(f"{self.path}: not a {self.kind} trace: the header (line 1) lacks column(s) {', '.join(missing)}")
        known = set(self.required) | set(self.optional)
        unknown = [n for n in names if n not in known]
        if self.closed and unknown:
            expected = ", ".join([*self.required, *self.optional])
            raise BadRequest(f"{self.path}: line 1: unknown column(s) {', '.join(unknown)}: the columns are {expected}")
        duplicated = sorted({n for n in names if names.count(n) > 1 and n in known})
        if duplicated:
            raise BadRequest(f"{self.path}: line 1: column(s) {', '.join(duplicated)} appear more than once")
        return {n: i for i, n in enumerate(names) if n in known}
