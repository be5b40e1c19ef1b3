"""proportion adds jobs alike to their queues' totals once, by equal parts (``queueattr.add_parts``),
and keeps each job's part while its tasks and phase stand. The totals must be exactly those of
``add_job`` job by job: the same values, the same scalar keys in the same order, a scalar map
where ``add_job`` makes one (``Resource.sub`` reads its absence); and a trace replayed through
whole cycles must decide, phase and explain exactly as with the jobs added one by one."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.resources import Resource
from lahar.scheduler.api import JobInfo, TaskInfo, TaskStatus
from lahar.scheduler.plugins import proportion
from lahar.scheduler.plugins.queueattr import QueueAttr, add_job, add_lookalikes, add_parts, interned, job_bound, job_part, lookalike_part
from tests.trace_slice import BACKLOG_CLUSTERS, fingerprint, replay_slice

SCALARS = ("nvidia.com/gpu", "pods", "example.com/fpga")
STATUSES = (TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.SUCCEEDED, TaskStatus.RELEASING)

whole = st.integers(min_value=0, max_value=2**20).map(float)
scalars = st.none() | st.dictionaries(st.sampled_from(SCALARS), st.sampled_from([0.0, 1000.0, 8000.0]) | whole, max_size=3)
requests = st.builds(Resource, whole, whole, scalars)
minimums = st.none() | st.builds(Resource, whole, whole, scalars)


@st.composite
def jobs(draw, uid: str) -> JobInfo:
    minimum = draw(minimums)
    job = JobInfo(uid, uid, "ns", draw(st.sampled_from(["a", "b"])), min_available=draw(st.integers(0, 3)), min_resources=minimum)
    job.min_member = job.min_available
    job.min_resource_names = None if minimum is None else tuple(draw(st.lists(st.sampled_from(["cpu", "memory", *SCALARS]), unique=True, max_size=4)))
    job.phase = draw(st.sampled_from(["Pending", "Inqueue", "Running"]))
    for k in range(draw(st.integers(0, 4))):
        job.add_task(TaskInfo(f"{uid}-{k}", f"{uid}-{k}", "ns", uid, draw(requests), status=draw(st.sampled_from(STATUSES))))
    return job


def _totals(attr: QueueAttr) -> list:
    return [(r.milli_cpu, r.memory, None if r.scalars is None else list(r.scalars.items())) for r in (attr.allocated, attr.request, attr.inqueue, attr.elastic)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=30).flatmap(lambda picks: st.tuples(st.just(picks), st.lists(jobs("j"), min_size=6, max_size=6))), st.lists(st.integers(0, 3), min_size=30, max_size=30))
def test_jobs_added_by_parts_give_the_totals_of_add_job(drawn, lookalikes):
    """Jobs repeated (the same object several times, as equal jobs would be) and look-alike
    counts: both ways give equal totals, queue by queue."""
    picks, pool = drawn
    one_by_one: dict[str, QueueAttr] = {}
    groups: dict[str, dict] = {}
    bounds: dict[str, float] = {}
    for n, pick in enumerate(picks):
        job = pool[pick]
        add_job(one_by_one.setdefault(job.queue, QueueAttr(job.queue)), job)
        parts = groups.setdefault(job.queue, {})
        if n % 3 == 0:  # a job first seen stands for itself (a copy: each job is in a cycle once)
            entry, weight = job.clone(), job_bound(job)
        else:
            part = job_part(job)
            assert part is not None  # whole numbers
            entry = part = interned(part) if n % 3 == 1 else part  # equal parts interned count together
            weight = part.largest
        assert weight >= 0.0
        parts[entry] = parts.get(entry, 0) + 1
        bounds[job.queue] = bounds.get(job.queue, 0.0) + weight
        if lookalikes[n] and job.tasks_in(TaskStatus.PENDING):
            add_lookalikes(one_by_one[job.queue], job, lookalikes[n])
            alike = lookalike_part(job)
            parts[alike] = parts.get(alike, 0) + lookalikes[n]
            bounds[job.queue] += alike.largest * lookalikes[n]
    for queue, parts in groups.items():
        attr = QueueAttr(queue)
        assert add_parts(attr, parts, bounds[queue])
        assert _totals(attr) == _totals(one_by_one[queue])


@pytest.mark.parametrize("cpu", [0.5, float("inf"), float("nan"), -1.5, -1.0])
def test_a_part_that_is_not_whole_numbers_is_refused(cpu):
    job = JobInfo("ns/j", "j", "ns", "a")
    job.add_task(TaskInfo("t", "t", "ns", "ns/j", Resource(cpu, 1.0), status=TaskStatus.RUNNING))
    assert job_part(job) is None and job_bound(job) == -1.0
    job.add_task(TaskInfo("u", "u", "ns", "ns/j", Resource(1000.0, 1.0, {"nvidia.com/gpu": cpu}), status=TaskStatus.PENDING))
    assert job_part(job) is None and job_bound(job) == -1.0


def test_a_part_of_whole_numbers_knows_its_largest_magnitude():
    job = JobInfo("ns/j", "j", "ns", "a")
    job.add_task(TaskInfo("t", "t", "ns", "ns/j", Resource(1000.0, 2.0**30, {"nvidia.com/gpu": 8000.0}), status=TaskStatus.RUNNING))
    part = job_part(job)
    assert part is not None and part.largest == 2.0**30
    assert interned(part) is part and interned(job_part(job)) is part


def test_parts_whose_sums_could_reach_two_to_the_53_are_refused_and_nothing_is_added():
    job = JobInfo("ns/j", "j", "ns", "a")
    job.add_task(TaskInfo("t", "t", "ns", "ns/j", Resource(1000.0, 2.0**50), status=TaskStatus.RUNNING))
    attr = QueueAttr("a")
    part = job_part(job)
    assert job_bound(job) == part.largest == 2.0**50
    assert not add_parts(attr, {part: 8}, 8 * part.largest)
    assert _totals(attr) == _totals(QueueAttr("a"))
    assert add_parts(attr, {part: 7}, 7 * part.largest) and attr.allocated.memory == 7 * 2.0**50


def test_values_of_both_signs_that_cancel_in_a_part_leave_the_jobs_added_one_by_one():
    """Two waiting tasks asking +2**60 and -2**60 cpu cancel in the job's part, but adding them
    one by one rounds on the way: such a job (a negative value) has no part, and the totals
    stay those of ``add_job``."""
    held = JobInfo("ns/a", "a", "ns", "q")
    held.add_task(TaskInfo("h", "h", "ns", "ns/a", Resource(1000.0, 0.0), status=TaskStatus.RUNNING))
    odd = JobInfo("ns/b", "b", "ns", "q")
    odd.add_task(TaskInfo("p", "p", "ns", "ns/b", Resource(2.0**60, 0.0), status=TaskStatus.PENDING))
    odd.add_task(TaskInfo("m", "m", "ns", "ns/b", Resource(-(2.0**60), 0.0), status=TaskStatus.PENDING))
    assert job_part(odd) is None and job_bound(odd) == -1.0
    one_by_one = QueueAttr("q")
    add_job(one_by_one, held)
    add_job(one_by_one, odd)
    assert one_by_one.request.milli_cpu == 1024.0  # rounded on the way, as the old loop does


def test_a_jobs_bound_covers_what_it_holds_asks_and_reserves():
    job = JobInfo("ns/j", "j", "ns", "a", min_resources=Resource(4000.0, 2.0**20))
    job.add_task(TaskInfo("t", "t", "ns", "ns/j", Resource(1000.0, 2.0**30), status=TaskStatus.RUNNING))
    job.add_task(TaskInfo("u", "u", "ns", "ns/j", Resource(3000.0, 2.0**31), status=TaskStatus.PENDING))
    assert job_bound(job) == 2.0**30 + 2.0**31 + 2.0**20
    part = job_part(job)
    assert part is not None and part.largest <= job_bound(job)


def _trace_cycles(nodes: str, by_parts: bool) -> tuple[list, int]:
    """Every cycle's decisions, outcomes and queue totals, and how many cycles added by parts."""
    seen, taken = [], []
    original = proportion.ProportionPlugin._add_parts

    def add_parts_or_not(self, ssn, total, guarantee) -> bool:
        taken.append(by_parts and original(self, ssn, total, guarantee))
        return taken[-1]

    def observe(sim, record) -> None:
        attrs = sorted((name, _totals(attr), _totals_of(attr.deserved), attr.share) for name, attr in record.result.session.queue_attrs.items())
        seen.append((*fingerprint(record), attrs))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(proportion.ProportionPlugin, "_add_parts", add_parts_or_not)
        replay_slice(nodes, [observe])
    return seen, sum(taken)


def _totals_of(res: Resource) -> tuple:
    return res.milli_cpu, res.memory, None if res.scalars is None else list(res.scalars.items())


@pytest.mark.python_source  # replaces a function inside the scheduling core (see tests/test_python_source.py)
@pytest.mark.parametrize("nodes", BACKLOG_CLUSTERS)
def test_a_trace_backlog_gets_the_same_cycles_with_jobs_added_by_parts(nodes):
    by_parts, taken = _trace_cycles(nodes, by_parts=True)
    one_by_one, none_taken = _trace_cycles(nodes, by_parts=False)
    assert taken > 100 and none_taken == 0
    assert any(reason != "None" for _, _, outcomes, _ in by_parts for _, _, reason in outcomes)  # jobs did wait
    assert by_parts == one_by_one
