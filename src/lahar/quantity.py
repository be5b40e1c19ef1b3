"""Kubernetes resource quantities: parse ``"500m"``, ``"4Gi"``, ``"1e3"`` and format them back.

Why a module of its own: every manifest, every CLI flag and every API answer speaks in
quantities, and users bring YAML written for Kubernetes. The grammar and the canonical form
follow Kubernetes' ``resource.Quantity`` so that a value written by ``kubectl`` reads the same
here, and what Lahar prints reads the same there.

Grammar (Kubernetes)::

    quantity  ::= signed-number suffix
    suffix    ::= binary-SI | decimal-SI | decimal-exponent
    binary-SI ::= Ki | Mi | Gi | Ti | Pi | Ei
    decimal-SI ::= n | u | m | "" | k | M | G | T | P | E
    decimal-exponent ::= ("e" | "E") signed-integer

Values are exact (``fractions.Fraction``); rounding happens only where Kubernetes rounds:
``to_milli`` and ``to_units`` round *up*, like ``Quantity.MilliValue`` and ``Quantity.Value``.
"""

from __future__ import annotations

import functools
import math
import re
from enum import Enum
from fractions import Fraction

__all__ = [
    "MAX_MAGNITUDE",
    "TOO_LARGE",
    "QuantityError",
    "QuantityFormat",
    "parse_quantity",
    "format_quantity",
    "to_milli",
    "to_units",
    "canonical",
]

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# (suffix, how many units or nano-units it stands for), largest first: what ``format_quantity`` tries
_BINARY_UNITS = [(suffix, 1024**power) for suffix, power in sorted(_BINARY.items(), key=lambda item: -item[1])]
_NANO_UNITS = [(suffix, 10 ** (power + 9)) for suffix, power in sorted(_DECIMAL.items(), key=lambda item: -item[1])]
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_PATTERN = re.compile(
    rf"^(?P<number>{_NUMBER})(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)
# Larger values would only be typos, and unbounded exponents would let one string eat memory.
_MAX_EXPONENT = 30
# Kubernetes' own bound: no quantity may be larger than 2^63-1 in magnitude. Kubernetes caps a
# larger one; Lahar's admission refuses it in what a user writes (four hundred digits would
# overflow a float). Parsing itself takes any size: what Lahar works out, such as a podgroup's
# minResources summed over its tasks, may go past it.
MAX_MAGNITUDE = 2**63 - 1
# The rule a quantity past the bound breaks, as admission and the trace readers word it
TOO_LARGE = f"must be at most {MAX_MAGNITUDE} (2^63-1), as in Kubernetes"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity. The message says what was expected."""


class QuantityFormat(str, Enum):
    """How a quantity is written back: ``4Gi`` (binary) or ``4G`` (decimal)."""

    BINARY = "BinarySI"
    DECIMAL = "DecimalSI"


def parse_quantity(value: str | int | float | Fraction) -> Fraction:
    """Return the exact value of a quantity. Numbers are accepted as they are.

    Raises ``QuantityError`` for anything that is not a quantity (empty, two suffixes,
    spaces, ``NaN``...). Negative values parse; callers that need ``>= 0`` check it.
    """
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a finite quantity")
        return Fraction(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    """A quantity written as text (memoised: every pod the control loop takes in names the same
    few requests, and a ``Fraction`` is immutable; an error is raised again each time)."""
    match = _PATTERN.match(value.strip()) if value.strip() == value else None
    if match is None:
        raise QuantityError(
            f"{value!r} is not a quantity: expected a number with an optional suffix "
            "(m, k, M, G, Ki, Mi, Gi, ... or an exponent such as e3)"
        )
    number = Fraction(match["number"])
    if match["exp"] is not None:
        exponent = int(match["exp"][1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"{value!r}: exponent out of range (at most {_MAX_EXPONENT})")
        return number * Fraction(10) ** exponent
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * 1024 ** _BINARY[suffix]
    return number * Fraction(10) ** _DECIMAL[suffix]


def suffix_format(value: str | int | float) -> QuantityFormat:
    """The format a written quantity uses: binary when it carries a ``Ki``..``Ei`` suffix."""
    text = str(value)
    return QuantityFormat.BINARY if text[-2:] in _BINARY else QuantityFormat.DECIMAL


def format_quantity(value: Fraction | int | float, fmt: QuantityFormat = QuantityFormat.DECIMAL) -> str:
    """Write ``value`` in Kubernetes canonical form.

    Binary format uses the largest ``Ki``..``Ei`` suffix that divides an integer value and falls
    back to decimal otherwise (``1.5Gi`` -> ``1536Mi``, ``0.5Gi`` -> ``512Mi``, ``1500m`` stays
    decimal). Decimal format uses the largest SI suffix that keeps the number an integer. Values
    finer than a nano-unit are rounded up to the next nano-unit, as Kubernetes does.
    ``parse_quantity(format_quantity(x)) == x`` for every ``x`` that is a whole number of nano-units.
    """
    exact = parse_quantity(value) if not isinstance(value, Fraction) else value
    if exact == 0:
        return "0"
    if fmt is QuantityFormat.BINARY and exact.denominator == 1 and abs(exact) >= 1024:
        for suffix, unit in _BINARY_UNITS:
            if exact.numerator % unit == 0:
                return f"{exact.numerator // unit}{suffix}"
    return _format_decimal(exact)


def _format_decimal(exact: Fraction) -> str:
    nanos = -(-exact.numerator * 10**9 // exact.denominator)  # rounded up, in integers: no Fraction made
    for suffix, unit in _NANO_UNITS:
        if nanos % unit == 0:
            return f"{nanos // unit}{suffix}"
    raise AssertionError("unreachable: every integer is a multiple of one nano-unit")


def canonical(value: str | int | float) -> str:
    """Rewrite a quantity in canonical form, keeping its binary or decimal flavour."""
    return format_quantity(parse_quantity(value), suffix_format(value))


def to_milli(value: str | int | float | Fraction) -> int:
    """The value in thousandths, rounded up (Kubernetes ``MilliValue``)."""
    exact = parse_quantity(value)
    return -(-exact.numerator * 1000 // exact.denominator)  # the ceiling, in integers: no Fraction made


def to_units(value: str | int | float | Fraction) -> int:
    """The value in whole units, rounded up (Kubernetes ``Value``)."""
    exact = parse_quantity(value)
    return -(-exact.numerator // exact.denominator)
