"""drf, and the queues' allocations at session close, take a job's allocation at session open from the job's part when the part stands for the
job (``queueattr.standing_part``): drf makes no entry for such a job at open, works its share out
from the part when first asked (one ``_share`` per distinct part), and its own working copy of
the allocation only when the job first needs one (an event, a preemption check). Everything drf
answers must be what the copy of ``job.allocated`` it took at open gave: the shares, the job
order, the victims, after any allocate and deallocate events, in any order of asking, and after
a job's phase moved (enqueue: its part no longer stands, but it stood at open)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.resources import Resource
from lahar.scheduler.api import JobInfo, QueueInfo, TaskInfo, TaskStatus
from lahar.scheduler.cycle import queue_allocations
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins import drf, queueattr
from lahar.scheduler.plugins.drf import DrfPlugin
from lahar.scheduler.plugins.queueattr import PartTally, allocations_by_parts, interned, job_part
from tests import builders
from tests.trace_slice import BACKLOG_CLUSTERS, fingerprint, replay_slice

GPU = "nvidia.com/gpu"
SCALARS = (GPU, "pods", "example.com/fpga")
STATUSES = (TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.RELEASING)

amounts = st.sampled_from([0.0, 500.0, 1000.0, 4000.0, 2.0**20, 2.0**33])
scalars = st.none() | st.dictionaries(st.sampled_from(SCALARS), st.sampled_from([0.0, 1000.0, 8000.0]), max_size=3)
requests = st.builds(Resource, amounts, amounts, scalars)


@st.composite
def jobs(draw, uid: str) -> JobInfo:
    job = JobInfo(uid, uid, "ns", draw(st.sampled_from(["a", "b"])), min_available=1)
    job.phase = draw(st.sampled_from(["Pending", "Inqueue", "Running"]))
    for k in range(draw(st.integers(0, 4))):
        job.add_task(TaskInfo(f"{uid}-{k}", f"{uid}-{k}", "ns", uid, draw(requests), status=draw(st.sampled_from(STATUSES))))
    if job.allocated.scalars is None and draw(st.booleans()):
        job.allocated.scalars = {}  # a map with nothing in it: drf's copy of it reads scalars taken away
    return job


def _with_parts(job: JobInfo, standing: int, older: JobInfo | None = None) -> JobInfo:
    """``job`` as proportion leaves it: a part that stands for it (0), one made for an older
    state of it (1: ``older``'s part when given, else its own), a part refused (2), none yet (3)."""
    made = job_part(older if older is not None and standing == 1 else job)
    job.part = interned(made) if made is not None and standing != 2 else (False if standing == 2 else None)
    if standing == 3:
        job.part = None
    job.part_changes, job.part_phase = job.changes - (standing == 1), job.phase
    return job


def _opened(jobs: dict[str, JobInfo], total: Resource) -> DrfPlugin:
    ssn = Session(uid="s", jobs=jobs, nodes={}, queues={}, conf=load_config(default_config_text()), now=0.0, node_list=[], total_resource=total)
    plugin = DrfPlugin({}, False)
    plugin.on_session_open(ssn)
    return plugin


def _on(plugin: DrfPlugin, sign: int, task: TaskInfo) -> None:
    """drf's allocate (1) or deallocate (-1) event handler called for ``task``."""
    plugin._event(_bare_session(), sign)(task)  # the handler reads no session


def _bare_session() -> Session:
    return Session(uid="s", jobs={}, nodes={}, queues={}, conf=load_config(default_config_text()), now=0.0, node_list=[], total_resource=Resource())


def _by_dimension(plugin: DrfPlugin, uid: str) -> list[float]:
    """drf's working copy of a job's allocation, each of the cluster's dimensions (absent: 0)."""
    held = plugin._allocated(uid)
    scalars = held.scalars or {}
    return [held.milli_cpu if name == "cpu" else held.memory if name == "memory" else scalars.get(name, 0.0) for name, _ in plugin._dims]


@settings(max_examples=300, deadline=None)
@given(st.lists(jobs("j"), min_size=1, max_size=6), st.lists(st.integers(0, 3), min_size=6, max_size=6), st.integers(0, 2**32))
def test_shares_and_victims_from_parts_are_those_of_the_allocation_copied_at_open(pool, standing, seed):
    rng = random.Random(seed)
    total = Resource(64000.0, 2.0**40, {GPU: 16000.0, "pods": 110000.0})
    picked = [rng.randrange(len(pool)) for _ in range(rng.randint(1, 8))]
    by_parts = {f"j{n}": _with_parts(pool[pick].clone(), standing[n % 6], rng.choice(pool)) for n, pick in enumerate(picked)}
    for uid, job in by_parts.items():
        job.uid = uid
        for task in job.tasks.values():
            task.job = uid
    copied = {uid: job.clone() for uid, job in by_parts.items()}  # no part: drf copies job.allocated at open
    lazy, eager = _opened(by_parts, total), _opened(copied, total)
    tasks = [task for job in by_parts.values() for task in job.tasks.values()]
    for _ in range(rng.randint(0, 12)):
        roll = rng.random()
        if tasks and roll < 0.6:
            task, sign = rng.choice(tasks), rng.choice((1, -1))
            for plugin in (lazy, eager):
                _on(plugin, sign, task)
        elif roll < 0.8:
            uid = rng.choice(list(by_parts))
            assert _by_dimension(lazy, uid) == _by_dimension(eager, uid)
        elif roll < 0.9:  # enqueue moves a phase: the part stood at open, and still gives the share then
            uid = rng.choice(list(by_parts))
            by_parts[uid].phase = copied[uid].phase = "Inqueue" if by_parts[uid].phase != "Inqueue" else "Running"
        else:
            uid = rng.choice(list(by_parts))
            assert lazy.share_of(by_parts[uid]) == eager.share_of(copied[uid])
        if tasks and rng.random() < 0.5:
            preemptor, victims = rng.choice(tasks), rng.sample(tasks, min(len(tasks), 3))
            assert lazy._preemptable(preemptor, victims)[0] == eager._preemptable(preemptor, victims)[0]
    assert [lazy.share_of(job) for job in by_parts.values()] == [eager.share_of(job) for job in copied.values()]
    for uid in by_parts:
        assert _by_dimension(lazy, uid) == _by_dimension(eager, uid)
    left, right = list(by_parts.values()), list(copied.values())
    assert [lazy._job_order(a, b) for a in left for b in left] == [eager._job_order(a, b) for a in right for b in right]


def test_a_job_whose_part_stands_gets_its_share_without_a_copy_until_it_needs_one():
    job = JobInfo("ns/j", "j", "ns", "a")
    job.add_task(TaskInfo("t", "t", "ns", "ns/j", Resource(8000.0, 2.0**30, {GPU: 4000.0}), status=TaskStatus.RUNNING))
    other = _with_parts(job.clone(), 0)
    other.uid = "ns/k"
    plugin = _opened({"ns/j": _with_parts(job, 0), "ns/k": other}, Resource(64000.0, 2.0**40, {GPU: 16000.0}))
    assert plugin.shares == {} and plugin.allocated == {}  # no entry made at open
    assert plugin.share_of(other) == 0.25 and plugin.shares == {"ns/k": 0.25} and plugin.allocated == {}
    extra = TaskInfo("u", "u", "ns", "ns/j", Resource(0.0, 0.0, {GPU: 4000.0}), status=TaskStatus.ALLOCATED)
    _on(plugin, 1, extra)
    assert plugin.shares["ns/j"] == 0.5 and plugin.allocated["ns/j"].scalars == {GPU: 8000.0}
    assert list(plugin.allocated) == ["ns/j"] and job.allocated.scalars == {GPU: 4000.0}  # the part is not changed


def test_a_look_alike_shown_later_holds_nothing_whatever_its_part_says():
    """A job shown to the actions after drf opened (``on_job_shown``) has every task waiting; a
    part it still carries from an older state (it ran, then was put back) is not its share."""
    ran = JobInfo("ns/j", "j", "ns", "a")
    ran.add_task(TaskInfo("t", "t", "ns", "ns/j", Resource(8000.0, 2.0**30), status=TaskStatus.RUNNING))
    waiting = JobInfo("ns/j", "j", "ns", "a")
    waiting.add_task(TaskInfo("t", "t", "ns", "ns/j", Resource(8000.0, 2.0**30), status=TaskStatus.PENDING))
    plugin = _opened({}, Resource(64000.0, 2.0**40))
    plugin.on_job_shown(_bare_session(), _with_parts(waiting, 1, ran))
    assert plugin.share_of(waiting) == 0.0 and _by_dimension(plugin, "ns/j") == [0.0, 0.0]


# ----------------------------------------------------------------- queue_allocations by parts


def _session(jobs: dict[str, JobInfo]) -> Session:
    infos = {name: QueueInfo(builders.queue(name).build()) for name in ("a", "b")}
    return Session(uid="s", jobs=jobs, nodes={}, queues=infos, conf=load_config(default_config_text()), now=0.0, node_list=[], total_resource=Resource())


def _listed(totals: dict[str, Resource]) -> list:
    return [(name, r.milli_cpu, r.memory, None if r.scalars is None else list(r.scalars.items())) for name, r in totals.items()]


def _one_by_one(jobs: list[JobInfo]) -> tuple[dict[str, Resource], dict[str, None]]:
    """What ``queue_allocations`` adds job by job: the totals, the queues holding something."""
    totals, holding = {"a": Resource(), "b": Resource()}, {}
    for job in jobs:
        if job.allocated.holds_anything():
            totals[job.queue].add_nonzero(job.allocated)
            holding[job.queue] = None
    return totals, holding


@settings(max_examples=300, deadline=None)
@given(st.lists(jobs("j"), min_size=1, max_size=6), st.lists(st.integers(0, 3), min_size=6, max_size=6), st.integers(0, 2**32))
def test_queue_allocations_by_parts_are_those_job_by_job(pool, standing, seed):
    """The same values, scalar keys in the same order, a scalar map where the job-by-job sum
    makes one, and the queues holding something in the same order (their ancestors add them
    in it); jobs repeated in runs and interleaved."""
    rng = random.Random(seed)
    picked = [rng.randrange(len(pool)) for _ in range(rng.randint(1, 20))]
    picked.sort(key=lambda pick: rng.random() < 0.5)  # some runs of one job's copies
    jobs = [_with_parts(pool[pick].clone(), standing[pick % 6]) for pick in picked]
    totals = {"a": Resource(), "b": Resource()}
    holding = allocations_by_parts(jobs, totals)
    expected, expected_holding = _one_by_one(jobs)
    assert holding is not None and list(holding) == list(expected_holding)
    assert _listed(totals) == _listed(expected)


def test_queue_allocations_whose_sums_could_reach_two_to_the_53_are_added_job_by_job():
    job = JobInfo("ns/j", "j", "ns", "a")
    job.add_task(TaskInfo("t", "t", "ns", "ns/j", Resource(1000.0, 2.0**51 + 1.0), status=TaskStatus.RUNNING))
    jobs = {}
    for n in range(6):
        copy = jobs[f"j{n}"] = _with_parts(job.clone(), 0)
        copy.uid = f"j{n}"
    assert allocations_by_parts(list(jobs.values()), {"a": Resource(), "b": Resource()}) is None
    totals = queue_allocations(_session(jobs))
    assert totals["a"].memory == sum([2.0**51 + 1.0] * 6)  # rounded on the way, as the loop does
    assert totals["a"].memory != 6 * (2.0**51 + 1.0)  # not six times the part


def _trace_cycles(nodes: str, by_parts: bool) -> tuple[list, int]:
    """Every cycle's decisions, outcomes, drf's shares and queue allocations, and how many
    times drf and the allocations took a job's part."""
    seen, taken, shares = [], [], []
    original = queueattr.standing_part

    def standing_or_not(job):
        found = original(job) if by_parts else None
        taken.append(found is not None)
        return found

    def observe(sim, record) -> None:
        seen.append((*fingerprint(record), shares[-1], _listed(record.result.queue_allocated)))

    def close(self, ssn) -> None:  # drf's shares as the actions left them
        shares.append(sorted((uid, self.share_of(job), tuple(_by_dimension(self, uid))) for uid, job in ssn.jobs.items()))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(drf, "standing_part", standing_or_not)
        patch.setattr(queueattr, "standing_part", standing_or_not)
        patch.setattr(DrfPlugin, "on_session_close", close, raising=False)
        replay_slice(nodes, [observe])
    return seen, sum(taken)


@pytest.mark.python_source  # replaces a function inside the scheduling core (see tests/test_python_source.py)
@pytest.mark.parametrize("nodes", BACKLOG_CLUSTERS)
def test_a_trace_gets_the_same_cycles_with_allocations_from_parts(nodes):
    by_parts, taken = _trace_cycles(nodes, by_parts=True)
    copied, none_taken = _trace_cycles(nodes, by_parts=False)
    assert taken > 1000 and none_taken == 0
    assert any(decisions for _, decisions, _, _, _ in by_parts)
    assert by_parts == copied


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["p", "q", "r"]), st.integers(0, 3)), max_size=30))
def test_a_tally_counts_each_entry_per_queue_as_one_by_one(jobs):
    """Jobs in runs and interleaved, some with look-alike counts: each queue's entries counted in
    the order of their first job, the bounds the sums of count x largest."""
    largest = {"p": 1.0, "q": 2.0, "r": 4.0, "alike": 8.0}
    tally = PartTally()
    groups: dict[str, dict[str, int]] = {}
    firsts = []
    for queue, entry, alike in jobs:
        firsts.append(tally.count(queue, entry, largest[entry]))
        found = groups.setdefault(queue, {})
        found[entry] = found.get(entry, 0) + 1
        if alike:
            tally.count_more("alike", alike, largest["alike"])
            found["alike"] = found.get("alike", 0) + alike
    tally.end_run()
    assert tally.groups == groups and list(tally.groups) == list(groups)
    assert all(list(tally.groups[queue]) == list(found) for queue, found in groups.items())
    assert tally.bounds == {queue: sum(largest[entry] * count for entry, count in found.items()) for queue, found in groups.items()}
    assert sum(firsts) == len(groups)


def test_a_cold_session_leaves_the_queue_totals_to_the_loop():
    """No part among the first 64 jobs holding something (every job first seen): nothing is
    counted, the caller adds job by job; one part among them, and the parts count."""
    job = JobInfo("ns/j", "j", "ns", "a")
    job.add_task(TaskInfo("t", "t", "ns", "ns/j", Resource(1000.0, 2.0**20), status=TaskStatus.RUNNING))
    cold = [_with_parts(job.clone(), 3) for _ in range(70)]
    totals = {"a": Resource(), "b": Resource()}
    assert allocations_by_parts(cold, totals) is None and _listed(totals) == _listed({"a": Resource(), "b": Resource()})
    warm = cold[:63] + [_with_parts(job.clone(), 0)] + cold[63:]
    assert allocations_by_parts(warm, totals) == {"a": None}
    assert _listed(totals) == _listed(_one_by_one(warm)[0]) and totals["a"].milli_cpu == 71 * 1000.0
