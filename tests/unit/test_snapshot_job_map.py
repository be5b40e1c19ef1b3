"""A snapshot takes the last snapshot's map of session jobs again (``ClusterState._session_jobs``,
``cache._put_copies``) where it still lists the first of the session's jobs in the same order:
each snapshot must still hold exactly the copy each job keeps, in session order, whatever came,
went or changed, and whatever a session did to the map it was handed. Run against the compiled
core too (nothing here replaces a function inside it)."""

from __future__ import annotations

import random

from lahar.scheduler.cache import ClusterState
from tests.builders import node, pod, podgroup, queue


def test_each_snapshot_holds_the_jobs_copies_now_whatever_moved_and_whatever_a_session_did_to_the_last():
    """A snapshot with no job come, gone or replaced and no queue name come or gone since the
    last takes the last one's dict as it stands (``ClusterState._session_jobs``), with the
    copies made anew put in. Through random steps (podgroups added, replaced, removed, pods
    added and bound, queues gone and back, nothing at all) each snapshot must hold exactly the
    copy each job keeps, in key order, and nothing a holder did to the dict handed out before."""
    rng = random.Random(11)
    state = ClusterState.from_objects([queue("work").weight(1).build(), queue("side").weight(1).build(), node("n1", cpu=64, memory="64Gi", pods=100)])
    names = [f"g{i:02d}" for i in range(10)]
    handed: dict | None = None
    for step in range(400):
        move = rng.random()
        name = rng.choice(names)
        owner = "work" if names.index(name) % 2 else "side"
        if move < 0.15:
            state.upsert(podgroup(name).queue(owner).min_member(rng.randint(1, 3)).build())
        elif move < 0.2:
            state.forget_job(f"default/{name}")
        elif move < 0.35:
            task = pod(f"{name}-{rng.randint(0, 2)}").group(name).requests(cpu=1, memory="1Gi")
            state.upsert((task.on("n1") if rng.random() < 0.5 else task).build())
        elif move < 0.4:
            state.remove(queue("side").build())
        elif move < 0.45:
            state.upsert(queue("side").weight(1).build())
        elif handed is not None and move < 0.6:  # a holder changes the dict it was handed
            handed.pop(next(iter(handed)), None) if handed else None
            handed["default/junk"] = state.jobs[next(iter(state.jobs))] if state.jobs else None
        copies = state.snapshot()[0]
        expected = sorted(uid for uid, job in state.jobs.items() if job.queue in state.queues)
        assert list(copies) == expected, step
        assert all(copy is state.jobs[uid].twin for uid, copy in copies.items()), step
        assert copies is not handed
        handed = copies


def test_a_snapshot_makes_the_dict_anew_where_the_last_one_lists_a_job_no_longer_there():
    """The last snapshot's dict is taken again only where it lists exactly the first of the
    session's jobs (``cache._put_copies``): one that lists a job the state no longer has (the
    state drops a job from it as it drops the job) is made anew, not handed on with it."""
    state = ClusterState.from_objects([queue("work").weight(1).build(), node("n1", cpu=4, memory="8Gi", pods=10)])
    for name in ("a", "b", "c"):
        state.upsert(podgroup(name).queue("work").min_member(1).build())
    first = state.snapshot()[0]
    assert state.session_jobs is not None and list(state.session_jobs) == list(first)
    state.forget_job("default/b")
    assert list(state.session_jobs) == ["default/a", "default/c"]  # dropped with the job
    assert list(state.snapshot()[0]) == ["default/a", "default/c"]
    state.session_jobs["default/ghost"] = first["default/b"]  # a job the state does not have
    again = state.snapshot()[0]
    assert list(again) == ["default/a", "default/c"] and again["default/a"] is state.jobs["default/a"].twin
    state.upsert(podgroup("0first").queue("work").min_member(1).build())  # before the others in key order
    assert list(state.snapshot()[0]) == ["default/0first", "default/a", "default/c"]
