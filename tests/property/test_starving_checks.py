"""preempt and reclaim find their starving jobs with the cheap checks first (validity, the dearest,
only where it decides something), and enqueue its waiting jobs passing over running jobs of
queues already seen. The checks are pure, so the jobs found, and for reclaim and enqueue the
queue heap (which queues it holds and in which layout: a queue's share may change while it waits
there, and queues that compare equal come out by it), must come out exactly as Volcano's order
of checks gives them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.scheduler.actions import enqueue, reclaim
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import open_session
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.pqueue import PriorityQueue
from tests.builders import node, pod, podgroup, queue

QUEUES = ["a", "b", "c"]
# one job: (queue, podgroup phase, tasks, running tasks, min member)
job_shape = st.tuples(st.sampled_from(QUEUES), st.sampled_from(["Pending", "Inqueue", "Running"]), st.integers(1, 3), st.integers(0, 3), st.integers(1, 4))


def _session(shapes: list[tuple], suspended: str | None):
    objects: list = [node("n0", cpu=1000, memory="1Ti")]
    objects += [queue(name).state("Suspended" if name == suspended else "Open").build() for name in QUEUES]
    for n, (queue_name, phase, tasks, running, min_member) in enumerate(shapes):
        objects.append(podgroup(f"j{n}").queue(queue_name).min_member(min_member).phase(phase).build())
        for t in range(tasks):
            built = pod(f"j{n}-{t}").group(f"j{n}").requests(cpu=1, memory="1Gi")
            objects.append((built.on("n0") if t < running else built).build())
    return open_session(ClusterState.from_objects(objects), load_config(default_config_text()), now=100.0)


def _pushed_once(ssn, job, queues: PriorityQueue, seen: set[str]):
    """The job's queue (None: not in the session), pushed if it is the first seen of it."""
    found = ssn.queues.get(job.queue)
    if found is not None and found.uid not in seen:
        seen.add(found.uid)
        queues.push(found)
    return found


def _volcano_order(ssn) -> tuple[PriorityQueue, dict]:
    """Reclaim's starving jobs with Volcano's checks in Volcano's order."""
    queues: PriorityQueue = PriorityQueue(ssn.queue_order_fn)
    starving: dict[str, list] = {}
    seen: set[str] = set()
    for job in ssn.jobs.values():
        if job.is_pending() or not ssn.job_valid(job)[0]:
            continue
        found = _pushed_once(ssn, job, queues, seen)
        if found is None:
            continue
        if ssn.suspended(found) or not ssn.job_starving(job):
            continue
        starving.setdefault(job.queue, []).append(job)
    return queues, starving


def _volcano_enqueue_order(ssn) -> tuple[PriorityQueue, dict]:
    """Enqueue's queues and waiting jobs as Volcano gathers them: every job looked at in turn."""
    queues: PriorityQueue = PriorityQueue(ssn.queue_order_fn)
    waiting: dict[str, list] = {}
    seen: set[str] = set()
    for job in ssn.jobs.values():
        found = _pushed_once(ssn, job, queues, seen)
        if found is None:
            continue
        if job.is_pending() and not ssn.suspended(found):
            waiting.setdefault(job.queue, []).append(job)
    return queues, waiting



GATHERED = [("reclaim", reclaim._starving, _volcano_order), ("enqueue", enqueue._waiting, _volcano_enqueue_order)]


@pytest.mark.parametrize("action, gather, volcano", GATHERED, ids=[a for a, _, _ in GATHERED])
@settings(max_examples=200, deadline=None)
@given(st.lists(job_shape, min_size=1, max_size=10), st.sampled_from([None, *QUEUES]))
def test_the_same_jobs_are_gathered_and_the_same_queue_heap_built(action, gather, volcano, shapes, suspended):
    ssn = _session(shapes, suspended)
    queues, found = gather(ssn)
    expected_queues, expected = volcano(ssn)
    assert [q.name for q in queues._items] == [q.name for q in expected_queues._items]  # the heap's layout
    assert {name: [j.uid for j in jobs] for name, jobs in found.items()} == {name: [j.uid for j in jobs] for name, jobs in expected.items()}


@pytest.mark.parametrize("action, gather, phase", [("reclaim", reclaim._starving, "Inqueue"), ("enqueue", enqueue._waiting, "Pending")])
def test_a_queue_with_only_running_jobs_is_in_the_heap(action, gather, phase):
    """Volcano pushes every queue with a (valid, admitted, for reclaim) job, starving or waiting or not."""
    ssn = _session([("a", "Running", 1, 1, 1), ("b", phase, 2, 0, 2)], None)
    queues, found = gather(ssn)
    assert sorted(q.name for q in queues._items) == ["a", "b"]
    assert list(found) == ["b"]
