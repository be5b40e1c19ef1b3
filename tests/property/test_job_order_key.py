"""``Session.job_order_key``: the built-in plugins' keys order jobs exactly as their comparators
do, so a ``KeyedQueue`` pops jobs in the order a ``PriorityQueue(job_order_fn)`` pops them.
Allocate and enqueue use the keyed heap; any difference would change which job runs first."""

from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import open_session
from lahar.scheduler.framework.config import load_config
from lahar.scheduler.pqueue import KeyedQueue, PriorityQueue
from tests.builders import node, pod, podgroup, priority_class, queue

ORDER_PLUGINS = ["priority", "gang", "drf", "sla"]

# one job: (priority class or none, tasks, running tasks, min member, creation second, sla wait or none)
job_shape = st.tuples(
    st.sampled_from([None, "low", "high"]),
    st.integers(1, 3),
    st.integers(0, 3),
    st.integers(1, 3),
    st.integers(0, 3),
    st.sampled_from([None, "10s", "30s"]),
)


def cluster(shapes: list[tuple]) -> ClusterState:
    objects: list = [priority_class("low", 10), priority_class("high", 100), queue("q").build(), node("n0", cpu=1000, memory="1Ti")]
    for n, (klass, tasks, running, min_member, second, wait) in enumerate(shapes):
        group = podgroup(f"j{n}").queue("q").min_member(min_member)
        if wait is not None:
            group = group.annotation("sla-waiting-time", wait)
        data = group.manifest()
        data["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:0{second}Z"
        if klass is not None:
            data["spec"]["priorityClassName"] = klass
        objects.append(podgroup(f"j{n}").build().model_validate(data))
        for t in range(tasks):
            built = pod(f"j{n}-{t}").group(f"j{n}").requests(cpu=t + 1, memory=f"{n + 1}Gi")
            objects.append((built.on("n0") if t < running else built).build())
    return ClusterState.from_objects(objects)


def session(state: ClusterState, plugins: list[str]):
    conf = load_config({"actions": "allocate", "tiers": [{"plugins": [{"name": name} for name in plugins]}]}, fill_defaults=True)
    return open_session(state, conf, now=100.0)


@settings(max_examples=150, deadline=None)
@given(st.lists(job_shape, min_size=2, max_size=8), st.permutations(ORDER_PLUGINS), st.integers(1, 4))
def test_the_key_orders_every_pair_as_the_comparators_do(shapes, plugins, count):
    ssn = session(cluster(shapes), list(plugins[:count]))
    key = ssn.job_order_key()
    assert key is not None
    for left, right in itertools.permutations(ssn.jobs.values(), 2):
        assert ssn.job_order_fn(left, right) == (key(left) < key(right))


@settings(max_examples=100, deadline=None)
@given(st.lists(job_shape, min_size=2, max_size=8), st.integers(0, 2**32))
def test_the_keyed_heap_pops_as_the_comparison_heap(shapes, seed):
    """Pops and pushes mixed, a popped job pushed back as allocate does: the same sequence."""
    rng = random.Random(seed)
    ssn = session(cluster(shapes), ORDER_PLUGINS)
    jobs = list(ssn.jobs.values())
    rng.shuffle(jobs)
    keyed, compared = KeyedQueue(ssn.job_order_key(), jobs), PriorityQueue(ssn.job_order_fn, jobs)
    popped = []
    while not compared.empty():
        first, second = keyed.pop(), compared.pop()
        assert first is second
        popped.append(first)
        if rng.random() < 0.3:
            keyed.push(first)
            compared.push(first)
    assert keyed.empty()
    assert len(popped) >= len(jobs)


def test_a_comparator_without_a_key_leaves_the_comparison_heap():
    ssn = session(cluster([(None, 1, 0, 1, 0, None), ("high", 1, 0, 1, 1, None)]), ["priority", "drf"])
    assert isinstance(ssn.job_heap(), KeyedQueue)
    ssn.add("job_order", "drf", lambda left, right: 0)  # a comparator replaced, its key not
    ssn.fns["job_order_key"].pop("drf")
    ssn.memo.clear()
    ssn._enabled_cache.clear()
    assert ssn.job_order_key() is None
    heap = ssn.job_heap(ssn.jobs.values())
    assert isinstance(heap, PriorityQueue)
    assert [job.name for job in heap.drain()] == ["j1", "j0"]  # priority first, then creation
