"""Kubernetes quantities: parse, canonical format, rounding, and round trips."""

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.quantity import (
    MAX_MAGNITUDE,
    QuantityError,
    QuantityFormat,
    canonical,
    format_quantity,
    parse_quantity,
    to_milli,
    to_units,
)

PARSE_CASES = [
    ("500m", Fraction(1, 2)),
    ("1.5", Fraction(3, 2)),
    ("2", Fraction(2)),
    ("4Gi", Fraction(4 * 2**30)),
    ("4096Mi", Fraction(4 * 2**30)),
    ("1e3", Fraction(1000)),
    ("1E3", Fraction(1000)),
    ("1e-3", Fraction(1, 1000)),
    ("100k", Fraction(100_000)),
    ("1G", Fraction(10**9)),
    ("1M", Fraction(10**6)),
    ("1E", Fraction(10**18)),
    ("1Ki", Fraction(1024)),
    ("250u", Fraction(250, 10**6)),
    ("7n", Fraction(7, 10**9)),
    (".5", Fraction(1, 2)),
    ("1.", Fraction(1)),
    ("+3", Fraction(3)),
    ("-2", Fraction(-2)),
    (3, Fraction(3)),
    (0.25, Fraction(1, 4)),
]


@pytest.mark.parametrize("text,value", PARSE_CASES)
def test_parse(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", " 1", "1 ", "abc", "1Xi", "1.2.3", "1KiB", "e3", "1e", "--1", "1e99", "nan", True, None, [1]])
def test_parse_rejects(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize("text,value", [("9" * 400, 10**400 - 1), ("8Ei", 8 * 2**60), ("1e30", 10**30), (2**70, 2**70), ("9223372036854775807", MAX_MAGNITUDE)])
def test_parsing_takes_any_size(text, value):
    """Parsing is exact at any size: what Lahar works out (a podgroup's minResources, summed over
    its tasks) may go past Kubernetes' bound, 2^63-1, which admission holds what users write to
    (``tests/unit/test_admission.py``)."""
    assert MAX_MAGNITUDE == 2**63 - 1
    assert parse_quantity(text) == value
    assert to_milli(text) == value * 1000


FORMAT_CASES = [
    (Fraction(1, 2), QuantityFormat.DECIMAL, "500m"),
    (Fraction(2), QuantityFormat.DECIMAL, "2"),
    (Fraction(1500), QuantityFormat.DECIMAL, "1500"),
    (Fraction(2000), QuantityFormat.DECIMAL, "2k"),
    (Fraction(4 * 2**30), QuantityFormat.BINARY, "4Gi"),
    (Fraction(3 * 2**29), QuantityFormat.BINARY, "1536Mi"),
    (Fraction(10**9), QuantityFormat.BINARY, "1G"),
    (Fraction(100), QuantityFormat.BINARY, "100"),
    (Fraction(0), QuantityFormat.BINARY, "0"),
    (Fraction(1, 3), QuantityFormat.DECIMAL, "333333334n"),
]


@pytest.mark.parametrize("value,fmt,text", FORMAT_CASES)
def test_format(value, fmt, text):
    assert format_quantity(value, fmt) == text


def test_canonical_keeps_flavour():
    assert canonical("4096Mi") == "4Gi"
    assert canonical("1000m") == "1"
    assert canonical("2000M") == "2G"


def test_rounding_up_like_kubernetes():
    assert to_milli("0.0001") == 1
    assert to_milli("1.5") == 1500
    assert to_units("0.5") == 1
    assert to_units("1Gi") == 2**30


nanos = st.integers(min_value=-(10**24), max_value=10**24).map(lambda n: Fraction(n, 10**9))


@given(st.fractions(max_denominator=10**12), st.integers(min_value=-(10**6), max_value=10**6))
def test_rounding_up_is_the_ceiling_of_the_exact_value(fraction, whole):
    """Negative values, whole numbers and fractions round up as ``math.ceil`` of the exact value."""
    import math

    for value in (fraction, Fraction(whole), fraction + whole):
        assert to_milli(value) == math.ceil(value * 1000)
        assert to_units(value) == math.ceil(value)


@given(nanos, st.sampled_from(list(QuantityFormat)))
def test_round_trip(value, fmt):
    assert parse_quantity(format_quantity(value, fmt)) == value


@given(st.integers(min_value=0, max_value=2**62))
def test_binary_round_trip_integers(value):
    assert parse_quantity(format_quantity(Fraction(value), QuantityFormat.BINARY)) == value


def _written_as_kubernetes_does(value: Fraction, fmt: QuantityFormat) -> str:
    """The canonical form worked out the plain way: the largest ``Ki``..``Ei`` unit dividing a
    whole value of 1024 or more (binary), else the value rounded up to a whole number of
    nano-units and written with the largest SI suffix that keeps it whole."""
    if value == 0:
        return "0"
    if fmt is QuantityFormat.BINARY and value.denominator == 1 and abs(value) >= 1024:
        for suffix, power in (("Ei", 6), ("Pi", 5), ("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
            if value.numerator % 1024**power == 0:
                return f"{value.numerator // 1024**power}{suffix}"
    nanos = math.ceil(value * 10**9)
    for suffix, power in (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3), ("", 0), ("m", -3), ("u", -6), ("n", -9)):
        if nanos % 10 ** (power + 9) == 0:
            return f"{nanos // 10 ** (power + 9)}{suffix}"
    raise AssertionError("unreachable")


@given(
    st.one_of(
        st.fractions(max_denominator=10**12),
        st.integers(min_value=-(2**70), max_value=2**70).map(Fraction),
        st.integers(min_value=-(10**6), max_value=10**6).map(lambda n: Fraction(n * 2**30)),
        st.integers(min_value=-(10**6), max_value=10**6).map(lambda n: Fraction(n, 1000)),
    ),
    st.sampled_from(list(QuantityFormat)),
)
def test_format_is_the_plain_canonical_form(value, fmt):
    assert format_quantity(value, fmt) == _written_as_kubernetes_does(value, fmt)
