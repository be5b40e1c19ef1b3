"""``json_depth``, the nesting guard in front of every write request, cuts strings out with one
regular expression and walks only the brackets left. It must count exactly as a walk of every
byte does (brackets inside strings do not count; an escaped quote does not end a string; an
unterminated string runs to the end), on any text, JSON or not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.server.limits import json_depth


def walked_depth(data: bytes, limit: int) -> int:
    """The specification: one byte at a time."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == ord("\\"):
                escaped = True
            elif byte == ord('"'):
                in_string = False
        elif byte == ord('"'):
            in_string = True
        elif byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
        elif byte in b"]}":
            depth -= 1
    return deepest


@settings(max_examples=2000)
@given(st.binary(max_size=40).map(lambda raw: bytes(b'[]{}"\\a\n'[b % 8] for b in raw)), st.integers(0, 8))
def test_counts_as_a_walk_of_every_byte(data, limit):
    assert json_depth(data, limit) == walked_depth(data, limit)


def test_examples():
    assert json_depth(b'{"a": [1, {"b": "[[[["}]}', 64) == 3
    assert json_depth(b'{"a\\"[[": []}', 64) == 2  # the escaped quote does not end the string
    assert json_depth(b'["unterminated [[[', 64) == 1
    assert json_depth(b'"\\', 64) == 0
    assert json_depth(b"[" * 100, 64) == 65  # stops counting past the limit
