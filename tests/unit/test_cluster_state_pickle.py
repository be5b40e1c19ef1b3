"""A cluster state pickles and loads whole (``bench/checkpoint.py`` saves replays so), also
one pickled by an older version, in plain Python and compiled."""

from __future__ import annotations

import dataclasses
import pickle

from lahar.scheduler.cache import ClusterState
from tests.builders import node, pod, podgroup, queue


def _state() -> ClusterState:
    return ClusterState.from_objects([queue("q").build(), node("n1", cpu=4), podgroup("g").queue("q").min_member(1).build(), pod("g-0").group("g").requests(cpu=1).build()])


def test_a_state_pickles_with_its_jobs_order_and_copies():
    state = _state()
    state.snapshot()
    loaded = pickle.loads(pickle.dumps(state))
    assert loaded.jobs.keys() == state.jobs.keys() and loaded.job_keys == [(0.0, "default/g")]
    assert loaded.jobs["default/g"].twin is not None  # the copy the next snapshot takes back
    assert list(loaded.snapshot()[0]) == ["default/g"]


def test_a_state_pickled_when_it_kept_the_copies_itself_loads():
    """States pickled by an older version (``bench/checkpoint.py`` files) held the last
    snapshot's copies in a ``handed`` field and had no ``job_keys``; such a state loads, pickles
    again and snapshots (copies anew, sorts the keys)."""
    state = _state()
    fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(ClusterState) if f.name != "job_keys"}
    older = ClusterState.__new__(ClusterState)
    older.__setstate__({**fields, "handed": {"default/g": (None, 0, None, 0)}})  # and no job_keys yet
    assert older.job_keys is None
    again = pickle.loads(pickle.dumps(older))  # pickled again before any snapshot
    for loaded in (older, again):
        jobs = loaded.snapshot()[0]
        assert list(jobs) == ["default/g"] and jobs["default/g"].tasks.keys() == state.jobs["default/g"].tasks.keys()


def test_a_state_pickled_when_it_kept_the_keys_alone_sorts_them_again():
    """States pickled before the session's order went by creation time kept the keys alone."""
    state = _state()
    state.snapshot()
    older = ClusterState.__new__(ClusterState)
    older.__setstate__({**state.__getstate__(), "job_keys": ["default/g"]})
    assert older.job_keys is None and older.job_list is None
    assert list(older.snapshot()[0]) == ["default/g"] and older.job_keys == [(0.0, "default/g")]


def test_a_state_pickled_after_cycles_loads_with_its_copies_parts():
    """Cycles leave on each job copy they find unchanged what proportion adds for it
    (``JobInfo.part``, made at the second cycle that sees the copy); read back, the part is
    interned (jobs alike share one) and the next cycle decides and explains as before."""
    from lahar.scheduler.cycle import run_cycle
    from lahar.scheduler.framework.config import default_config_text, load_config
    from lahar.scheduler.plugins.queueattr import JobPart, interned

    objects = [queue("q").build(), node("n1", cpu=1)]
    for name in ("a", "b"):  # too big for the node: they wait, and their copies stay as they are
        objects += [podgroup(name).queue("q").min_member(1).build(), pod(f"{name}-0").group(name).requests(cpu=2).build()]
    state = ClusterState.from_objects(objects)
    conf = load_config(default_config_text())
    first = run_cycle(state, conf, 0.0)
    assert all(job.twin.part is None for job in state.jobs.values())  # seen once: added as it is
    run_cycle(state, conf, 1.0, previous=first.jobs)
    copies = [job.twin for job in state.jobs.values()]
    assert all(isinstance(copy.part, JobPart) for copy in copies) and copies[0].part is copies[1].part
    loaded = pickle.loads(pickle.dumps(state))
    parts = [job.twin.part for job in loaded.jobs.values()]
    assert isinstance(parts[0], JobPart) and parts[0] is parts[1] and interned(parts[0]) is parts[0]
    assert parts[0].request.milli_cpu == 2000.0
    again, fresh = run_cycle(loaded, conf, 2.0), run_cycle(ClusterState.from_objects(objects), conf, 2.0)
    assert not again.decisions and not fresh.decisions
    assert {uid: (o.phase, o.reason) for uid, o in again.jobs.items()} == {uid: (o.phase, o.reason) for uid, o in fresh.jobs.items()}


def test_a_queue_reads_as_reclaimable_as_its_object_says_after_a_replacement_and_a_reload():
    """``QueueInfo.reclaimable`` is read once from the queue object (replaced, never changed in
    place): a queue replaced with ``reclaimable: false`` reads so, and so does its reload."""
    state = _state()
    assert state.queues["q"].reclaimable()
    state.upsert(queue("q").reclaimable(False).build())
    assert not state.queues["q"].reclaimable()
    assert not pickle.loads(pickle.dumps(state)).queues["q"].reclaimable()
    state.upsert(queue("q").build())  # unset again: reclaimable
    assert pickle.loads(pickle.dumps(state)).queues["q"].reclaimable()


def test_a_job_whose_queue_one_state_found_is_not_taken_as_found_by_another():
    """Whether a job's queue exists is kept on the job with the count of the state's queue names
    (``JobInfo.queue_seen``), drawn from one count for every state: a job object found in
    its queue by one state is still looked up by a state without that queue, and by a state
    pickled and read back whose queue is then removed."""
    state = ClusterState.from_objects([queue("work").build(), node("n1", cpu=4, memory="8Gi", pods=10)])
    state.upsert(podgroup("g").queue("work").min_member(1).build())
    assert list(state.snapshot()[0]) == ["default/g"]
    job = state.jobs["default/g"]
    other = ClusterState(jobs={"default/g": job})
    other.upsert(queue("side").build())  # as many queue names came as in the first: not its queue
    assert list(other.snapshot()[0]) == []
    loaded = pickle.loads(pickle.dumps(state))
    assert list(loaded.snapshot()[0]) == ["default/g"]
    loaded.remove(queue("work").build())
    assert list(loaded.snapshot()[0]) == []
    assert list(state.snapshot()[0]) == ["default/g"]  # the first state still has its queue
