"""Metrics of a replay, checked against figures computed by hand on small scenarios."""

from __future__ import annotations

import math

import numpy as np
import pytest

from builders import node, queue, timed
from lahar.sim.engine import Simulation
from lahar.sim.inputs import load_simulation_inputs, resolve_config
from lahar.sim.metrics import Bins, MetricsCollector, jain_index, percentile, queue_share


def run(objects, config=None, **collector):
    metrics = MetricsCollector(**collector)
    sim = Simulation(objects, resolve_config(config, objects), observers=[metrics])
    sim.run_until(math.inf)
    return metrics.result(sim)


@pytest.fixture(scope="module")
def two_queues():
    """Two teams share one 2-CPU node with equal weights. a1 (10 s) and b1 (4 s) start at once;
    b2 arrives at 2 s and waits for b1 to end at 4 s; a2 arrives at 3 s but its queue already
    holds its deserved 1 CPU, so b2 gets the CPU freed at 4 s and a2 waits until b2 ends at 8 s."""
    objects = [
        node("n1", cpu="2", memory="4Gi"),
        queue("a").weight(1).build(),
        queue("b").weight(1).build(),
        timed("a1", "a", "0s", "10s"),
        timed("b1", "b", "0s", "4s"),
        timed("b2", "b", "2s", "4s"),
        timed("a2", "a", "3s", "2s"),
    ]
    return run(objects)


def test_each_jobs_submit_start_end_and_wait(two_queues):
    jobs = {key.split("/")[1]: (j["submit"], j["start"], j["end"], j["wait"], j["run"]) for key, j in two_queues["jobs"].items()}
    assert jobs == {
        "a1": (0.0, 0.0, 10.0, 0.0, 10.0),
        "b1": (0.0, 0.0, 4.0, 0.0, 4.0),
        "b2": (2.0, 4.0, 8.0, 2.0, 4.0),
        "a2": (3.0, 8.0, 10.0, 5.0, 2.0),
    }


def test_per_queue_wait_percentiles_and_hours(two_queues):
    a, b = two_queues["queues"]["a"], two_queues["queues"]["b"]
    # waits a: [0, 5], b: [0, 2]; linear interpolation between order statistics
    assert (a["wait_p50"], a["wait_p90"], a["wait_mean"], a["wait_max"]) == (2.5, 4.5, 2.5, 5.0)
    assert (b["wait_p50"], b["wait_p90"]) == (1.0, pytest.approx(1.8))
    # cpu-seconds: a = 10 + 2 = 12, b = 4 + 4 = 8, over 10 s
    assert a["usage_hours"]["cpu"] == pytest.approx(12 / 3600) and b["usage_hours"]["cpu"] == pytest.approx(8 / 3600)
    assert a["usage_share"]["cpu"] == pytest.approx(0.6) and b["usage_share"]["cpu"] == pytest.approx(0.4)
    assert a["mean_allocated"]["cpu"] == pytest.approx(1.2) and b["mean_pending"] == pytest.approx(2 / 10)
    assert (a["jobs"], a["started"], a["completed"], a["never_started"], a["evictions"]) == (2, 2, 2, 0, 0)
    assert "default" not in two_queues["queues"]  # no job, nothing used


def test_summary_utilisation_fairness_and_horizon(two_queues):
    s = two_queues["summary"]
    assert s["time"] == 10.0  # the last job's end, not the idle cycle after it
    assert (s["jobs"], s["started"], s["completed"], s["never_started"], s["rejected"]) == (4, 4, 4, 0, 0)
    assert s["wait_p50"] == 1.0 and s["wait_mean"] == 1.75  # waits [0, 0, 2, 5]
    assert s["utilisation"]["cpu"] == 1.0 and s["utilisation"]["memory"] == 0.0
    assert (s["reclaims"], s["preemptions"], s["evictions"]) == (0, 0, {})
    assert s["jain_mean"] == 1.0  # both queues always at their deserved share


def test_series_are_time_averages_on_the_cycle_grid(two_queues):
    series = two_queues["series"]
    assert series["width"] == 1.0 and series["time"] == [float(t) for t in range(10)]
    assert series["utilisation"]["cpu"] == [1.0] * 10
    assert series["queues"]["b"]["pending"] == [0, 0, 1, 1, 0, 0, 0, 0, 0, 0]
    assert series["queues"]["a"]["allocated"]["cpu"] == [1, 1, 1, 1, 1, 1, 1, 1, 2, 2]


def test_reclaims_are_counted_per_reason_job_and_queue():
    """Seed scenario 2: default lends its idle share; at 20 s queue test reclaims it, evicting job2."""
    objects, conf = load_simulation_inputs(["examples/seeds/2-lend-and-reclaim.yaml"], None)
    metrics = MetricsCollector()
    sim = Simulation(objects, conf, observers=[metrics])
    sim.run_until(120)
    result = metrics.result(sim)
    assert (result["summary"]["reclaims"], result["summary"]["evictions"]) == (1, {"reclaim": 1})
    assert result["jobs"]["default/job2"]["evictions"] == 1 and result["queues"]["default"]["evictions"] == 1
    assert result["jobs"]["default/job3"]["wait"] == 1.0  # arrives at 20 s, pipelined, bound at 21 s
    assert result["summary"]["time"] == 22.0  # no job ends: measured up to the last cycle the run made


def test_a_job_that_never_fits_is_never_started():
    """A job asking for more than any node has waits forever and is reported, not averaged."""
    objects = [node("n1", cpu="2", memory="4Gi"), queue("a").build(), timed("big", "a", "0s", "10s", cpu="3"), timed("ok", "a", "1s", "5s")]
    result = run(objects)
    assert result["jobs"]["default/big"]["start"] is None and result["jobs"]["default/big"]["wait"] is None
    assert (result["summary"]["never_started"], result["queues"]["a"]["never_started"], result["summary"]["started"]) == (1, 1, 1)


@pytest.mark.parametrize(
    "shares, expected",
    [([1.0, 1.0], 1.0), ([1.0, 0.0], 0.5), ([2.0, 1.0], 0.9), ([0.0, 0.0], 1.0), ([], None), ([0.5], 1.0)],
)
def test_jain_index(shares, expected):
    assert jain_index(shares) == expected


def test_share_and_percentile_helpers():
    assert queue_share({"cpu": 1.0, "memory": 4.0}, {"cpu": 2.0, "memory": 2.0, "pods": 1.0}) == 2.0
    assert queue_share({"cpu": 1.0}, {"cpu": 0.0}) is None
    assert percentile([], 50) is None and percentile([1.0, 3.0], 50) == 2.0


def test_bins_merge_in_pairs_and_keep_time_averages():
    bins = Bins(width=1.0, max_bins=4)
    bins.add(0.0, 2.0, np.array([1.0]))
    bins.add(2.0, 3.0, np.array([3.0, 5.0]))  # a column appears later: it read 0 before
    assert bins.width == 1.0 and bins.averages()[1].tolist() == [[1.0, 0.0], [1.0, 0.0], [3.0, 5.0]]
    bins.add(3.0, 6.0, np.array([0.0, 1.0]))  # needs 6 bins: pairs merge, the width doubles
    starts, table = bins.averages()
    assert bins.width == 2.0 and starts == [0.0, 2.0, 4.0]
    assert table.tolist() == [[1.0, 0.0], [1.5, 3.0], [0.0, 1.0]]


def test_memory_stays_bounded_on_a_long_replay():
    objects = [node("n1", cpu="1", memory="1Gi"), queue("a").build()]
    objects += [timed(f"j{i}", "a", f"{i * 1000}s", "10s") for i in range(60)]
    result = run(objects, max_points=16)
    assert len(result["series"]["time"]) <= 16 and result["series"]["width"] == 4096.0
    assert result["summary"]["utilisation"]["cpu"] == pytest.approx(600 / 59010)


def test_the_state_vector_is_kept_only_while_its_figures_stand():
    """A cycle whose leaf queues hold, deserve and keep waiting what they did in the last one
    keeps the last state vector; any one of those figures moving alone gives a new one, with
    the new figure in it."""
    from types import SimpleNamespace

    from lahar.resources import Resource

    def record(allocated: dict, deserved: dict, pending: dict):
        attrs = {name: SimpleNamespace(deserved=Resource.from_list({"cpu": cpu})) for name, cpu in deserved.items()}
        result = SimpleNamespace(session=SimpleNamespace(queue_attrs=attrs), queue_allocated={n: Resource.from_list({"cpu": c}) for n, c in allocated.items()})
        return SimpleNamespace(result=result), pending

    metrics = MetricsCollector()
    metrics.capacity, metrics._leaves = {"cpu": 4.0}, ["a", "b"]
    base = ({"a": "1", "b": "2"}, {"a": "2", "b": "2"}, {"a": 1, "b": 0})
    first = metrics._snapshot(None, *record(*base))
    metrics._state = first
    assert metrics._snapshot(None, *record(*base)) is first  # new objects, the same figures
    column = metrics.columns
    for which, moved, key, value in (
        (0, {"a": "1", "b": "3"}, ("allocated", "b", "cpu"), 3.0),
        (1, {"a": "3", "b": "2"}, ("deserved", "a", "cpu"), 3.0),
        (2, {"a": 1, "b": 2}, ("pending", "b"), 2.0),
    ):
        figures = list(base)
        figures[which] = moved
        metrics._state = first
        metrics._kept_figures = None
        metrics._snapshot(None, *record(*base))  # the base figures kept again
        state = metrics._snapshot(None, *record(*figures))
        assert state is not first and state[column[key]] == value, key
    assert first[column[("util", "cpu")]] == 0.75


@pytest.mark.parametrize("seed", range(10))
def test_a_leafs_part_is_worked_out_again_only_when_its_figures_moved(seed):
    """Random cycles that move some leaves' allocation, deserved share or waiting count: the
    vector made from the leaves' kept parts is the one made afresh every time, column for column."""
    import random

    from lahar.resources import Resource

    rng = random.Random(seed)
    kept, fresh = MetricsCollector(), MetricsCollector()
    leaves = ["a", "b", "c"]
    capacity = {"cpu": 8.0, "memory": 64.0}
    for metrics in (kept, fresh):
        metrics.capacity, metrics._leaves = capacity, leaves

    def resource() -> Resource | None:
        if rng.random() < 0.1:
            return None
        return Resource.from_list({"cpu": str(rng.randrange(5)), "memory": f"{rng.randrange(3)}Gi"})

    figures = [(resource(), resource(), rng.randrange(3)) for _ in leaves]
    for _ in range(40):
        for i in rng.sample(range(len(leaves)), rng.randrange(len(leaves) + 1)):
            which = rng.randrange(3)
            moved = list(figures[i])
            moved[which] = rng.randrange(3) if which == 2 else resource()
            figures[i] = tuple(moved)
        fresh._leaf_parts = None
        expected = fresh._state_of(list(figures))
        assert np.array_equal(kept._state_of(list(figures)), expected)
        assert kept.columns == fresh.columns
