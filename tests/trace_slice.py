"""The head of the Philly trace replayed on a cluster too small for it: jobs wait for many
cycles, queues borrow and reclaim, tasks are bound, evicted and preempted. Tests that compare a
shortcut with the plain way replay it both ways and compare every cycle (``fingerprint``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.sim.compare import Clock, replay, replay_position
from lahar.sim.engine import Simulation
from lahar.sim.traces import build_workload, parse_cluster

SLICE = Path(__file__).resolve().parent / "data" / "traces" / "philly-head.csv"
BACKLOG_CLUSTERS = ["3 x cpu=64,memory=512Gi,gpu=8", "6 x cpu=64,memory=512Gi,gpu=8"]  # too small for the slice


def replay_slice(nodes: str, observers: Sequence[Callable] = (), limit: int = 150) -> None:
    """Replay the slice's first ``limit`` jobs to the end on ``nodes``, with the default
    configuration, calling each observer with the simulation and each cycle's record."""
    sim, objects = _simulation(nodes, observers, limit)
    replay(sim, objects, Clock(period=1.0, until=None, cycles=None))


def slice_at_start(nodes: str, limit: int = 150) -> tuple[Simulation, Any]:
    """The slice's first ``limit`` jobs on ``nodes``, not yet replayed: the simulation and its
    replay position, to step with ``run_replay`` (what bench/checkpoint.py pickles)."""
    sim, objects = _simulation(nodes, (), limit)
    return sim, replay_position(objects, Clock(1.0, None, None))


def _simulation(nodes: str, observers: Sequence[Callable], limit: int) -> tuple[Simulation, list]:
    workload = build_workload(f"philly:{SLICE}", limit=limit)
    workload.nodes = parse_cluster([nodes])
    objects, _ = workload.objects(None)
    sim = Simulation(objects, load_config(default_config_text()), period=1.0, observers=list(observers))
    sim.keep_cycles = False
    return sim, objects


def fingerprint(record) -> tuple:
    """A cycle's time, decisions and every job's phase and reason."""
    result = record.result
    decisions = [(d.type, d.task, d.node, d.reason) for d in result.decisions]
    outcomes = sorted((uid, o.phase, repr(o.reason)) for uid, o in result.jobs.items())
    return record.time, decisions, outcomes
