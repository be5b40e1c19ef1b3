"""What the programs under ``bench/`` read from their command lines the same way.

Each value is checked as it is read (an ``argparse`` type), so a value against its option's rule
is refused with a usage error that names the option and the rule, before any work starts::

    cycle.py: error: argument --nodes: must be at least 1, not 0

``count(least)`` is a whole number of at least ``least``; ``positive_seconds`` a number of
seconds above 0 and ``spent_seconds`` one of at least 0; ``existing_file`` a path to a file that is
there; ``new_file`` a path a file can be written at (its folder is there, it is not a folder),
checked before the work whose result it receives; ``duration`` a scheduling period as the server
reads one (``0.2s``, ``1s``); ``window`` the ``A:B`` of two cycle numbers, read as the pair;
``names(known, kind)`` comma-separated names, each one of ``known``, read as a tuple.
``parser(doc)`` is a program's parser: its description is the first paragraph of ``doc``, as
written.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Sequence

from lahar.duration import DurationError, parse_duration

__all__ = ["count", "duration", "existing_file", "names", "new_file", "parser", "positive_seconds", "spent_seconds", "window"]


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A program's parser, described by the first paragraph of its docstring (kept as written)."""
    return argparse.ArgumentParser(description=(doc or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)


def count(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least``."""

    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, not {value}")
        return value

    read.__name__ = f"whole number of at least {least}"
    return read


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, not {text!r}") from None


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0."""
    value = _seconds(text)
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return value


def spent_seconds(text: str) -> float:
    """An argparse type: a number of seconds of at least 0."""
    value = _seconds(text)
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be at least 0 seconds, not {text}")
    return value


def duration(text: str) -> str:
    """An argparse type: a period as the server reads one (``0.2s``, ``1s``, ``500ms``), above 0;
    kept as written (it is handed on as text)."""
    try:
        seconds = parse_duration(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"must be longer than 0, not {text!r}")
    return text


def existing_file(text: str) -> str:
    """An argparse type: the path of a file that is there."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"not a file: {text}")
    return text


def new_file(text: str) -> str:
    """An argparse type: a path a file can be written at: its folder is there and it is not a
    folder itself (a file there is written over)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"is a folder, not a file: {text}")
    if not path.absolute().parent.is_dir():
        raise argparse.ArgumentTypeError(f"no such folder: {path.absolute().parent}")
    return text


def window(text: str) -> tuple[int, int]:
    """An argparse type: ``A:B``, two cycle numbers with 0 < A < B, read as ``(A, B)``."""
    first, colon, last = text.partition(":")
    try:
        a, b = int(first), int(last)
    except ValueError:
        a = b = 0
    if not colon or not 0 < a < b:
        raise argparse.ArgumentTypeError(f"must be A:B, two cycle numbers with 0 < A < B, not {text!r}")
    return a, b


def names(known: Sequence[str], kind: str) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: names separated by commas (spaces around them are dropped), each one of
    ``known`` (a ``kind``: the error says "no {kind} ..."), read as a tuple in the order given."""

    def read(text: str) -> tuple[str, ...]:
        chosen = tuple(part.strip() for part in text.split(","))
        for name in chosen:
            if name not in known:
                raise argparse.ArgumentTypeError(f'no {kind} "{name}": the {kind}s are {", ".join(known)}')
        return chosen

    read.__name__ = f"{kind} names"
    return read
