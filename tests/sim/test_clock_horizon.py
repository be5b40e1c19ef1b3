"""A replay that jumps over idle stretches still runs a cycle where a plugin that reads the clock
may answer differently (``CycleResult.valid_until``): sla lets a job in once it has waited its
waiting time, with nothing else happening then. Volcano, cycling every second, lets it in at the
first cycle past its deadline; so must each way Lahar runs a simulation: ``run_until``, the
trace replay (``compare.replay``) and the expected start of a job (``forecast``)."""

from __future__ import annotations

import math

import pytest

import builders
from builders import ClockWatcher, node, queue, sla_config
from lahar.scheduler.framework.config import load_config
from lahar.sim.compare import Clock, replay
from lahar.sim.engine import Simulation
from lahar.sim.forecast import expected_start
from lahar.scheduler.plugins import register

SLA_CONFIG = sla_config("30s")
NO_SLA_CONFIG = sla_config(None)


def timed(name: str, at: str, duration: str, **selector: str):
    built = builders.timed(name, "capped", at, duration)
    built.spec.tasks[0].template.spec.node_selector = selector or None
    return built


def cluster(late_at: str = "1s"):
    """A queue capped at 2 CPUs: ``holder`` runs on 1 until 1,000 s, ``stuck`` (no node has its
    label) is let in and holds the other in proportion's count of what is let in, so ``late``
    (arriving at ``late_at``) is refused by proportion, though the CPU it asks for is free.
    sla lets it in once it has waited 30 s."""
    return [
        node("n1", cpu="4", memory="8Gi"),
        queue("capped").capability(cpu="2").build(),
        timed("holder", "0s", "1000s"),
        timed("stuck", "0s", "10s", disk="none"),
        timed("late", late_at, "10s"),
    ]


def started(config: str, run) -> tuple[float | None, list[float]]:
    """When ``late`` is bound, and every cycle's time."""
    seen: list[float] = []
    found: list[float] = []

    def watch(sim, record) -> None:
        seen.append(record.time)
        if not found and any(d.type == "bind" and d.task == "default/late-main-0" for d in record.result.decisions):
            found.append(record.time)

    objects = cluster()
    sim = Simulation(objects, load_config(config), observers=[watch])
    run(sim, objects)
    return (found[0] if found else None), seen


RUNNERS = {
    "run_until": lambda sim, objects: sim.run_until(2000),
    "compare.replay": lambda sim, objects: replay(sim, objects, Clock(until=2000)),
}


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_job_let_in_by_its_waiting_time_starts_at_its_deadline(runner):
    """``late`` arrives at 1 s: its deadline is 31 s. Jumping to the next event (the holder ends
    at 1,000 s) would keep it waiting 969 s too long."""
    start, cycles = started(SLA_CONFIG, RUNNERS[runner])
    assert start == 31.0
    assert 30.0 in cycles and 31.0 in cycles  # the deadlines of those that arrived at 0 s, then late's
    assert len(cycles) < 20  # the stretches between are still jumped over


@pytest.mark.parametrize("runner", RUNNERS)
def test_without_a_plugin_that_reads_the_clock_the_idle_stretch_is_jumped_over(runner):
    start, cycles = started(NO_SLA_CONFIG, RUNNERS[runner])
    assert start == 1000.0  # the CPU the holder frees makes room in the queue's count
    assert cycles[:3] == [0.0, 1.0, 1000.0]


def test_the_expected_start_of_a_job_counts_its_waiting_time():
    """The forecast of a job proposed at 5 s: let in by sla at 35 s, not when the holder ends."""
    sim = Simulation(cluster(late_at="1h"), load_config(SLA_CONFIG))
    sim.run_until(4)
    world = sim.world
    state = [*world.queues.values(), *world.nodes.values(), *world.jobs.values(), *world.podgroups.values(), *world.pods.values()]
    proposed = timed("late", "0s", "10s")
    estimate = expected_start(state, load_config(SLA_CONFIG), 5.0, "default/late", proposed=proposed, horizon=3600)
    assert estimate.start == 35.0
    without = expected_start(state, load_config(NO_SLA_CONFIG), 5.0, "default/late", proposed=proposed, horizon=3600)
    assert without.start == 1000.0


def test_a_plugin_that_cannot_tell_steps_every_period_until_nothing_is_left():
    register(ClockWatcher)
    config = NO_SLA_CONFIG + "  - name: clock-watcher\n"
    objects = [node("n1", cpu="4", memory="8Gi"), queue("capped").capability(cpu="2").build(), timed("holder", "0s", "5s")]
    seen: list[float] = []
    sim = Simulation(objects, load_config(config), observers=[lambda sim, record: seen.append(record.time)])
    sim.run_until(math.inf, max_cycles=50)  # never stopping would run 50 cycles
    assert seen == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # the last cycle after the holder ended: nothing left
