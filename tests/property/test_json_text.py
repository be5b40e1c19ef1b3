"""The store's JSON text (``lahar.store.base``): whatever JSON data is written, ``from_json``
gives back what the standard library would, value for value and type for type, though the
fast encoder and decoder (orjson) handle most of it; what JSON cannot hold is refused."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.errors import BadRequest
from lahar.store.base import from_json, json_bytes, to_json

integers = st.one_of(st.integers(-(2**63), 2**64 - 1), st.integers(), st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**19, -(10**19), 10**30]))
texts = st.one_of(st.text(), st.sampled_from(["null", "\ud800", "a\udfffb", "\x00", "\u2028", "a\u2029b\x85", "\r\n\x0b\x0c\x1c", "😀", "12345678901234567890"]))
leaves = st.one_of(st.none(), st.booleans(), integers, st.floats(allow_nan=False, allow_infinity=False), texts)
trees = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)), max_leaves=30)


def _same(a, b) -> bool:
    """Equal values of the same types all the way down (so 1 is not 1.0 and -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


@settings(max_examples=400, deadline=None)
@given(trees)
def test_what_is_written_is_read_back_exactly(value):
    expected = json.loads(json.dumps(value))
    text = to_json(value)
    assert _same(from_json(text), expected)
    assert _same(from_json(text.encode()), expected)
    assert _same(json.loads(text), expected)  # the text is plain JSON, readable by anybody
    assert json_bytes(value).decode() == text
    assert len(text.splitlines()) == 1  # one line for any reader: a watch stream is one event a line


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {"a": [float("-inf")], "b": None}, {1: float("nan")}, object(), {"a": {1, 2}}])
def test_what_json_cannot_hold_is_refused(value):
    with pytest.raises(BadRequest, match="cannot be stored as JSON"):
        json_bytes(value)


def test_line_ends_inside_strings_are_escaped_by_either_writer():
    for value in ({"a": "x\u2028y\u2029z\x85"}, {"a": "x\u2028y\u2029z\x85", "b": None}):
        text = to_json(value)
        assert len(text.splitlines()) == 1 and from_json(text) == value


def test_keys_that_are_not_text_are_written_as_text():
    assert from_json(to_json({1: "a", 2.5: "b", None: "d"})) == {"1": "a", "2.5": "b", "null": "d"}
    assert from_json(to_json({True: 1, "x": [{False: 0}]})) == {"true": 1, "x": [{"false": 0}]}


def test_a_uuid_and_an_enum_member_are_written_as_orjson_writes_them():
    """Where orjson goes beyond the standard library (which refuses both): a UUID as its text,
    an Enum member as its value. Lahar's own data holds neither; this pins what a caller gets."""
    import enum
    import uuid

    class Colour(enum.Enum):
        RED = "red"

    assert from_json(to_json({"u": uuid.UUID(int=1), "c": Colour.RED})) == {"u": "00000000-0000-0000-0000-000000000001", "c": "red"}
