"""Side by side: the same workload under two queue configurations (``lahar simulate --compare A B``).

Each side is one of (tried in this order):

- a manifest file (documents with a ``kind``): its Queue documents replace ``--queues`` (or the
  one-queue-per-key default), and a ``SchedulerConfiguration`` document in it, if any, replaces
  the scheduler configuration;
- a Volcano scheduler configuration file (``actions`` / ``tiers``, no ``kind``): the queues stay
  those of ``--queues`` (or the default), the configuration is this one;
- the name of a bundled configuration (``default``, ``capacity``, ``capacity-hierarchy``,
  ``volcano``), as ``--config`` takes it.

A side that sets no configuration runs the one ``--config`` (or ``--queues``, or the manifests)
selects. Both sides replay the same jobs on the same nodes (``Workload.objects`` builds fresh
objects per side); they run in two processes at once when the machine has two cores.
The differences are per queue: p50 and p90 wait, share of the main resource's hours (GPU-hours
when the cluster has GPUs, else CPU-hours), evictions and jobs never started.
"""

from __future__ import annotations

import bisect
import gc
import math
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from lahar.errors import BadRequest, LaharError
from lahar.model import Queue, SchedulerConfiguration
from lahar.model.base import ApiObject
from lahar.model.manifest import load_documents
from lahar.scheduler.cycle import paused_gc
from lahar.scheduler.framework.config import SchedulerConf, load_config, named_config_text
from lahar.sim.engine import Simulation, arrival_time, changed_something, next_step_time
from lahar.sim.metrics import MetricsCollector, fmt_num, fmt_pct, fmt_seconds, main_resource
from lahar.sim.progress import ProgressSettings, progress_shown
from lahar.sim.traces.records import Routing, route
from lahar.sim.traces.workload import Workload, read_queue_file

__all__ = ["Side", "Clock", "ReplayPosition", "read_side", "labelled", "routing_of", "replay", "replay_position", "run_replay", "run_side", "run_sides", "compare_json", "differences", "difference_rows"]


_MAX_CYCLES = 10_000_000


@dataclass
class Side:
    """One configuration: its label, queues (None: the shared ones) and scheduler configuration."""

    label: str
    source: str
    queues: list[Queue] | None
    conf: SchedulerConf | None


@dataclass(frozen=True)
class Clock:
    """How long to run: ``cycles`` cycles, or events up to ``until`` (None: until nothing is left)."""

    period: float = 1.0
    until: float | None = None
    cycles: int | None = None


def read_side(spec: str) -> Side:
    """A side from a manifest file, a scheduler configuration file or a bundled name."""
    path = Path(spec)
    if not path.is_file():
        if "/" in spec or spec.endswith((".yaml", ".yml", ".json", ".conf")):
            raise BadRequest(f"--compare: {spec}: no such file")
        return Side(spec, spec, None, load_config(named_config_text(spec)))
    text = path.read_text(encoding="utf-8")
    if any(isinstance(doc, dict) and "kind" in doc for doc in load_documents(text)):
        found = read_queue_file(spec)
        conf = None
        if found.config is not None:
            doc = found.config
            conf = load_config({"actions": doc.actions, "tiers": doc.tiers, "configurations": doc.configurations})
        return Side(path.stem, spec, found.queues or None, conf)
    return Side(path.stem, spec, None, load_config(text))


def labelled(sides: list[Side]) -> list[Side]:
    """Sides with distinct labels (``A: x`` and ``B: x`` when both are named ``x``)."""
    if len({s.label for s in sides}) == len(sides):
        return sides
    return [Side(f"{letter}: {s.label}", s.source, s.queues, s.conf) for letter, s in zip("AB", sides)]


def routing_of(workload: Workload, side: Side, queues: list[Queue] | None) -> Routing:
    """Where the trace's keys go on this side (to warn about unknown keys before running)."""
    return route(workload.jobs, workload.queues(side.queues if side.queues is not None else queues))


def replay(sim: Simulation, objects: list[ApiObject], clock: Clock) -> None:
    """Run ``sim`` as ``Simulation.run_until`` does (or ``run_cycles`` when ``clock.cycles``), except
    that a cycle whose only decisions repeat the previous cycle's pipelines counts as idle
    (``changed_something``): ``run_until`` steps every period meanwhile, and its cycles are
    what ``lahar simulate`` of manifests reports. Jumping to the next event gives the same
    decisions, only fewer repeated pipelines."""
    if clock.cycles is not None:
        sim.run_cycles(clock.cycles)
        return
    with paused_gc():
        run_replay(sim, replay_position(objects, clock))


@dataclass
class ReplayPosition:
    """Where a replay stands between two cycles: the next cycle's time and what choosing the one
    after needs. Kept apart from the loop so that a replay can be paused, saved with its
    simulation (``pickle``) and resumed (``bench/trace.py --checkpoint``)."""

    arrivals: list[float]  # every arrival time, sorted
    period: float
    until: float = math.inf
    now: float = 0.0
    seen: int = 0  # arrivals at or before ``now``
    previous: list | None = None  # the last cycle's decisions

    def advance(self, sim: Simulation, record: Any) -> bool:
        """Move ``now`` to the next cycle after ``record``; False when nothing is left to happen."""
        busy, self.previous = changed_something(record, self.previous)
        upcoming = None
        if not busy:
            self.seen = bisect.bisect_right(self.arrivals, self.now, lo=self.seen)
            upcoming = min(self.arrivals[self.seen] if self.seen < len(self.arrivals) else math.inf, sim.world.next_completion() or math.inf)
        following = next_step_time(self.now, self.period, busy, None if upcoming == math.inf else upcoming, record.result.valid_until)
        if following is None:
            return False
        self.now = following
        return True


def replay_position(objects: list[ApiObject], clock: Clock) -> ReplayPosition:
    """The start of a replay of ``objects`` (``clock.cycles`` is not used here)."""
    arrivals = sorted(arrival_time(o) for o in objects if not isinstance(o, SchedulerConfiguration))
    return ReplayPosition(arrivals, clock.period, clock.until if clock.until is not None else math.inf)


def run_replay(sim: Simulation, position: ReplayPosition, cycles: int = _MAX_CYCLES) -> bool:
    """Up to ``cycles`` cycles from ``position`` (moved along); False once the replay is over."""
    for count in range(cycles):
        if count % 256 == 255:
            gc.collect(1)
        if position.now > position.until:
            return False
        record = sim.step(position.now)
        if not position.advance(sim, record):
            return False
    return True


def run_side(
    workload: Workload, queues: list[Queue] | None, conf: SchedulerConf, clock: Clock, max_points: int = 1024, progress: ProgressSettings | None = None
) -> dict[str, Any]:
    """Replay ``workload`` with these queues and configuration; the metrics, or {"error": message}.
    With ``progress``, where the replay stands is shown on stderr as it runs."""
    try:
        objects, _ = workload.objects(queues)
        collector = MetricsCollector(max_points)
        sim = Simulation(objects, conf, period=clock.period, observers=[collector])
        sim.keep_cycles = False
        with progress_shown(sim, progress):
            replay(sim, objects, clock)
        return collector.result(sim)
    except LaharError as exc:
        return {"error": exc.message}


def run_sides(
    workload: Workload,
    runs: list[tuple[list[Queue] | None, SchedulerConf]],
    clock: Clock,
    parallel: bool | None = None,
    progress: list[ProgressSettings] | None = None,
) -> list[dict[str, Any]]:
    """``run_side`` for each (queues, conf), two at a time on a machine with two cores or more;
    ``progress``: each run's progress settings, if its progress is to be shown."""
    if parallel is None:
        parallel = (os.cpu_count() or 1) > 1 and len(runs) > 1
    shown = progress or [None] * len(runs)
    if not parallel:
        results = [run_side(workload, queues, conf, clock, progress=each) for (queues, conf), each in zip(runs, shown)]
    else:
        with ProcessPoolExecutor(max_workers=min(2, len(runs)), mp_context=get_context("fork")) as pool:
            futures = [pool.submit(run_side, workload, queues, conf, clock, progress=each) for (queues, conf), each in zip(runs, shown)]
            results = [future.result() for future in futures]
    for result in results:
        if "error" in result:
            raise BadRequest(result["error"])
    return results


def differences(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Per queue and overall: ``[A, B, B - A]`` for each compared figure (None where undefined)."""
    resource = main_resource(a["summary"]["capacity"] or b["summary"]["capacity"])
    queues = {}
    for name in sorted(set(a["queues"]) | set(b["queues"])):
        qa, qb = a["queues"].get(name, {}), b["queues"].get(name, {})
        queues[name] = {
            "wait_p50": _triple(qa.get("wait_p50"), qb.get("wait_p50")),
            "wait_p90": _triple(qa.get("wait_p90"), qb.get("wait_p90")),
            "usage_share": _triple(qa.get("usage_share", {}).get(resource), qb.get("usage_share", {}).get(resource)),
            "evictions": _triple(qa.get("evictions"), qb.get("evictions")),
            "never_started": _triple(qa.get("never_started"), qb.get("never_started")),
        }
    sa, sb = a["summary"], b["summary"]
    overall = {key: _triple(sa.get(key), sb.get(key)) for key in ("wait_p50", "wait_p90", "wait_mean", "jain_mean", "reclaims", "preemptions", "never_started", "time")}
    overall["utilisation"] = _triple(sa["utilisation"].get(resource), sb["utilisation"].get(resource))
    return {"resource": resource, "queues": queues, "summary": overall}


def _triple(a: float | None, b: float | None) -> list[float | None]:
    return [a, b, (b - a) if a is not None and b is not None else None]


def compare_json(sides: list[Side], results: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "sides": [{"label": s.label, "source": s.source, "metrics": r} for s, r in zip(sides, results)],
        "differences": differences(results[0], results[1]),
    }


def difference_rows(diff: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The per-queue differences as text rows; columns name the sides A and B, Δ is B - A."""
    short = "gpu" if diff["resource"] == "nvidia.com/gpu" else diff["resource"]
    header = ["queue", "p50 A", "p50 B", "Δ p50", "p90 A", "p90 B", "Δ p90", f"{short}-h A", f"{short}-h B", "evict A", "evict B", "never A", "never B"]
    rows = []
    for name, q in sorted(diff["queues"].items()):
        p50, p90, share = q["wait_p50"], q["wait_p90"], q["usage_share"]
        counts = [fmt_num(v) for v in (*q["evictions"][:2], *q["never_started"][:2])]
        rows.append([name, *map(fmt_seconds, p50), *map(fmt_seconds, p90), fmt_pct(share[0]), fmt_pct(share[1]), *counts])
    return header, rows
