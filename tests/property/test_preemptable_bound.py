"""``Session.preemptable_bound``: when every Preemptable plugin judges each candidate on its own,
whatever ``preemptable`` answers for any part of the candidates lies inside the bound taken
over all of them (preempt uses it to skip nodes no victim set could open)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.resources import Resource
from lahar.scheduler.api import TaskInfo
from lahar.scheduler.framework.config import load_config
from lahar.scheduler.framework.session import ABSTAIN, PERMIT, Session

NAMES = ["priority", "gang", "conformance", "drf", "proportion", "nodeorder"]
TASKS = [TaskInfo(f"t{i}", f"t{i}", "ns", "ns/j", Resource(1000, 0)) for i in range(6)]


def session(tiers: list[list[str]]) -> Session:
    conf = load_config({"actions": "preempt", "tiers": [{"plugins": [{"name": n} for n in tier]} for tier in tiers]}, fill_defaults=True)
    return Session(uid="s", jobs={}, nodes={}, queues={}, conf=conf)


plugin = st.tuples(st.frozensets(st.integers(0, 5)), st.sampled_from([PERMIT, ABSTAIN]))


@settings(max_examples=300, deadline=None)
@given(st.lists(plugin, min_size=1, max_size=6), st.integers(1, 3), st.lists(st.frozensets(st.integers(0, 5)), min_size=1, max_size=8))
def test_every_answer_on_a_part_lies_inside_the_bound(plugins, tier_count, parts):
    names = NAMES[: len(plugins)]
    tiers = [names[i::tier_count] for i in range(tier_count) if names[i::tier_count]]
    ssn = session(tiers)
    for name, (allowed, vote) in zip(names, plugins):
        ssn.add("preemptable", name, lambda t, cands, allowed=allowed, vote=vote: ([c for c in cands if int(c.uid[1:]) in allowed], vote))
        ssn.add("preemptable_per_task", name, True)
    bound = {t.uid for t in ssn.preemptable_bound(TASKS[0], TASKS)}
    for part in parts:
        answer = ssn.preemptable(TASKS[0], [TASKS[i] for i in sorted(part)]) or []
        assert {t.uid for t in answer} <= bound


def test_no_bound_when_a_plugin_judges_candidates_together():
    ssn = session([["priority", "gang"]])
    ssn.add("preemptable", "priority", lambda t, cands: (cands, PERMIT))
    ssn.add("preemptable_per_task", "priority", True)
    ssn.add("preemptable", "gang", lambda t, cands: (cands[:1], PERMIT))  # depends on the list: no bound
    assert ssn.preemptable_bound(TASKS[0], TASKS) is None


def test_bound_is_empty_when_no_plugin_allows_any_victim():
    ssn = session([["priority", "conformance"]])
    ssn.add("preemptable", "priority", lambda t, cands: ([], PERMIT))
    ssn.add("preemptable_per_task", "priority", True)
    ssn.add("preemptable", "conformance", lambda t, cands: (cands, PERMIT))
    ssn.add("preemptable_per_task", "conformance", True)
    assert ssn.preemptable_bound(TASKS[0], TASKS) == []
