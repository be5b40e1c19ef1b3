"""How the session combines plugin answers (reference section 4.0), one rule per test.

Fake plugins register callbacks directly; tiers and flags decide which are consulted.
"""

from __future__ import annotations

import pytest

from lahar.resources import Resource
from lahar.model import Queue
from lahar.scheduler.api import JobInfo, QueueInfo, TaskInfo
from lahar.scheduler.framework.config import load_config
from lahar.scheduler.framework.session import ABSTAIN, PERMIT, REJECT, Session

ALL_FLAGS = {"name": None}


def session(*tiers: list[str], flags: dict | None = None) -> Session:
    conf = load_config(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": n, **(flags or {})} for n in tier]} for tier in tiers]},
        fill_defaults=flags is None,
    )
    return Session(uid="s", jobs={}, nodes={}, queues={}, conf=conf)


def queue(name: str = "q") -> QueueInfo:
    return QueueInfo(Queue.model_validate({"metadata": {"name": name}, "spec": {"weight": 1}}))


def job(uid: str) -> JobInfo:
    return JobInfo(uid, uid, "ns", "q")


def task(uid: str) -> TaskInfo:
    return TaskInfo(uid, uid, "ns", "ns/j", Resource(1000, 0))


@pytest.mark.parametrize(
    "tier1,tier2,expected",
    [
        ([PERMIT, PERMIT], [REJECT], True),  # a Permit ends the walk after its tier
        ([PERMIT, REJECT], [], False),  # any Reject inside the tier rejects
        ([ABSTAIN, ABSTAIN], [REJECT], False),  # all abstain: next tier decides
        ([ABSTAIN], [ABSTAIN], True),  # nobody decides: permitted
        ([], [PERMIT], True),
    ],
)
def test_enqueueable_votes(tier1, tier2, expected):
    names = (["priority", "gang"][: len(tier1)], ["drf", "nodeorder"][: len(tier2)])
    ssn = session(*names)
    for name, vote in zip(names[0] + names[1], tier1 + tier2):
        ssn.add("job_enqueueable", name, lambda j, v=vote: v)
    assert ssn.job_enqueueable(job("a")) is expected


def test_starving_is_false_without_any_plugin_and_uses_first_tier_only():
    ssn = session(["priority"], ["gang"])
    assert ssn.job_starving(job("a")) is False
    ssn.add("job_starving", "gang", lambda j: False)
    assert ssn.job_starving(job("a")) is False
    ssn.add("job_starving", "priority", lambda j: True)
    assert ssn.job_starving(job("a")) is True  # tier 1 answers; gang in tier 2 is not asked


def test_disabled_flag_skips_callback():
    ssn = session(["priority"], flags={"enabledOverused": False})
    ssn.add("overused", "priority", lambda q: True)
    assert ssn.overused(queue()) is False


def test_victims_intersect_within_a_tier_and_first_non_nil_tier_wins():
    a, b, c = task("a"), task("b"), task("c")
    ssn = session(["gang", "conformance"], ["proportion"])
    ssn.add("reclaimable", "gang", lambda t, cands: ([a, b], PERMIT))
    ssn.add("reclaimable", "conformance", lambda t, cands: ([b, c], PERMIT))
    ssn.add("reclaimable", "proportion", lambda t, cands: ([c], PERMIT))
    assert ssn.reclaimable(task("x"), [a, b, c]) == [b]


def test_empty_victim_list_ends_the_tier_and_falls_through():
    a, c = task("a"), task("c")
    ssn = session(["gang", "conformance"], ["proportion"])
    ssn.add("reclaimable", "gang", lambda t, cands: ([], PERMIT))
    ssn.add("reclaimable", "conformance", lambda t, cands: ([a], PERMIT))
    ssn.add("reclaimable", "proportion", lambda t, cands: ([c], PERMIT))
    assert ssn.reclaimable(task("x"), [a, c]) == [c]


def test_abstaining_plugin_is_skipped():
    a = task("a")
    ssn = session(["gang", "conformance"])
    ssn.add("reclaimable", "gang", lambda t, cands: ([], ABSTAIN))
    ssn.add("reclaimable", "conformance", lambda t, cands: ([a], PERMIT))
    assert ssn.reclaimable(task("x"), [a]) == [a]


def test_a_victim_callback_registered_after_a_vote_is_asked_in_the_next():
    a, b = task("a"), task("b")
    ssn = session(["gang", "conformance"], ["proportion"])
    ssn.add("reclaimable", "proportion", lambda t, cands: ([b], PERMIT))
    assert ssn.reclaimable(task("x"), [a, b]) == [b]  # tier 1 has no callback yet: tier 2 answers
    ssn.add("reclaimable", "gang", lambda t, cands: ([a], PERMIT))
    assert ssn.reclaimable(task("x"), [a, b]) == [a]
    ssn.add("reclaimable", "conformance", lambda t, cands: ([b], PERMIT))
    assert ssn.reclaimable(task("x"), [a, b]) == []  # the tier's choices have nothing in common
    assert ssn.preemptable(task("x"), [a, b]) is None  # another kind: nothing registered


def test_a_plugin_whose_victim_flag_is_off_is_not_asked():
    a, b = task("a"), task("b")
    ssn = session(["gang"], ["proportion"], flags={"enabledReclaimable": False})
    ssn.add("reclaimable", "gang", lambda t, cands: ([a], PERMIT))
    ssn.add("reclaimable", "proportion", lambda t, cands: ([b], PERMIT))
    assert ssn.reclaimable(task("x"), [a, b]) is None
    ssn = session(["gang"], ["proportion"])
    ssn.add("reclaimable", "gang", lambda t, cands: ([a], PERMIT))
    ssn.add("reclaimable", "proportion", lambda t, cands: ([b], PERMIT))
    assert ssn.reclaimable(task("x"), [a, b]) == [a]


def test_job_order_first_nonzero_then_creation_then_uid():
    ssn = session(["priority", "gang"])
    ssn.add("job_order", "priority", lambda l, r: 0)
    ssn.add("job_order", "gang", lambda l, r: 0)
    early, late = job("b"), job("a")
    early.creation, late.creation = 1.0, 2.0
    assert ssn.job_order_fn(early, late) is True
    late.creation = 1.0
    assert ssn.job_order_fn(late, early) is True  # equal time: smaller uid first
    ssn.add("job_order", "gang", lambda l, r: 1 if l.uid == "a" else -1)
    assert ssn.job_order_fn(early, late) is True


def test_allocatable_is_and_overused_is_or():
    ssn = session(["proportion", "capacity"])
    ssn.add("allocatable", "proportion", lambda q, t: True)
    ssn.add("allocatable", "capacity", lambda q, t: False)
    assert ssn.allocatable(queue(), task("a")) is False
    ssn.add("overused", "proportion", lambda q: False)
    ssn.add("overused", "capacity", lambda q: True)
    assert ssn.overused(queue()) is True
