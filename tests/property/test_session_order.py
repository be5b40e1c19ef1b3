"""The session's jobs come by creation time, then key, as job order falls back on those two: kept
up to date as podgroups come, change and go (``ClusterState.job_keys``), the same as sorting the
jobs afresh. Look-alike jobs then come in job order, so the first of a kind in the session is the
first in job order (``lahar.scheduler.lookalikes``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import pod, podgroup, queue
from lahar.model.workload import PodGroup
from lahar.scheduler.cache import ClusterState

NAMES = ["a", "b", "c", "d", "e"]


def group(name: str, second: int | None) -> PodGroup:
    made = podgroup(name).queue("q").min_member(1).manifest()
    if second is not None:
        made["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{second:02d}Z"
    return PodGroup.model_validate(made)


def session_order(state: ClusterState) -> list[str]:
    jobs, _, _, _ = state.snapshot()
    return list(jobs)


def test_jobs_come_by_creation_then_key():
    state = ClusterState.from_objects([queue("q").build(), group("b", 1), group("a", 2), group("c", None), group("d", 1)])
    assert session_order(state) == ["default/c", "default/b", "default/d", "default/a"]


def test_jobs_created_at_once_come_by_key():
    for second in (None, 7):
        state = ClusterState.from_objects([queue("q").build()])
        for name in "dbeac":  # one by one (``from_objects`` takes podgroups by key)
            state.upsert(group(name, second))
        assert session_order(state) == [f"default/{name}" for name in "abcde"]
        assert {created for created, _ in state.job_keys or []} == {0.0 if second is None else state.jobs["default/a"].creation}


STEPS = st.lists(st.tuples(st.sampled_from(["put", "drop", "snapshot"]), st.sampled_from(NAMES), st.none() | st.integers(0, 3)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(STEPS)
def test_the_order_kept_as_jobs_come_change_and_go_is_the_order_sorted_afresh(steps):
    state = ClusterState.from_objects([queue("q").build()])
    session_order(state)  # from here on the order is kept, not sorted again
    for step, name, second in steps:
        if step == "put":  # a new podgroup, or one changed (created anew under the same key)
            state.upsert(group(name, second))
            state.upsert(pod(f"{name}-0").requests(cpu=1).group(name).build())
        elif step == "drop":
            state.forget_job(f"default/{name}")
        else:
            session_order(state)
    kept = session_order(state)
    assert kept == sorted(state.jobs, key=lambda key: (state.jobs[key].creation, key))
    assert state.job_list == [state.jobs[key] for key in kept]
