"""Expected start from a cluster's present state (dry runs and ``job why``)."""

from __future__ import annotations

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
