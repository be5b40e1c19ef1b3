"""Durations as people write them: ``90s``, ``10m``, ``1h30m``, ``1.5h``, ``2d``, or plain seconds.

Used by the ``lahar.dev/at`` and ``lahar.dev/duration`` annotations and by ``--until``/``--period``.
Values are seconds as floats; negative durations are refused.
"""

from __future__ import annotations

import math
import re

__all__ = ["DurationError", "parse_duration", "format_duration"]

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)")


class DurationError(ValueError):
    """Not a duration; the message gives examples of what is."""


def parse_duration(text: str | int | float) -> float:
    """Seconds in ``text``. Raises ``DurationError`` for anything else, for a negative value, or
    for one that is not finite (NaN, infinity, or digits too many for a float: they read as
    infinity)."""
    if isinstance(text, bool):
        raise DurationError(f"{text!r} is not a duration")
    if isinstance(text, (int, float)):
        if text < 0:
            raise DurationError("must be a duration >= 0")
        return _finite(float(text))
    value = text.strip()
    if re.fullmatch(r"\d+(?:\.\d*)?|\.\d+", value):
        return _finite(float(value))
    pos, total = 0, 0.0
    for match in _PART.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(value) or not value:
        raise DurationError("must be a duration such as 90s, 10m, 1h30m, 1.5h, 2d or a number of seconds")
    return _finite(total)


def _finite(seconds: float) -> float:
    if not math.isfinite(seconds):
        raise DurationError("must be a finite duration (this one is too large, or not a number)")
    return seconds


def format_duration(seconds: float) -> str:
    """Short human form: ``45s``, ``12m30s``, ``3h05m``, ``2d04h``."""
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds == int(seconds) else f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"
