"""What the passes over every job of a session read: the session's jobs as a list
(``Session.listed_jobs``), and the close's reader of conditions, which keeps the answer for
the last list read (``cycle.UnschedulableRead``). Run against the compiled core too."""

from __future__ import annotations

from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import UnschedulableRead, close_session, open_session, run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from tests.builders import node, pod, podgroup, queue

CONF = load_config(default_config_text())


def _state(*jobs: tuple[str, int, int, int]) -> ClusterState:
    """One queue, one node of 4 CPUs; each job ``(name, min_member, running, pending)`` with
    its running pods of 1 CPU on the node and its pending ones asking 8 (they never fit)."""
    objects = [queue("work").weight(1).build(), node("n1", cpu=4, memory="64Gi", pods=110)]
    state = ClusterState.from_objects(objects)
    for name, min_member, running, pending in jobs:
        state.upsert(podgroup(name).queue("work").min_member(min_member).phase("Running" if running else "Inqueue").build())
        for k in range(running):
            state.upsert(pod(f"{name}-r{k}").group(name).requests(cpu=1, memory="1Gi").on("n1").build())
        for k in range(pending):
            state.upsert(pod(f"{name}-p{k}").group(name).requests(cpu=8, memory="1Gi").build())
    return state


def test_listed_jobs_follow_the_map_they_were_made_of():
    state = _state(("a", 1, 1, 0), ("b", 1, 1, 0), ("c", 1, 0, 1))
    ssn = open_session(state, CONF, 0.0)
    first = ssn.listed_jobs()
    assert first == list(ssn.jobs.values())
    assert ssn.listed_jobs() is first  # the same map, as many keys: kept
    extra = ssn.jobs["default/c"]
    ssn.jobs["default/z"] = extra  # a job added under a new key (a look-alike shown) goes at the end
    second = ssn.listed_jobs()
    assert second is not first and second == list(ssn.jobs.values()) and second[-1] is extra
    assert len(first) == 3  # a list handed out is never changed
    ssn.jobs = {"default/b": ssn.jobs["default/b"]}  # a new map of as many keys as another had: made anew
    assert ssn.listed_jobs() == [ssn.jobs["default/b"]]
    ssn.jobs = dict(ssn.jobs)
    third = ssn.listed_jobs()
    assert third == [ssn.jobs["default/b"]] and ssn.listed_jobs() is third
    close_session(ssn)


def test_the_lists_of_the_last_maps_listed_are_taken_again_while_those_maps_stand():
    """A session that sets look-alikes aside lists every job, then the shown ones, then every
    job again at its close: a map listed before is not listed again, unless a job was added to
    it since."""
    ssn = open_session(_state(("a", 1, 1, 0), ("b", 1, 1, 0), ("c", 1, 0, 1)), CONF, 0.0)
    every = ssn.jobs
    whole = ssn.listed_jobs()
    shown = ssn.jobs = {"default/a": every["default/a"]}
    assert ssn.listed_jobs() == [every["default/a"]]
    ssn.jobs = {"default/b": every["default/b"]}  # a second map of shown jobs (``hide``)
    assert ssn.listed_jobs() == [every["default/b"]]
    ssn.jobs = every
    assert ssn.listed_jobs() is whole  # taken again
    shown["default/c"] = every["default/c"]  # a job shown since: that map's list is made anew
    ssn.jobs = shown
    assert ssn.listed_jobs() == [every["default/a"], every["default/c"]]
    ssn.jobs = every
    whole = ssn.listed_jobs()
    ssn.jobs = shown = {}
    for key in ("default/a", "default/b", "default/c", "default/z"):  # a map listed as it grows (``show_next``)
        shown[key] = every.get(key, every["default/a"])
        assert ssn.listed_jobs() == list(shown.values())
    ssn.jobs = every
    assert ssn.listed_jobs() is whole  # one list for each map: a growing map does not push the others out
    for n in range(6):  # more maps than are kept: the oldest lists are let go, never mixed up
        ssn.jobs = {"default/a": every["default/a"]} if n % 2 else dict(every)
        assert ssn.listed_jobs() == list(ssn.jobs.values())
    ssn.jobs = every
    assert ssn.listed_jobs() == whole
    close_session(ssn)


def test_phases_with_running_jobs_and_gangs_short_of_members_interleaved():
    """Running jobs share gang's one list of conditions; a job whose gang is short of members
    has an Unschedulable condition of its own and, with pods running, the phase Unknown. The
    close reads them in turn: each job gets its own answer, not the last list's."""
    state = _state(("a", 1, 1, 0), ("b", 2, 1, 1), ("c", 1, 1, 0), ("d", 2, 1, 1), ("e", 1, 0, 1), ("f", 1, 1, 0))
    result = run_cycle(state, CONF, 0.0)
    phases = {uid.split("/")[1]: outcome.phase for uid, outcome in result.jobs.items()}
    assert phases == {"a": "Running", "b": "Unknown", "c": "Running", "d": "Unknown", "e": "Inqueue", "f": "Running"}
    again = run_cycle(state, CONF, 1.0, uid="cycle-1", previous=result.jobs)
    assert {uid.split("/")[1]: o.phase for uid, o in again.jobs.items()} == phases


def test_unschedulable_read_answers_each_list():
    read = UnschedulableRead("s1")
    mine = [{"type": "Unschedulable", "status": "True", "transitionID": "s1"}]
    older = [{"type": "Unschedulable", "status": "True", "transitionID": "s0"}]
    scheduled = [{"type": "Scheduled", "status": "True", "transitionID": "s1"}]
    not_true = [{"type": "Unschedulable", "status": "False", "transitionID": "s1"}]
    both = scheduled + mine

    job = open_session(_state(("a", 1, 1, 0)), CONF, 0.0).jobs["default/a"]
    for conditions, expected in [(scheduled, False), (scheduled, False), (mine, True), (mine, True), (older, False), ([], False), (both, True), (not_true, False), (scheduled, False), (mine, True)]:
        job.conditions = conditions
        assert read.of(job) is expected, conditions


def test_is_pending_reads_the_phase_whatever_text_object_holds_it():
    """The podgroup phase is told by identity for the interned "Running" only: the same texts
    made anew (as unpickled ones are) read the same."""
    job = open_session(_state(("a", 1, 1, 0)), CONF, 0.0).jobs["default/a"]
    for phase, expected in [("Running", False), ("Pending", True), ("", True), ("Inqueue", False), ("Completed", False), ("Unknown", False)]:
        for text in (phase, "".join(list(phase))):  # the literal, and a text made anew
            job.phase = text
            assert job.is_pending() is expected, (phase, text is phase)
    job.podgroup = None  # a job without a podgroup waits whatever its phase
    job.phase = "Running"
    assert job.is_pending() is True
