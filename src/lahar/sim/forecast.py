"""Expected start: simulate forward from a cluster's present state.

``expected_start`` answers, for a job already waiting or one that is only proposed (a dry run),
when the scheduler will start it if nothing else arrives: the cluster as it is now (queues,
nodes, podgroups, pods with their start times) is loaded into a simulator, the proposed job is
submitted through admission, and cycles run on the period grid, jumping over idle stretches to
the next task completion, until the job's gang is running or the horizon is reached.

How long running tasks take comes from their ``lahar.dev/duration``; lacking that, from the
queue's typical run time (``typical(queue)``, from its recent history); lacking both, the task
is assumed to run past the horizon, and the answer says how many tasks that assumption covers.
The estimate assumes no other job arrives and nobody changes a queue meanwhile.

An estimate is a question a person waits on (``lahar job why``, a dry run): it stops after
``budget`` seconds (``DEFAULT_BUDGET``) and says how far ahead it got, rather than
keep a request busy for minutes. A cycle whose only decisions repeat the last one's pipelines
counts as idle, as in a trace replay (``changed_something``): a gang that fits only in part
would otherwise be stepped through every period of the horizon (a week: 604,800 cycles).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from lahar.duration import format_duration
from lahar.errors import LaharError
from lahar.model.base import LAHAR_DURATION, ApiObject
from lahar.model.cluster import Node, PriorityClass
from lahar.model.job import Job
from lahar.model.queue import Queue
from lahar.model.workload import Pod, PodGroup
from lahar.scheduler.framework.config import SchedulerConf
from lahar.sim.engine import Simulation, changed_something, next_step_time

__all__ = ["Estimate", "expected_start", "DEFAULT_BUDGET", "DEFAULT_HORIZON"]

DEFAULT_HORIZON = 7 * 86400.0
DEFAULT_BUDGET = 10.0  # seconds (wall) an estimate may take
_LOAD_ORDER = (PriorityClass, Queue, Node, Job, PodGroup, Pod)


@dataclass
class Estimate:
    job: str
    admitted: bool
    now: float
    start: float | None = None  # when the gang runs (same clock as ``now``); None: not within the horizon
    horizon: float = DEFAULT_HORIZON
    message: str = ""
    assumptions: list[str] = field(default_factory=list)
    cycles: int = 0
    reached: float | None = None  # where the simulation stopped, when it ran out of budget first

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.now

    def summary(self) -> str:
        if not self.admitted:
            return f"would be refused: {self.message}"
        if self.reached is not None:
            return f"no estimate: {self.message}"
        if self.start is None:
            return f"not expected to start within {format_duration(self.horizon)}" + (f": {self.message}" if self.message else "")
        if self.wait == 0:
            return "would start now"
        return f"expected to start in {format_duration(self.wait or 0.0)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "admitted": self.admitted,
            "startsNow": self.admitted and self.wait == 0,
            "expectedStart": self.start,
            "expectedWaitSeconds": self.wait,
            "horizonSeconds": self.horizon,
            "reachedSeconds": None if self.reached is None else self.reached - self.now,
            "summary": self.summary(),
            "message": self.message,
            "assumptions": self.assumptions,
        }


def expected_start(
    objects: Iterable[ApiObject],
    conf: SchedulerConf,
    now: float,
    job_key: str,
    *,
    proposed: ApiObject | None = None,
    horizon: float = DEFAULT_HORIZON,
    period: float = 1.0,
    typical: Callable[[str], float | None] | None = None,
    budget: float = DEFAULT_BUDGET,
    timer: Callable[[], float] = time.monotonic,
) -> Estimate:
    """When the podgroup ``job_key`` (``namespace/name``) is expected to run its gang; after
    ``budget`` seconds (of ``timer``: the wall clock) spent stepping, no answer but how far ahead
    it got."""
    sim = Simulation([], conf, period=period)
    assumptions = _load(sim, list(objects), now, typical or (lambda queue: None))
    estimate = Estimate(job_key, True, now, horizon=horizon, assumptions=assumptions)
    if proposed is not None:
        sim.world.submit(_with_duration(proposed, typical), now)
        refused = [r for r in sim.world.rejections if r.time == now]
        if refused:
            estimate.admitted, estimate.message = False, refused[-1].message
            return estimate
    if job_key not in sim.world.podgroups:
        raise LaharError(f"job {job_key}: no podgroup to estimate (is the job known to the server?)")
    _run(sim, estimate, now, period, budget, timer)
    return estimate


def _load(sim: Simulation, objects: list[ApiObject], now: float, typical: Callable[[str], float | None]) -> list[str]:
    world = sim.world
    ordered = sorted(objects, key=lambda o: next((i for i, cls in enumerate(_LOAD_ORDER) if isinstance(o, cls)), len(_LOAD_ORDER)))
    guessed = unknown = 0
    for obj in ordered:
        if isinstance(obj, Pod) and obj.phase in ("Pending", "Running") and LAHAR_DURATION not in obj.annotations:
            queue = _queue_of(world, obj)
            seconds = typical(queue) if queue else None
            if seconds is None:
                unknown += 1
            else:
                guessed += 1
                obj = _lasting(obj, seconds)
        world.ingest(obj)
    for job in list(world.jobs.values()):
        world.reconcile(job)
    notes = ["no other job arrives and no queue changes meanwhile"]
    if guessed:
        notes.append(f"{guessed} task(s) without {LAHAR_DURATION} take their queue's typical run time")
    if unknown:
        notes.append(f"{unknown} task(s) without {LAHAR_DURATION} and no queue history are assumed to run past the horizon")
    return notes


def _queue_of(world: Any, pod: Pod) -> str | None:
    group = world.podgroups.get(f"{pod.metadata.namespace}/{pod.group_name}") if pod.group_name else None
    return group.spec.queue if group is not None else None


def _with_duration(obj: ApiObject, typical: Callable[[str], float | None] | None) -> ApiObject:
    """A proposed job without a duration takes its queue's typical one (for what runs after it)."""
    if typical is None or LAHAR_DURATION in obj.annotations:
        return obj
    queue = getattr(obj, "queue", None) or getattr(getattr(obj, "spec", None), "queue", None)
    seconds = typical(queue) if isinstance(queue, str) else None
    return obj if seconds is None else _lasting(obj, seconds)


def _lasting(obj: ApiObject, seconds: float) -> ApiObject:
    """A copy of ``obj`` whose tasks run ``seconds`` (``lahar.dev/duration``)."""
    copy = obj.model_copy(deep=True)
    copy.metadata.annotations[LAHAR_DURATION] = f"{seconds:.3f}s"
    return copy


def _run(sim: Simulation, estimate: Estimate, now: float, period: float, budget: float, timer: Callable[[], float]) -> None:
    end, t, deadline = now + estimate.horizon, now, timer() + budget
    namespace, name = estimate.job.split("/", 1)
    members = [k for k, p in sim.world.pods.items() if p.group_name == name and p.metadata.namespace == namespace]
    previous: list | None = None
    while t <= end:
        record = sim.step(t)
        estimate.cycles += 1
        if _gang_runs(sim.world, estimate.job, members):
            estimate.start = t
            return
        if timer() >= deadline:
            estimate.reached = t
            cycles = f"{estimate.cycles} cycle{'' if estimate.cycles == 1 else 's'}"
            estimate.message = f"the simulation stopped after {budget:g} s ({cycles}) at {format_duration(t - now)} ahead, before the job started"
            return
        busy, previous = changed_something(record, previous)
        following = next_step_time(t, period, busy, None if busy else sim.world.next_completion(), record.result.valid_until)
        if following is None:
            reason = getattr(record.result.jobs.get(estimate.job), "reason", None) or {}
            estimate.message = "nothing running is due to finish" + (f"; now: {reason.get('message')}" if reason.get("message") else "")
            return
        t = following


def _gang_runs(world: Any, key: str, members: list[str]) -> bool:
    """The gang is bound: at least minMember of the job's pods run (or ran) — bound this cycle counts."""
    started = sum(1 for k in members if world.pods[k].phase in ("Running", "Succeeded"))
    return started > 0 and started >= max(1, world.podgroups[key].spec.min_member)
