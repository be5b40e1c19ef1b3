"""Resource vectors with Volcano's arithmetic and comparisons.

Why this exists: queue fairness is decided by comparisons such as "is the queue's allocation
still within its deserved share?", and Volcano answers each with a specific rule (tolerance or
not, which dimensions count, what a missing dimension means). Reproducing its decisions means
reproducing those rules exactly, so each method here is named after the Volcano function it
mirrors and its docstring states the rule.

Units inside a ``Resource`` are Volcano's: cpu in milli-cores, memory in bytes, ``pods`` as a
count, every other resource (``nvidia.com/gpu``, ``ephemeral-storage``...) in thousandths
(``"1"`` GPU is 1000). ``to_json`` converts to the units users read: cpu in cores, memory in
bytes, others in their own unit.

``scalars`` is ``None`` until a scalar dimension is added. Volcano distinguishes "no scalar
map" from "empty map" in a few rules (``sub``, ``min_dimension_resource``,
``less_equal_with_dimension_and_resources_name``); we keep the distinction so that the
answers are the same.

Arithmetic methods (``add``, ``sub``, ``multi``...) change the receiver and return it, as in
Volcano; call ``clone()`` first when the original must stay.
"""

from __future__ import annotations

import functools
import itertools
import sys
from enum import IntEnum
from fractions import Fraction
from typing import Final, Iterable, Mapping

from lahar.quantity import QuantityFormat, format_quantity, to_milli, to_units

__all__ = [
    "Resource",
    "Dim",
    "MIN_RESOURCE",
    "MAX_FLOAT",
    "MAX_INT64",
    "CPU",
    "MEMORY",
    "PODS",
    "GPU",
    "exceeded_part",
    "intersection",
    "res_max",
    "res_min",
    "share",
    "request_id",
    "EXACT_SUMS_BELOW",
    "whole_below_exact",
]

MIN_RESOURCE: Final = 0.1
MAX_FLOAT: Final = sys.float_info.max
MAX_INT64: Final = float(2**63 - 1)
# A float holds every whole number below this: sums of such values are exact in any order, and
# taking a value away undoes adding it (totals kept up as things come and go rely on it)
EXACT_SUMS_BELOW = 2.0**53

CPU: Final = "cpu"
MEMORY: Final = "memory"
PODS: Final = "pods"
GPU: Final = "nvidia.com/gpu"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"

# Scalar dimensions that some rules skip (Volcano's ignoredScalarResources).
_IGNORED_SCALARS: Final = frozenset({PODS})


class Dim(IntEnum):
    """What a dimension missing on one side means in a comparison (Volcano's DimensionDefaultValue)."""

    ZERO = 0
    INFINITY = -1


_INFINITE: Final = float(Dim.INFINITY)  # a scalar's value that reads as infinite in ``diff``


def _le_tol(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


def _is_ignored(name: str) -> bool:
    return name in _IGNORED_SCALARS


class Resource:
    """A vector of cpu (milli), memory (bytes) and scalar resources (see module docstring)."""

    __slots__ = ("milli_cpu", "memory", "scalars", "max_task_num")

    def __init__(
        self,
        milli_cpu: float = 0.0,
        memory: float = 0.0,
        scalars: Mapping[str, float] | None = None,
        max_task_num: int = 0,
    ) -> None:
        self.milli_cpu = float(milli_cpu)
        self.memory = float(memory)
        self.scalars: dict[str, float] | None = (
            {k: float(v) for k, v in scalars.items()} if scalars is not None else None
        )
        self.max_task_num = max_task_num

    # ----------------------------------------------------------------- construction

    @classmethod
    def from_list(cls, resource_list: Mapping[str, str | int | float | Fraction] | None) -> "Resource":
        """Build from a Kubernetes resource list, as Volcano's ``NewResource``.

        cpu -> milli-cores; memory -> bytes (rounded up); pods -> a count (also ``max_task_num``);
        names starting ``count/`` are ignored; every other name -> thousandths (rounded up).
        Raises ``QuantityError`` for a malformed quantity.
        """
        res = cls()
        for name, quantity in (resource_list or {}).items():
            if name == CPU:
                res.milli_cpu += to_milli(quantity)
            elif name == MEMORY:
                res.memory += to_units(quantity)
            elif name == PODS:
                count = to_units(quantity)
                res.max_task_num += count
                res.add_scalar(name, count)
            elif name.startswith("count/"):
                continue
            else:
                res.add_scalar(name, to_milli(quantity))
        return res

    @classmethod
    def from_json(cls, values: Mapping[str, float]) -> "Resource":
        """Build from user units (cpu cores, memory bytes, others in their unit): inverse of ``to_json``."""
        res = cls()
        for name, value in values.items():
            if name == CPU:
                res.milli_cpu = float(value) * 1000
            elif name == MEMORY:
                res.memory = float(value)
            elif name == PODS:
                res.set_scalar(name, float(value))
            else:
                res.set_scalar(name, float(value) * 1000)
        return res

    @classmethod
    def infinite(cls) -> "Resource":
        """cpu and memory at the largest float, no scalars (Volcano's ``InfiniteResource``)."""
        return cls(MAX_FLOAT, MAX_FLOAT, None, sys.maxsize)

    def clone(self) -> "Resource":
        """A copy: a cycle clones hundreds of thousands. Values are already floats (the
        constructor and every operation keep them so); the scalars are copied, not converted."""
        # Compiled, a call of the class with its arguments is a direct native call, and
        # ``Resource.__new__(Resource)`` a generic one (then the constructor with its defaults)
        twin = Resource(self.milli_cpu, self.memory, None, self.max_task_num)
        if self.scalars is not None:
            twin.scalars = self.scalars.copy()
        return twin

    # ----------------------------------------------------------------- reading

    def get(self, name: str) -> float:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        return (self.scalars or {}).get(name, 0.0)

    def dims(self) -> Iterable[tuple[str, float]]:
        """Every dimension with its value: cpu, memory, then the scalars in insertion order."""
        yield CPU, self.milli_cpu
        yield MEMORY, self.memory
        if self.scalars:
            yield from self.scalars.items()

    def resource_names(self) -> list[str]:
        """Dimensions with a value >= 0.1, ``pods`` included."""
        return [name for name, value in self.dims() if value >= MIN_RESOURCE]

    def is_empty(self) -> bool:
        """True iff cpu, memory and every scalar except ``pods`` are < 0.1."""
        if self.milli_cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return not any(v >= MIN_RESOURCE for k, v in (self.scalars or {}).items() if not _is_ignored(k))

    def is_zero(self, name: str) -> bool:
        return self.get(name) < MIN_RESOURCE

    def holds_anything(self) -> bool:
        """Whether any dimension, ``pods`` included, is not exactly 0 (a job's allocation: an
        empty one adds nothing to a sum and gives share 0)."""
        return bool(self.milli_cpu or self.memory or (self.scalars and any(self.scalars.values())))

    # ----------------------------------------------------------------- arithmetic (in place)

    def add(self, other: "Resource") -> "Resource":
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        if other.scalars:
            if self.scalars is None:
                self.scalars = {}
            for name, value in other.scalars.items():
                self.scalars[name] = self.scalars.get(name, 0.0) + value
        return self

    def add_nonzero(self, other: "Resource") -> "Resource":
        """Add ``other``, leaving out its scalars at zero: a sum kept up by adding and taking
        away (a job's allocation) adds in as the sum of what is in it now would."""
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        if other.scalars:
            scalars = self.scalars if self.scalars is not None else {}
            for name, value in other.scalars.items():
                if value:
                    scalars[name] = scalars.get(name, 0.0) + value
            self.scalars = scalars
        return self

    def sub(self, other: "Resource") -> "Resource":
        """Subtract; values may go negative. Without a scalar map of its own, other's scalars are ignored."""
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        if self.scalars is None:
            return self
        for name, value in (other.scalars or {}).items():
            self.scalars[name] = self.scalars.get(name, 0.0) - value
        return self

    def multi(self, ratio: float) -> "Resource":
        self.milli_cpu *= ratio
        self.memory *= ratio
        if self.scalars:
            for name in self.scalars:
                self.scalars[name] *= ratio
        return self

    def add_scalar(self, name: str, value: float) -> None:
        self.set_scalar(name, (self.scalars or {}).get(name, 0.0) + value)

    def set_scalar(self, name: str, value: float) -> None:
        if self.scalars is None:
            self.scalars = {}
        self.scalars[name] = float(value)

    def set_max_resource(self, other: "Resource") -> None:
        """Per-dimension max, in place (Volcano's ``SetMaxResource``, quirks included)."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        if not other.scalars:
            return
        if self.scalars is None:
            self.scalars = dict(other.scalars)
            return
        for name, value in other.scalars.items():
            if name not in self.scalars or value > self.scalars[name]:
                self.scalars[name] = value

    def min_dimension_resource(self, other: "Resource", dflt: Dim) -> "Resource":
        """Per-dimension min in place; a scalar missing in ``other`` becomes 0 (ZERO) or stays (INFINITY)."""
        self.milli_cpu = min(self.milli_cpu, other.milli_cpu)
        self.memory = min(self.memory, other.memory)
        if self.scalars is None:
            return self
        if other.scalars is None:
            if dflt is Dim.ZERO:
                for name in self.scalars:
                    self.scalars[name] = 0.0
            return self
        for name, value in self.scalars.items():
            if name in other.scalars:
                self.scalars[name] = min(value, other.scalars[name])
            elif dflt is Dim.ZERO:
                self.scalars[name] = 0.0
        return self

    def diff(self, other: "Resource", dflt: Dim) -> tuple["Resource", "Resource"]:
        """``(increased, decreased)``: per dimension, l-r where l > r, else r-l (missing -> ``dflt``)."""
        missing = float(dflt)  # worked out once, not per scalar (a conversion of the enum)
        left = dict(self.scalars or {})
        right = dict(other.scalars or {})
        for name in list(left):
            right.setdefault(name, missing)
        for name in list(right):
            left.setdefault(name, missing)
        increased: dict[str, float] = {}
        decreased: dict[str, float] = {}
        inc, dec = Resource(), Resource()
        inc.scalars, dec.scalars = increased, decreased  # filled below (the constructor would copy them)
        # each attribute set by name in the code, not by ``setattr``: compiled, that is a slot write
        if self.milli_cpu > other.milli_cpu:
            inc.milli_cpu = self.milli_cpu - other.milli_cpu
        else:
            dec.milli_cpu = other.milli_cpu - self.milli_cpu
        if self.memory > other.memory:
            inc.memory = self.memory - other.memory
        else:
            dec.memory = other.memory - self.memory
        for name, lval in left.items():
            rval = right[name]
            if lval == _INFINITE:
                increased[name] = lval
            elif rval == _INFINITE:
                decreased[name] = rval
            elif lval > rval:
                increased[name] = lval - rval
            else:
                decreased[name] = rval - lval
        return inc, dec

    # ----------------------------------------------------------------- comparisons

    def _scalars_missing_from(self, other: "Resource") -> bool:
        """True if ``other`` has a scalar key that self lacks."""
        mine = self.scalars or {}
        return any(name not in mine for name in (other.scalars or {}))

    def less_equal(self, other: "Resource", dflt: Dim) -> bool:
        """Every dimension ``l <= r`` with tolerance 0.1, over cpu, memory and self's scalars.

        A scalar missing in ``other`` reads as 0 (ZERO) or is skipped (INFINITY); with INFINITY,
        a scalar that ``other`` has and self lacks makes the answer False.
        """
        if not _le_tol(self.milli_cpu, other.milli_cpu) or not _le_tol(self.memory, other.memory):
            return False
        if dflt is Dim.INFINITY and self._scalars_missing_from(other):
            return False
        theirs = other.scalars or {}
        for name, lval in (self.scalars or {}).items():
            if name not in theirs:
                if dflt is Dim.INFINITY:
                    continue
                if not _le_tol(lval, 0.0):
                    return False
            elif not _le_tol(lval, theirs[name]):
                return False
        return True

    def less(self, other: "Resource", dflt: Dim) -> bool:
        """Strict ``<`` on cpu, memory and self's scalars (same missing-key rules as ``less_equal``)."""
        if not (self.milli_cpu < other.milli_cpu and self.memory < other.memory):
            return False
        if dflt is Dim.INFINITY and self._scalars_missing_from(other):
            return False
        theirs = other.scalars or {}
        for name, lval in (self.scalars or {}).items():
            if name not in theirs and dflt is Dim.INFINITY:
                continue
            if not lval < theirs.get(name, 0.0):
                return False
        return True

    def less_equal_with_resources_name(self, other: "Resource", dflt: Dim) -> tuple[bool, list[str]]:
        """Like ``less_equal`` (without the extra-scalar rule), returning the failing dimensions."""
        failed = []
        if not _le_tol(self.milli_cpu, other.milli_cpu):
            failed.append(CPU)
        if not _le_tol(self.memory, other.memory):
            failed.append(MEMORY)
        theirs = other.scalars or {}
        for name, lval in (self.scalars or {}).items():
            if name not in theirs and dflt is Dim.INFINITY:
                continue
            if not _le_tol(lval, theirs.get(name, 0.0)):
                failed.append(name)
        return not failed, failed

    def less_equal_with_dimension_and_resources_name(
        self, other: "Resource | None", req: "Resource | None"
    ) -> tuple[bool, list[str]]:
        """Strict ``l <= r`` (no tolerance) only on the dimensions where ``req`` > 0, ``pods`` skipped.

        A missing scalar reads as 0; if self has no scalar map, scalars are not checked.
        ``req`` None falls back to ``less_equal_with_resources_name(other, ZERO)``.
        """
        if other is None:
            return False, self.resource_names()
        if req is None:
            return self.less_equal_with_resources_name(other, Dim.ZERO)
        failed = []
        if req.milli_cpu > 0 and self.milli_cpu > other.milli_cpu:
            failed.append(CPU)
        if req.memory > 0 and self.memory > other.memory:
            failed.append(MEMORY)
        if self.scalars is not None:
            theirs = other.scalars or {}
            for name, quant in (req.scalars or {}).items():
                if _is_ignored(name):
                    continue
                if quant > 0 and self.scalars.get(name, 0.0) > theirs.get(name, 0.0):
                    failed.append(name)
        return not failed, failed

    def less_partly(self, other: "Resource", dflt: Dim) -> bool:
        """True if any dimension has ``l < r`` (strict)."""
        if self.milli_cpu < other.milli_cpu or self.memory < other.memory:
            return True
        if dflt is Dim.ZERO and self._scalars_missing_from(other):
            return True
        theirs = other.scalars or {}
        for name, lval in (self.scalars or {}).items():
            if name not in theirs and dflt is Dim.INFINITY:
                return True
            if lval < theirs.get(name, 0.0):
                return True
        return False

    def less_equal_partly(self, other: "Resource", dflt: Dim) -> bool:
        """True if any dimension has ``l <= r`` (with tolerance)."""
        if _le_tol(self.milli_cpu, other.milli_cpu) or _le_tol(self.memory, other.memory):
            return True
        if dflt is Dim.ZERO and self._scalars_missing_from(other):
            return True
        theirs = other.scalars or {}
        for name, lval in (self.scalars or {}).items():
            if name not in theirs and dflt is Dim.INFINITY:
                return True
            if _le_tol(lval, theirs.get(name, 0.0)):
                return True
        return False

    def less_equal_partly_with_dimension(
        self, other: "Resource", req: "Resource | None"
    ) -> tuple[bool, list[str]]:
        """True if, among dimensions where ``req`` > 0 (``pods`` skipped), any has ``l <= r`` (tolerance)."""
        if req is None:
            return False, []
        found = []
        if req.milli_cpu > 0 and _le_tol(self.milli_cpu, other.milli_cpu):
            found.append(CPU)
        if req.memory > 0 and _le_tol(self.memory, other.memory):
            found.append(MEMORY)
        for name, quant in (req.scalars or {}).items():
            if _is_ignored(name):
                continue
            if quant > 0 and _le_tol(self.get(name), other.get(name)):
                found.append(name)
        return bool(found), found

    def less_equal_partly_with_dimension_zero_filtered(
        self, other: "Resource", req: "Resource | None"
    ) -> tuple[bool, list[str]]:
        """``less_equal_partly_with_dimension`` after dropping dimensions where both sides are < 0.1."""
        if req is None:
            return False, []
        both_zero = lambda name: self.get(name) < MIN_RESOURCE and other.get(name) < MIN_RESOURCE  # noqa: E731
        filtered = Resource()
        if req.milli_cpu > 0 and not both_zero(CPU):
            filtered.milli_cpu = req.milli_cpu
        if req.memory > 0 and not both_zero(MEMORY):
            filtered.memory = req.memory
        if req.scalars is not None:
            filtered.scalars = {n: q for n, q in req.scalars.items() if q > 0 and not both_zero(n)}
        return self.less_equal_partly_with_dimension(other, filtered)

    def equal(self, other: "Resource") -> bool:
        """Per dimension ``==`` or within 0.1, over cpu, memory and self's scalars."""
        eq = lambda a, b: a == b or abs(a - b) < MIN_RESOURCE  # noqa: E731
        if not eq(self.milli_cpu, other.milli_cpu) or not eq(self.memory, other.memory):
            return False
        theirs = other.scalars or {}
        return all(eq(v, theirs.get(k, 0.0)) for k, v in (self.scalars or {}).items())

    def greater_partly_with_dimension(
        self, other: "Resource | None", req: "Resource | None"
    ) -> tuple[bool, list[str]]:
        """True if, among dimensions where ``req`` > 0 (``pods`` skipped), any has ``l > r`` (strict)."""
        if req is None:
            return False, []
        other = other if other is not None else Resource()
        found = []
        if req.milli_cpu > 0 and self.milli_cpu > other.milli_cpu:
            found.append(CPU)
        if req.memory > 0 and self.memory > other.memory:
            found.append(MEMORY)
        for name, quant in (req.scalars or {}).items():
            if _is_ignored(name):
                continue
            if quant > 0 and self.get(name) > other.get(name):
                found.append(name)
        return bool(found), found

    def greater_partly_with_relevant_dimensions(
        self, other: "Resource | None", req: "Resource | None"
    ) -> tuple[bool, list[str]]:
        """As ``greater_partly_with_dimension``, keeping cpu/memory only where ``other`` >= 0.1 and
        scalars only where ``other`` has the key (a 0 value still counts as present)."""
        if req is None:
            return False, []
        other = other if other is not None else Resource()
        filtered = Resource()
        if req.milli_cpu > 0 and other.milli_cpu >= MIN_RESOURCE:
            filtered.milli_cpu = req.milli_cpu
        if req.memory > 0 and other.memory >= MIN_RESOURCE:
            filtered.memory = req.memory
        if req.scalars is not None:
            theirs = other.scalars or {}
            filtered.scalars = {n: q for n, q in req.scalars.items() if q > 0 and n in theirs}
        return self.greater_partly_with_dimension(other, filtered)

    # ----------------------------------------------------------------- presentation

    def __repr__(self) -> str:
        def fmt(value: float) -> str:
            if value == MAX_FLOAT:
                return "maxFloat"
            if value == MAX_INT64:
                return "maxInt"
            return f"{value:.2f}"

        parts = [f"cpu {fmt(self.milli_cpu)}", f"memory {fmt(self.memory)}"]
        scalars = self.scalars or {}
        parts += [f"{name} {fmt(scalars[name])}" for name in sorted(scalars)]
        return ", ".join(parts)

    def __eq__(self, other: object) -> bool:
        """Exact equality of values, treating a missing scalar as equal only to a missing one."""
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and (self.scalars or {}) == (other.scalars or {})
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def to_json(self, *, keep_zero: bool = False) -> dict[str, float]:
        """User units: cpu in cores, memory in bytes, pods a count, other scalars in their own unit."""
        out: dict[str, float] = {}
        for name, value in self.dims():
            if value == 0 and not keep_zero and name not in (self.scalars or {}):
                continue
            out[name] = _user_value(name, value)
        return out

    def to_quantities(self, exact: bool = False) -> dict[str, str]:
        """Canonical Kubernetes quantities for the non-zero dimensions (``{"cpu": "1500m", "memory": "2Gi"}``).
        A value at or past 2^63-1 units reads ``unlimited`` (what a message shows for no limit),
        unless ``exact``: what is written to an object must parse back as a quantity."""
        out = {}
        for name, value in self.dims():
            if value < MIN_RESOURCE:
                continue
            out[name] = _exact_quantity_text(name, value) if exact else _quantity_text(name, value)
        return out


def _quantity_text(name: str, value: float) -> str:
    """One dimension as a canonical quantity, ``unlimited`` at or past 2^63-1 units."""
    if value >= MAX_INT64:
        return "unlimited"
    return _exact_quantity_text(name, value)


@functools.lru_cache(maxsize=4096)
def _exact_quantity_text(name: str, value: float) -> str:
    """One dimension as a canonical quantity (memoised: reasons format the same values every cycle)."""
    exact = Fraction(value) / (1 if name in (MEMORY, PODS) else 1000)
    fmt = QuantityFormat.BINARY if name == MEMORY else QuantityFormat.DECIMAL
    return format_quantity(exact.limit_denominator(10**9), fmt)


def _user_value(name: str, value: float) -> float:
    if name in (MEMORY, PODS) or value >= MAX_INT64:
        return value
    return value / 1000.0


def exceeded_part(left: Resource | None, right: Resource | None) -> Resource:
    """Per dimension ``max(l - r, 0)``, present only where l > r (Volcano's ``ExceededPart``)."""
    if right is None:
        return left if left is not None else Resource()
    if left is None:
        return Resource()
    return left.diff(right, Dim.ZERO)[0]


def intersection(r1: Resource, r2: Resource) -> list[str]:
    """Dimensions >= 0.1 on both sides, ``pods`` included, in r2's order."""
    names = set(r1.resource_names())
    return [name for name in r2.resource_names() if name in names]


def res_max(left: Resource, right: Resource) -> Resource:
    """Per-dimension max; scalars are the union of both maps, keeping only values >= 0."""
    res = Resource(max(left.milli_cpu, right.milli_cpu), max(left.memory, right.memory))
    if left.scalars is None and right.scalars is None:
        return res
    res.scalars = {k: v for k, v in (left.scalars or {}).items() if v >= 0}
    for name, value in (right.scalars or {}).items():
        if value >= 0:
            res.scalars[name] = max(value, res.scalars.get(name, 0.0))
    return res


def res_min(left: Resource, right: Resource) -> Resource:
    """Per-dimension min; without a scalar map on either side, no scalars; missing in right reads 0."""
    res = Resource(min(left.milli_cpu, right.milli_cpu), min(left.memory, right.memory))
    if left.scalars is None or right.scalars is None:
        return res
    res.scalars = {k: min(v, right.scalars.get(k, 0.0)) for k, v in left.scalars.items()}
    return res


def whole_below_exact(res: Resource) -> bool:
    """Whether every value of ``res`` is a whole number smaller in size than ``EXACT_SUMS_BELOW``."""
    for _, value in res.dims():
        if not float(value).is_integer() or abs(value) >= EXACT_SUMS_BELOW:
            return False
    return True


def share(left: float, right: float) -> float:
    """``left / right``; 0 when both are 0; 1 when only ``right`` is 0."""
    if right == 0:
        return 0.0 if left == 0 else 1.0
    return left / right


_REQUEST_IDS: dict[tuple, int] = {}
_NEXT_REQUEST_ID: Final = itertools.count()


def request_id(res: Resource) -> int:
    """A small number naming ``res``'s values (scalars in their order): equal values, equal
    numbers, for as long as the process runs. Tasks' requests are asked about again and again
    (the queue allows them? they fit where?); a number is a cheaper key than the values.

    Safe from several threads (the server's forecasts run simulations beside the control loop):
    ``setdefault`` and ``next`` each run whole, so two values never get one number (a value
    that loses a race leaves a number unused). The table keeps one entry per distinct request
    the process has seen: tasks' own requests, a handful of shapes in any real workload."""
    key = (res.milli_cpu, res.memory, tuple(res.scalars.items()) if res.scalars is not None else None)
    found = _REQUEST_IDS.get(key)
    if found is None:
        found = _REQUEST_IDS.setdefault(key, next(_NEXT_REQUEST_ID))
    return found
