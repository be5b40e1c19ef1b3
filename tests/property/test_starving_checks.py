"""preempt and reclaim find their starving jobs with the cheap checks first (validity, the dearest,
only where it decides something), and enqueue its waiting jobs passing over running jobs of
queues already seen. The checks are pure, so the jobs found, and for reclaim and enqueue the
queue heap (which queues it holds and in which layout: a queue's share may change while it waits
there, and queues that compare equal come out by it), must come out exactly as Volcano's order
of checks gives them."""

from __future__ import annotations

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


def _volcano_order(ssn) -> tuple[PriorityQueue, dict]:
    """Reclaim's starving jobs with Volcano's checks in Volcano's order."""
    queues: PriorityQueue = PriorityQueue(ssn.queue_order_fn)
    starving: dict[str, list] = {}
    seen: set[str] = set()
    for job in ssn.jobs.values():
        if job.is_pending() or not ssn.job_valid(job)[0]:
            continue
        found = ssn.queues.get(job.queue)
        if found is None:
            continue
        if found.uid not in seen:
            seen.add(found.uid)
            queues.push(found)
        if ssn.suspended(found) or not ssn.job_starving(job):
            continue
        starving.setdefault(job.queue, []).append(job)
    return queues, starving


@settings(max_examples=200, deadline=None)
@given(st.lists(job_shape, min_size=1, max_size=10), st.sampled_from([None, *QUEUES]))
def test_reclaim_finds_the_same_jobs_and_builds_the_same_queue_heap(shapes, suspended):
    ssn = _session(shapes, suspended)
    queues, starving = reclaim._starving(ssn)
    expected_queues, expected = _volcano_order(ssn)
    assert [q.name for q in queues._items] == [q.name for q in expected_queues._items]  # the heap's layout
    assert {name: [j.uid for j in jobs] for name, jobs in starving.items()} == {name: [j.uid for j in jobs] for name, jobs in expected.items()}


def test_a_queue_with_only_running_jobs_is_in_reclaims_heap():
    """Volcano pushes every queue with a valid admitted job, starving or not."""
    ssn = _session([("a", "Running", 1, 1, 1), ("b", "Inqueue", 2, 0, 2)], None)
    queues, starving = reclaim._starving(ssn)
    assert sorted(q.name for q in queues._items) == ["a", "b"]
    assert list(starving) == ["b"]


def _volcano_enqueue_order(ssn) -> tuple[PriorityQueue, dict]:
    """Enqueue's queues and waiting jobs as Volcano gathers them: every job looked at in turn."""
    queues: PriorityQueue = PriorityQueue(ssn.queue_order_fn)
    waiting: dict[str, list] = {}
    seen: set[str] = set()
    for job in ssn.jobs.values():
        found = ssn.queues.get(job.queue)
        if found is None:
            continue
        if found.uid not in seen:
            seen.add(found.uid)
            queues.push(found)
        if job.is_pending() and not ssn.suspended(found):
            waiting.setdefault(job.queue, []).append(job)
    return queues, waiting


@settings(max_examples=200, deadline=None)
@given(st.lists(job_shape, min_size=1, max_size=10), st.sampled_from([None, *QUEUES]))
def test_enqueue_gathers_the_same_jobs_and_builds_the_same_queue_heap(shapes, suspended):
    ssn = _session(shapes, suspended)
    queues, waiting = enqueue._waiting(ssn)
    expected_queues, expected = _volcano_enqueue_order(ssn)
    assert [q.name for q in queues._items] == [q.name for q in expected_queues._items]  # the heap's layout
    assert {name: [j.uid for j in jobs] for name, jobs in waiting.items()} == {name: [j.uid for j in jobs] for name, jobs in expected.items()}


def test_a_queue_with_only_running_jobs_is_in_enqueues_heap():
    """Volcano pushes every queue with a job, waiting or not."""
    ssn = _session([("a", "Running", 1, 1, 1), ("b", "Pending", 2, 0, 2)], None)
    queues, waiting = enqueue._waiting(ssn)
    assert sorted(q.name for q in queues._items) == ["a", "b"]
    assert list(waiting) == ["b"]
