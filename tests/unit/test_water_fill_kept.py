"""proportion's water fill copies the last fill's deserved shares when it reads the same values
(``_water_fill``): whatever moved alone, the shares are those worked out afresh."""

from __future__ import annotations

import pytest

from lahar.resources import Resource
from lahar.scheduler.plugins import proportion
from lahar.scheduler.plugins.queueattr import QueueAttr


def attrs_of(spec: dict) -> list[QueueAttr]:
    """Queues as proportion opens them: name, weight, request, capability, guarantee, allocation."""
    made = []
    for name, (weight, request, capability, guarantee, allocated) in spec.items():
        attr = QueueAttr(name=name, weight=weight)
        attr.request = Resource.from_list(request)
        attr.real_capability = Resource.from_list(capability) if capability is not None else None
        attr.guarantee = Resource.from_list(guarantee)
        attr.allocated = Resource.from_list(allocated)
        made.append(attr)
    return made


BASE = {
    "a": (1, {"cpu": "6", "memory": "8Gi"}, {"cpu": "16", "memory": "64Gi"}, {}, {"cpu": "2"}),
    "b": (2, {"cpu": "10", "memory": "4Gi", "nvidia.com/gpu": "2"}, {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4"}, {}, {"cpu": "1"}),
    "c": (1, {"cpu": "1", "memory": "1Gi"}, None, {"cpu": "1"}, {}),
}
TOTAL = {"cpu": "12", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "110"}


def moved(queue: str, field: int, value) -> dict:
    spec = dict(BASE)
    entry = list(spec[queue])
    entry[field] = value
    spec[queue] = tuple(entry)
    return spec


CASES = [
    ("the same", BASE, TOTAL),
    ("the total", BASE, {"cpu": "13", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "110"}),
    ("the total's pods alone", BASE, {"cpu": "12", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "111"}),
    ("a weight", moved("a", 0, 3), TOTAL),
    ("a request", moved("b", 1, {"cpu": "9", "memory": "4Gi", "nvidia.com/gpu": "2"}), TOTAL),
    ("a capability", moved("a", 2, {"cpu": "3", "memory": "64Gi"}), TOTAL),
    ("a capability set", moved("c", 2, {"cpu": "1"}), TOTAL),
    ("a guarantee", moved("c", 3, {"cpu": "4"}), TOTAL),
    ("an allocation (the shares only)", moved("a", 4, {"cpu": "5"}), TOTAL),
    ("a queue fewer", {name: BASE[name] for name in ("a", "b")}, TOTAL),
    ("another order", {name: BASE[name] for name in ("b", "a", "c")}, TOTAL),
]


def fill(spec: dict, total: dict) -> list[QueueAttr]:
    attrs = attrs_of(spec)
    proportion._water_fill(attrs, Resource.from_list(total))
    return attrs


@pytest.mark.parametrize("name,spec,total", CASES, ids=[c[0] for c in CASES])
def test_a_fill_after_another_gives_the_shares_of_a_fresh_one(name, spec, total):
    proportion._LAST_FILL[0] = None
    expected = [(a.name, a.deserved, a.deserved.max_task_num, a.share) for a in fill(spec, total)]
    proportion._LAST_FILL[0] = None
    fill(BASE, TOTAL)  # the fill kept: the base one
    got = [(a.name, a.deserved, a.deserved.max_task_num, a.share) for a in fill(spec, total)]
    assert got == expected
    if name == "the same":  # copied, not worked out again: the kept fill's objects are not handed out
        kept = proportion._LAST_FILL[0]
        again = fill(spec, total)
        assert proportion._LAST_FILL[0] is kept
        assert all(a.deserved is not d for a, d in zip(again, kept.deserved))


def test_a_fill_on_queues_that_already_deserve_something_is_worked_out():
    proportion._LAST_FILL[0] = None
    fill(BASE, TOTAL)
    kept = proportion._LAST_FILL[0]
    attrs = attrs_of(BASE)
    attrs[0].deserved = Resource.from_list({"cpu": "1"})
    proportion._water_fill(attrs, Resource.from_list(TOTAL))
    proportion._LAST_FILL[0] = None
    fresh = attrs_of(BASE)
    fresh[0].deserved = Resource.from_list({"cpu": "1"})
    proportion._water_fill(fresh, Resource.from_list(TOTAL))
    assert [a.deserved for a in attrs] == [a.deserved for a in fresh]
    assert kept is not None
