"""Durations as people write them (``lahar.duration``): what each form means, and what is refused.

A duration is a finite number of seconds >= 0. A number too large for a float (four hundred
nines, in seconds or in days) would read as infinity; Python also reads NaN and infinity as
floats. Each is refused with the rule, never taken as a time that cannot be written back
(an infinite ``since`` made the usage answer fail as JSON)."""

from __future__ import annotations

import math

import pytest

from lahar.duration import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0), ("10m", 600.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("2d", 172800.0),
        ("250ms", 0.25), ("42", 42.0), ("0.5", 0.5), (".5", 0.5), ("0", 0.0), (" 7d ", 604800.0),
        (3, 3.0), (2.5, 2.5), (0, 0.0),
    ],
)
def test_what_a_duration_means(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text",
    ["", "abc", "10x", "1h 30m", "-5", "inf", "nan", "1e3", True, -1, -0.5],
)
def test_what_is_not_a_duration(text):
    with pytest.raises(DurationError):
        parse_duration(text)


@pytest.mark.parametrize("text", ["9" * 400, "9" * 400 + "d", "9" * 308 + "s" + "9" * 308 + "s", math.inf, math.nan])
def test_a_duration_is_finite(text):
    with pytest.raises(DurationError, match="finite"):
        parse_duration(text)


@pytest.mark.parametrize("seconds", [0.0, 1.0, 90.0, 5400.0, 172800.0])
def test_a_formatted_duration_reads_back(seconds):
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)
