"""Expected start from a cluster's present state (dry runs and ``job why``)."""

from __future__ import annotations

import itertools

import pytest

from builders import job, node, queue
from lahar.sim.engine import Simulation
from lahar.sim.forecast import expected_start
from lahar.sim.inputs import resolve_config

CONF = resolve_config(None, [])


def present(objects, until: float):
    """The state a server would hold at ``until``: simulate from 0, then take every object."""
    sim = Simulation(objects, CONF)
    sim.run_until(until)
    world = sim.world
    return [*world.classes.values(), *world.queues.values(), *world.nodes.values(), *world.jobs.values(), *world.podgroups.values(), *world.pods.values()]


def busy_cluster(duration: str | None = "10m"):
    running = job("a").tasks(4, cpu=1)
    if duration:
        running = running.annotate(**{"lahar.dev/duration": duration})
    return [node("n1", cpu=4, memory="8Gi", pods=110), queue("q").weight(1).build(), running.queue("q").build()]


def test_a_proposed_job_starts_when_the_running_one_ends():
    state = present(busy_cluster(), until=120)
    estimate = expected_start(state, CONF, 120.0, "default/b", proposed=job("b").tasks(2, cpu=1).queue("q").build())
    assert estimate.admitted and (estimate.start, estimate.wait) == (600.0, 480.0)
    assert estimate.summary() == "expected to start in 8m00s"
    assert estimate.to_json()["startsNow"] is False


def test_a_job_that_fits_now_starts_now():
    state = present([node("n1", cpu=4, memory="8Gi", pods=110), queue("q").weight(1).build()], until=0)
    estimate = expected_start(state, CONF, 50.0, "default/b", proposed=job("b").tasks(2, cpu=1).queue("q").build())
    assert estimate.wait == 0 and estimate.summary() == "would start now"


def test_a_proposed_job_to_a_closed_queue_would_be_refused():
    state = present(busy_cluster(), until=10)
    closed = next(o for o in state if o.kind == "Queue" and o.name == "q").model_copy(deep=True)
    closed.status.state = "Closed"
    state = [closed if o.kind == "Queue" and o.name == "q" else o for o in state]
    estimate = expected_start(state, CONF, 10.0, "default/b", proposed=job("b").tasks(1, cpu=1).queue("q").build())
    assert not estimate.admitted and "queue q is Closed" in estimate.summary()


def test_running_tasks_without_duration_use_the_queue_history_or_are_said_to_run_on():
    state = present(busy_cluster(duration=None), until=100)
    b = job("b").tasks(1, cpu=1).queue("q").build()
    never = expected_start(state, CONF, 100.0, "default/b", proposed=b, horizon=3600)
    assert never.start is None and "not expected to start within 1h00m" in never.summary()
    assert any("4 task(s)" in note and "past the horizon" in note for note in never.assumptions)
    # with a typical run time of 5 minutes for queue q, the running tasks (started at 0) end at 300
    history = expected_start(state, CONF, 100.0, "default/b", proposed=b, typical={"q": 300.0}.get)
    assert history.start == 300.0
    assert any("typical run time" in note for note in history.assumptions)


def test_a_waiting_job_already_known_is_estimated_without_resubmitting():
    objects = [*busy_cluster(), job("b").tasks(3, cpu=1).queue("q").annotate(**{"lahar.dev/duration": "1m"}).build()]
    state = present(objects, until=60)
    assert expected_start(state, CONF, 60.0, "default/b").start == 600.0


def test_an_unknown_job_is_a_clear_error():
    from lahar.errors import LaharError

    with pytest.raises(LaharError, match="job default/nope: no podgroup to estimate"):
        expected_start(present(busy_cluster(), until=0), CONF, 0.0, "default/nope")


def test_an_estimate_that_runs_out_of_time_says_how_far_it_got():
    state = present(busy_cluster(), until=120)
    b = job("b").tasks(2, cpu=1).queue("q").build()
    seconds = itertools.count()  # a timer that moves one second each time it is read
    cut = expected_start(state, CONF, 120.0, "default/b", proposed=b, budget=1, timer=seconds.__next__)
    assert (cut.start, cut.cycles, cut.reached) == (None, 1, 120.0)
    assert cut.summary() == "no estimate: the simulation stopped after 1 s (1 cycle) at 0s ahead, before the job started"
    assert cut.to_json()["reachedSeconds"] == 0.0 and cut.to_json()["expectedStart"] is None
    # the second cycle, when the running job ends at 600, starts b: within a budget of 2 s
    whole = expected_start(state, CONF, 120.0, "default/b", proposed=b, budget=2, timer=itertools.count().__next__)
    assert (whole.start, whole.cycles, whole.reached) == (600.0, 2, None) and whole.to_json()["reachedSeconds"] is None


def backlog() -> list:
    """The head of the Philly trace on three 8-GPU nodes, ten days in: 128 jobs waiting, some
    of them gangs that fit only in part and keep a task pipelined, cycle after cycle."""
    from trace_slice import slice_at_start
    from lahar.sim.compare import run_replay

    sim, position = slice_at_start("3 x cpu=64,memory=512Gi,gpu=8", 150)
    position.until = 862_000.0
    run_replay(sim, position)
    w = sim.world
    return [*w.classes.values(), *w.queues.values(), *w.nodes.values(), *w.jobs.values(), *w.podgroups.values(), *w.pods.values()]


def test_repeated_pipelines_do_not_make_an_estimate_step_through_every_period(monkeypatch):
    state, now = backlog(), 862_000.0
    gang = "default/philly-302"  # waits past the horizon, a task of it pipelined meanwhile
    quick = [expected_start(state, CONF, now, key, horizon=3600) for key in (gang, "default/philly-268")]
    # the same estimates, stepping through every period of a cycle that decided anything
    monkeypatch.setattr("lahar.sim.forecast.changed_something", lambda record, previous: (bool(record.result.decisions or record.completed), None))
    slow = [expected_start(state, CONF, now, key, horizon=3600) for key in (gang, "default/philly-268")]
    assert [(e.start, e.summary()) for e in quick] == [(e.start, e.summary()) for e in slow]
    assert quick[0].start is None and quick[1].start == 863_206.0
    assert slow[0].cycles > 1000 and quick[0].cycles * 20 < slow[0].cycles  # 14 against 1,994 here
