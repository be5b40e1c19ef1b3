"""A job's outcome that reads exactly as its last one (the cycle's ``previous``) is that very
object, its conditions replaced by this session's (``cycle._kept_outcome``): for a job the
actions looked at and for a look-alike hidden from them. Every cycle must say of every job what
a new outcome says: phase, queue, pod counts, reason (and what it was made of and from) and
conditions, read when the cycle ends."""

from __future__ import annotations

import pytest

from lahar.scheduler import cycle
from lahar.scheduler.api import JobInfo
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import JobOutcome, _kept_outcome, run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from tests.builders import node, pod, podgroup, queue
from tests.trace_slice import BACKLOG_CLUSTERS, replay_slice


def _said(outcome) -> tuple:
    """What an outcome says, read now (its conditions are replaced when it is kept later)."""
    conditions = tuple(tuple(sorted((k, repr(v)) for k, v in c.items())) for c in outcome.conditions)
    return (outcome.phase, outcome.queue, outcome.running, outcome.succeeded, outcome.failed, repr(outcome.reason), repr(outcome.reason_part), repr(outcome.shared_reason), conditions)


def _replay(nodes: str, keep: bool) -> tuple[list, int]:
    """Every cycle's outcomes as said when it ended; how many were the last cycle's objects."""
    seen: list = []
    kept = [0]
    last: dict = {}

    def observe(sim, record) -> None:
        outcomes = record.result.jobs
        kept[0] += sum(1 for uid, o in outcomes.items() if last.get(uid) is o)
        last.clear()
        last.update(outcomes)
        seen.append((record.time, sorted((uid, _said(o)) for uid, o in outcomes.items())))

    with pytest.MonkeyPatch.context() as patch:
        if not keep:
            patch.setattr(cycle, "_kept_outcome", lambda *args: False)
        replay_slice(nodes, [observe])
    return seen, kept[0]


@pytest.mark.python_source  # replaces a function inside the scheduling core (see tests/test_python_source.py)
@pytest.mark.parametrize("nodes", BACKLOG_CLUSTERS)
def test_a_trace_says_the_same_of_every_job_with_outcomes_kept(nodes):
    kept, kept_count = _replay(nodes, keep=True)
    fresh, fresh_count = _replay(nodes, keep=False)
    assert kept_count > 1000 and fresh_count == 0
    assert kept == fresh


def _cluster(extra: list) -> ClusterState:
    objects = [queue("q").build(), node("n1", cpu=4, memory="8Gi", pods=10)]
    objects += [podgroup("run").queue("q").min_member(1).build(), pod("run-0").group("run").requests(cpu=2).on("n1").build()]
    objects += [podgroup("wait").queue("q").min_member(1).build(), pod("wait-0").group("wait").requests(cpu=8).build()]
    return ClusterState.from_objects(objects + extra)


def test_an_unchanged_job_keeps_its_outcome_object_with_this_sessions_conditions():
    state, conf = _cluster([]), load_config(default_config_text())
    first = run_cycle(state, conf, 0.0, uid="c1")
    second = run_cycle(state, conf, 1.0, uid="c2", previous=first.jobs)
    for uid in ("default/run", "default/wait"):
        assert second.jobs[uid] is first.jobs[uid]
        assert second.jobs[uid].conditions and all(c["transitionID"] == "c2" for c in second.jobs[uid].conditions)
    assert second.changed == []
    state.upsert(pod("run-0").group("run").requests(cpu=2).on("n1", phase="Succeeded").build())
    third = run_cycle(state, conf, 2.0, uid="c3", previous=second.jobs)
    assert third.jobs["default/run"] is not second.jobs["default/run"]  # its counts moved: a new one
    assert (third.jobs["default/run"].succeeded, third.jobs["default/run"].running) == (1, 0)
    assert "default/run" in third.changed


REASON, PART, SHARED = {"kind": "queue-full", "queue": "q"}, {"kind": "queue-full"}, {"kind": "queue-full", "queue": "q", "job": "a"}
SAME = {"reason": REASON, "part": PART, "shared": SHARED, "phase": "Pending", "queue": "q", "running": 1, "succeeded": 2, "failed": 3}


@pytest.mark.parametrize(
    "moved",
    [
        {},
        {"reason": dict(REASON)},  # reads the same, another object: made again, so not the one kept
        {"reason": None},
        {"part": dict(PART)},
        {"shared": dict(SHARED)},
        {"shared": None},
        {"phase": "Inqueue"},
        {"queue": "other"},
        {"running": 0},
        {"succeeded": 0},
        {"failed": 0},
    ],
)
def test_a_last_outcome_is_kept_only_when_every_part_of_it_reads_the_same(moved):
    given = {**SAME, **moved}
    before = JobOutcome("Pending", "q", [{"type": "Unschedulable", "transitionID": "c1"}], REASON, 1, 2, 3, SHARED)
    before.reason_part = PART
    job = JobInfo("ns/j", "j", "ns", given["queue"])
    job.phase, job.conditions = given["phase"], [{"type": "Unschedulable", "transitionID": "c2"}]
    old = before.conditions
    kept = _kept_outcome(before, job, given["reason"], given["part"], given["shared"], given["running"], given["succeeded"], given["failed"])
    assert kept == (not moved)
    assert before.conditions is (job.conditions if kept else old)
