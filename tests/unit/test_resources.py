"""Resource vectors: Volcano's units, comparisons with and without tolerance, arithmetic laws."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.resources import (
    MAX_FLOAT,
    Dim,
    Resource,
    exceeded_part,
    intersection,
    res_max,
    res_min,
    share,
)


def r(cpu=0.0, mem=0.0, **scalars):
    return Resource(cpu, mem, {k.replace("_", "/"): v for k, v in scalars.items()} if scalars else None)


def test_from_list_units():
    res = Resource.from_list({"cpu": "1500m", "memory": "1Gi", "pods": "10", "nvidia.com/gpu": "2", "count/pods": "5"})
    assert res.milli_cpu == 1500
    assert res.memory == 2**30
    assert res.scalars == {"pods": 10, "nvidia.com/gpu": 2000}
    assert res.max_task_num == 10


def test_to_json_user_units():
    res = Resource.from_list({"cpu": "1500m", "memory": "1Gi", "pods": "3", "nvidia.com/gpu": "0.5"})
    assert res.to_json() == {"cpu": 1.5, "memory": 2**30, "pods": 3, "nvidia.com/gpu": 0.5}
    assert Resource.from_json(res.to_json()) == res


def test_to_quantities():
    res = Resource.from_list({"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "8"})
    assert res.to_quantities() == {"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "8"}


def test_to_quantities_past_int64_units_is_unlimited_for_people_and_exact_for_objects():
    vast = Resource.from_list({"cpu": "10000000000000000"})  # 10^19 milli-CPUs: past 2^63-1 of them
    assert vast.to_quantities() == {"cpu": "unlimited"}
    written = vast.to_quantities(exact=True)
    assert written == {"cpu": "10P"} and Resource.from_list(written).get("cpu") == vast.get("cpu")


def test_is_empty_ignores_pods():
    assert r(0.05, 0.05, pods=5).is_empty()
    assert not r(0.2).is_empty()
    assert not r(0, 0, nvidia_com_gpu=1).is_empty()


def test_resource_names_include_pods():
    assert r(1000, 0, pods=1).resource_names() == ["cpu", "pods"]


LESS_EQUAL = [
    # left, right, default, expected
    (r(1000, 100), r(1000, 100), Dim.ZERO, True),
    (r(1000.05, 100), r(1000, 100), Dim.ZERO, True),  # tolerance 0.1
    (r(1000.2, 100), r(1000, 100), Dim.ZERO, False),
    (r(1000, 100, gpu=1), r(1000, 100), Dim.ZERO, False),  # missing right scalar reads 0
    (r(1000, 100, gpu=1), r(1000, 100), Dim.INFINITY, True),  # ... or is skipped
    (r(1000, 100), r(1000, 100, gpu=1), Dim.INFINITY, False),  # right has a scalar left lacks
    (r(1000, 100), r(1000, 100, gpu=1), Dim.ZERO, True),
]


@pytest.mark.parametrize("left,right,dflt,expected", LESS_EQUAL)
def test_less_equal(left, right, dflt, expected):
    assert left.less_equal(right, dflt) is expected


def test_less_is_strict_everywhere():
    assert r(1, 1).less(r(2, 2), Dim.ZERO)
    assert not r(1, 2).less(r(2, 2), Dim.ZERO)


def test_dimension_aware_is_strict_and_only_requested():
    used, cap, req = r(2000, 5), r(2000, 4), r(1000, 0)
    assert used.less_equal_with_dimension_and_resources_name(cap, req) == (True, [])
    req2 = r(1000, 1)
    assert used.less_equal_with_dimension_and_resources_name(cap, req2) == (False, ["memory"])
    # no tolerance
    assert r(1000.05).less_equal_with_dimension_and_resources_name(r(1000), r(1)) == (False, ["cpu"])
    # pods skipped
    assert r(0, 0, pods=5).less_equal_with_dimension_and_resources_name(r(0, 0, pods=1), r(0, 0, pods=1))[0]


def test_dimension_aware_without_left_scalar_map_skips_scalars():
    assert r(1000).less_equal_with_dimension_and_resources_name(r(1000), r(1000, 0, gpu=1000))[0]


def test_partly_variants():
    assert r(3000, 1).less_equal_partly_with_dimension(r(2000, 2), r(1, 1)) == (True, ["memory"])
    assert r(3000, 3).less_equal_partly_with_dimension(r(2000, 2), r(1, 1)) == (False, [])
    # zero filtered: both sides ~0 on memory -> memory dropped
    assert r(3000, 0).less_equal_partly_with_dimension_zero_filtered(r(2000, 0), r(1, 1)) == (False, [])
    assert r(3000, 0).less_equal_partly_with_dimension(r(2000, 0), r(1, 1)) == (True, ["memory"])


def test_greater_partly_with_relevant_dimensions():
    alloc, deserved = r(3000, 10, gpu=0), r(2000, 0, gpu=0)
    req = r(1000, 5, gpu=1000)
    # memory dropped (deserved < 0.1); gpu kept because deserved has the key, but 0 > 0 is false
    assert alloc.greater_partly_with_relevant_dimensions(deserved, req) == (True, ["cpu"])
    assert r(1000, 10).greater_partly_with_relevant_dimensions(r(2000, 0), r(1000, 5)) == (False, [])


def test_diff_and_exceeded_part():
    inc, dec = r(3000, 1, gpu=5).diff(r(1000, 4), Dim.ZERO)
    assert inc.milli_cpu == 2000 and inc.scalars == {"gpu": 5}
    assert dec.memory == 3
    assert exceeded_part(r(3000, 1), r(1000, 4)).milli_cpu == 2000
    assert exceeded_part(r(3000, 1), r(1000, 4)).memory == 0


@pytest.mark.parametrize(
    "left, right, missing, increased, decreased",
    [
        # a scalar missing on the right reads as infinite (-1): it goes to the decreased side as such
        (r(1000, 4, gpu=2), r(3000, 1), Dim.INFINITY, (0, 3, {}), (2000, 0, {"gpu": -1.0})),
        # missing on the left reads as 0; equal values land on the decreased side as 0
        (r(1000, 4), r(1000, 4, gpu=2), Dim.ZERO, (0, 0, {}), (0, 0, {"gpu": 2.0})),
        # an infinite value on the left is kept on the increased side
        (r(0, 0, gpu=-1), r(0, 0, gpu=3), Dim.ZERO, (0, 0, {"gpu": -1.0}), (0, 0, {})),
        # without scalar maps, both sides still have one (empty)
        (r(5, 1), r(2, 3), Dim.ZERO, (3, 0, {}), (0, 2, {})),
    ],
)
def test_diff_reads_missing_and_infinite_scalars(left, right, missing, increased, decreased):
    inc, dec = left.diff(right, missing)
    assert (inc.milli_cpu, inc.memory, inc.scalars) == increased
    assert (dec.milli_cpu, dec.memory, dec.scalars) == decreased


def test_min_dimension_resource():
    assert r(3000, 5, gpu=4).min_dimension_resource(r(1000, 10), Dim.INFINITY).scalars == {"gpu": 4}
    assert r(3000, 5, gpu=4).min_dimension_resource(r(1000, 10), Dim.ZERO).scalars == {"gpu": 0}
    assert r(3000, 5, gpu=4).min_dimension_resource(r(1000, 10, gpu=2), Dim.ZERO).scalars == {"gpu": 2}


def test_helpers():
    assert res_max(r(1, 5, gpu=1), r(2, 3, pods=-1)).scalars == {"gpu": 1}
    assert res_min(r(1, 5, gpu=1), r(2, 3, pods=1)).scalars == {"gpu": 0}
    assert share(0, 0) == 0 and share(1, 0) == 1 and share(1, 4) == 0.25
    assert intersection(r(1000, 0, pods=1), r(1000, 5, pods=2)) == ["cpu", "pods"]


def test_sub_without_scalar_map_ignores_scalars():
    left = r(2000, 2)
    left.sub(r(1000, 1, gpu=1))
    assert left.scalars is None and left.milli_cpu == 1000


def test_infinite_repr():
    assert repr(Resource.infinite()).startswith("cpu maxFloat, memory maxFloat")
    assert Resource.infinite().milli_cpu == MAX_FLOAT


values = st.floats(min_value=0, max_value=1e12, allow_nan=False)
resources = st.builds(
    lambda c, m, g: Resource(c, m, {"nvidia.com/gpu": g}),
    values,
    values,
    values,
)


@given(resources, resources)
def test_add_commutes(a, b):
    assert a.clone().add(b).equal(b.clone().add(a))


@given(resources, resources)
def test_add_then_sub_restores(a, b):
    assert a.clone().add(b).sub(b).equal(a)


@given(resources, resources)
def test_less_equal_after_add(a, b):
    assert a.less_equal(a.clone().add(b), Dim.ZERO)


@given(resources, resources)
def test_diff_partitions(a, b):
    inc, dec = a.diff(b, Dim.ZERO)
    # every dimension lands on exactly one side
    for name in ("cpu", "memory", "nvidia.com/gpu"):
        assert inc.get(name) == 0 or dec.get(name) == 0


@given(resources, resources)
def test_max_min_bounds(a, b):
    hi, lo = res_max(a, b), res_min(a, b)
    assert a.less_equal(hi, Dim.ZERO) and b.less_equal(hi, Dim.ZERO)
    assert lo.less_equal(a, Dim.ZERO) and lo.less_equal(b, Dim.ZERO)


@given(resources, resources)
def test_a_clone_is_equal_and_independent(a, b):
    a.max_task_num = 7
    twin = a.clone()
    assert twin == a and twin.max_task_num == 7 and (twin.scalars is None) == (a.scalars is None)
    before = a.clone()
    twin.add(b).add_scalar("example.com/fpga", 1000.0)
    assert a == before
