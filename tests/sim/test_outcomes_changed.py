"""A cycle says which jobs' outcomes changed since the ones its caller last applied, and the
world applies only those (and the jobs whose objects came, changed or went meanwhile). Applying
only them must leave every podgroup and vcjob exactly as applying every outcome does."""

from __future__ import annotations

from pathlib import Path

import pytest

import lahar.sim.engine as engine
from lahar.scheduler.cycle import JobOutcome, run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.sim.compare import Clock, replay_position, run_replay
from lahar.sim.engine import Simulation
from lahar.sim.metrics import MetricsCollector, _figures
from lahar.sim.traces import build_workload, parse_cluster

HEAD = Path(__file__).resolve().parents[1] / "data" / "traces" / "philly-head.csv"


def _replay_head(observers: list, cycles: int | None = None) -> Simulation:
    """Philly's first 120 jobs on four nodes (jobs wait, start, end), replayed to the end (or
    ``cycles`` cycles) with ``observers``."""
    workload = build_workload(f"philly:{HEAD}", limit=120)
    workload.nodes = parse_cluster(["4 x cpu=64,memory=512Gi,gpu=8"])
    objects, _ = workload.objects(None)
    sim = Simulation(objects, load_config(default_config_text()), period=1.0, observers=observers)
    sim.keep_cycles = False
    position = replay_position(objects, Clock(1.0, None, None))
    if cycles is None:
        run_replay(sim, position)
    else:
        run_replay(sim, position, cycles=cycles)
    return sim


def _replay(every_outcome: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list, int]:
    """``_replay_head``: after every cycle, the status of every podgroup and vcjob; and how many
    jobs ``apply`` looked at in all."""
    if every_outcome:  # the cycle is told nothing of what was applied: every job is checked
        monkeypatch.setattr(engine, "run_cycle", lambda *args, previous=None, **kw: run_cycle(*args, **kw))
    states: list = []
    checked = [0]

    def observe(sim: Simulation, record) -> None:
        world = sim.world
        checked[0] += len(list(world.outcomes_to_check(record.result)))
        groups = {k: (g.status.phase, g.status.running, g.status.succeeded, g.status.failed) for k, g in world.podgroups.items()}
        jobs = {k: j.status.model_dump() for k, j in world.jobs.items()}
        states.append((record.time, groups, jobs))

    _replay_head([observe])
    monkeypatch.undo()
    return states, checked[0]


def test_applying_only_changed_outcomes_leaves_every_status_as_applying_all(monkeypatch):
    every, checked_every = _replay(True, monkeypatch)
    changed, checked_changed = _replay(False, monkeypatch)
    assert len(every) > 100 and changed == every
    assert any(phase == "Completed" for _, groups, _ in every for phase, *_ in groups.values())
    assert any(phase in ("Pending", "Inqueue") for _, groups, _ in every[len(every) // 2 :] for phase, *_ in groups.values())  # jobs wait
    assert checked_changed < checked_every / 3  # and it did skip most of them


def _state():
    from builders import node, pod, podgroup, queue
    from lahar.model.workload import PodGroup

    from lahar.scheduler.cache import ClusterState

    objects = [queue("q").weight(1).build(), node("n1", cpu="4", memory="4Gi", pods="110")]
    for name, cpu in (("fits", "1"), ("waits", "8")):
        objects += [podgroup(name).queue("q").min_member(1).phase("Inqueue").build(), pod(f"{name}-0").group(name).requests(cpu=cpu).build()]
    assert all(not isinstance(o, PodGroup) or o.queue == "q" for o in objects)
    return ClusterState.from_objects(objects)


def test_changed_names_the_jobs_whose_status_or_reason_moved():
    state, conf = _state(), load_config(default_config_text())
    first = run_cycle(state, conf, uid="c1")
    assert first.changed == sorted(first.jobs) and first.compared_to is None  # nothing to compare with
    first_conditions = first.jobs["default/waits"].conditions  # read before the next cycle (a kept outcome takes its session's)
    again = run_cycle(state, conf, uid="c2", previous=first.jobs)
    assert again.compared_to is first.jobs and again.changed == []  # same cluster, same outcomes
    assert again.jobs["default/waits"].conditions != first_conditions  # a new session uid: left out
    stale = {**first.jobs, "default/fits": JobOutcome(phase="Running", queue="q", running=1)}
    assert run_cycle(state, conf, uid="c3", previous=stale).changed == ["default/fits"]
    reason = dict(first.jobs["default/waits"].reason, message="another")
    moved = {**first.jobs, "default/waits": JobOutcome(phase=first.jobs["default/waits"].phase, queue="q", reason=reason)}
    assert run_cycle(state, conf, uid="c4", previous=moved).changed == ["default/waits"]
    assert run_cycle(state, conf, uid="c5", previous={"default/fits": first.jobs["default/fits"]}).changed == ["default/waits"]
    for count in ("running", "succeeded", "failed"):  # a pod count alone moved
        before = first.jobs["default/fits"]
        moved = JobOutcome(before.phase, before.queue, before.conditions, before.reason, before.running, before.succeeded, before.failed)
        setattr(moved, count, getattr(moved, count) + 1)
        assert run_cycle(state, conf, uid="c6", previous={**first.jobs, "default/fits": moved}).changed == ["default/fits"], count


def test_a_copy_of_a_result_without_some_decisions_is_checked_as_the_result_was():
    """The server drops decisions a request made void while the cycle ran (a copy of the result
    with fewer decisions, the same outcomes): its pending reasons look at the jobs ``apply``
    looked at, not at every job."""
    import dataclasses

    records: list = []
    sim = _replay_head([lambda s, r: records.append(r)], cycles=300)
    record = records[-1]
    keys = sim.world.outcomes_to_check(record.result)
    assert len(list(keys)) < len(record.result.jobs)  # not every job
    assert sim.world.outcomes_to_check(dataclasses.replace(record.result, decisions=[])) is keys


class _EveryJob(MetricsCollector):
    """Looks at every job in every cycle, as the collector did before it read ``changed``."""

    looked = 0

    def _jobs_to_look_at(self, result, bound):
        self._reset_pending()
        self.looked += len(result.jobs)
        return result.jobs


class _Counting(MetricsCollector):
    looked = 0
    every_job = 0  # cycles in which it looked at every job

    def _jobs_to_look_at(self, result, bound):
        keys = super()._jobs_to_look_at(result, bound)
        self.looked += len(keys)
        self.every_job += keys is result.jobs
        return keys


def test_the_metrics_from_changed_outcomes_are_those_from_every_outcome():
    every, changed = _EveryJob(), _Counting()
    sim = _replay_head([every, changed])
    assert changed.result(sim) == every.result(sim)
    assert changed.result(sim)["summary"]["jobs"] == 120 and every.looked > 10_000
    assert changed.looked < every.looked / 3


def test_jobs_that_leave_are_let_go_without_looking_at_every_job():
    """A finished job leaves the cycle's outcomes (the cache forgets it): the collector stops
    counting it as waiting, if it was, and looks at no other job for it; only the first cycle,
    with nothing seen before, looks at every job."""
    every, changed = _EveryJob(), _Counting()
    sim = _replay_head([every, changed])
    assert changed.result(sim) == every.result(sim)
    assert changed.every_job == 1



def test_a_job_that_leaves_while_waiting_stops_counting():
    """A waiting job can leave the cycle's view without finishing (its queue went away): the
    waiting count per queue drops by it, as a look at every job would find."""
    from types import SimpleNamespace as Record

    sim = Record(world=Record(podgroups={}))
    first = {"ns/a": JobOutcome("Inqueue", "q"), "ns/b": JobOutcome("Inqueue", "q"), "ns/c": JobOutcome("Running", "q", running=1)}
    collector = _Counting()
    seen = collector._track_jobs(sim, Record(time=1.0, result=Record(jobs=first, changed=None, compared_to=None, decisions=[])))
    assert seen == {"q": 2}
    later = {"ns/b": first["ns/b"], "ns/c": first["ns/c"]}  # ns/a left, nothing else changed
    seen = collector._track_jobs(sim, Record(time=2.0, result=Record(jobs=later, changed=[], compared_to=first, decisions=[])))
    assert seen == {"q": 1}
    assert collector.every_job == 1


class _FreshState(MetricsCollector):
    """Works out the state vector of every cycle afresh, as the collector did before it kept
    the last one for the same figures."""

    def _snapshot(self, sim, record, pending):
        attrs = record.result.session.queue_attrs
        self._leaf_parts = None  # no leaf's part kept either
        return self._state_of(_figures(self._leaves, record.result.queue_allocated, attrs, pending))


class _CountingStates(MetricsCollector):
    kept = 0

    def _snapshot(self, sim, record, pending):
        before = self._state
        state = super()._snapshot(sim, record, pending)
        self.kept += state is before
        return state


def test_a_state_vector_kept_for_the_same_figures_gives_the_metrics_of_fresh_ones():
    fresh, kept = _FreshState(), _CountingStates()
    sim = _replay_head([fresh, kept])
    assert kept.result(sim) == fresh.result(sim)
    assert kept.result(sim)["series"]["queues"] and kept.kept > kept.cycles / 3  # many cycles keep it
    assert kept.cycles - kept.kept > 50  # and many work it out again: allocations and waits move
