"""The discrete-event simulator: a virtual clock, arrivals, completions and scheduling cycles.

Two ways to run, as ``lahar simulate`` offers them:

- ``run_cycles(n)``: n cycles at ``period`` seconds apart (0, period, 2 x period...);
- ``run_until(t)``: cycles on the period grid, skipping idle stretches: after a cycle that
  changed nothing, the clock jumps to the grid point at or after the next arrival
  (``lahar.dev/at``) or completion (``lahar.dev/duration``), or sooner where a plugin that reads
  the clock may answer differently (``CycleResult.valid_until``: sla's next deadline). It stops
  at ``t``, or earlier when nothing is left to happen.

Each step at time ``now``: objects due arrive (through admission), tasks due complete, the queue
controller refreshes, the scheduler runs one cycle, its decisions are applied, the controller
refreshes again. Ties are broken by input order, so the same input gives the same output.
"""

from __future__ import annotations

import gc
import heapq
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from lahar.duration import DurationError, parse_duration
from lahar.errors import BadRequest
from lahar.scheduler.cycle import paused_gc as quiet_gc
from lahar.model.base import LAHAR_AT, ApiObject
from lahar.model.cluster import SchedulerConfiguration
from lahar.scheduler.cycle import CycleResult, run_cycle
from lahar.scheduler.framework.config import SchedulerConf
from lahar.sim.world import World

__all__ = ["Simulation", "CycleRecord", "arrival_time", "changed_something", "grid_time", "next_step_time", "LATEST_TIME"]

# The last second a simulation can reach: simulated time counts from 1970-01-01 and what happens
# is stamped in RFC 3339 (creation and start times), which ends with the year 9999. A run ends
# there as at ``--until``: a task that outlives it is still running, a job due after it never arrives.
LATEST_TIME = 253_402_300_799.0  # 9999-12-31T23:59:59Z


@dataclass
class CycleRecord:
    time: float
    result: CycleResult
    completed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "decisions": [d.to_json() for d in self.result.decisions]}


class Simulation:
    def __init__(
        self,
        objects: list[ApiObject],
        conf: SchedulerConf,
        *,
        period: float = 1.0,
        raw: bool = False,
        observers: list[Callable[["Simulation", CycleRecord], None]] | None = None,
    ) -> None:
        if period <= 0:
            raise ValueError("period must be > 0")
        self.conf = conf
        self.period = period
        self.world = World(raw=raw)
        self.now = 0.0
        self.cycles: list[CycleRecord] = []
        self.cycle_count = 0
        self.last: CycleResult | None = None
        # called after every step with (simulation, record): metrics collectors, progress bars
        self.observers = list(observers or [])
        self.keep_cycles = True  # False: keep only the last record (long trace replays)
        self._arrivals: list[tuple[float, int, ApiObject]] = []
        for seq, obj in enumerate(o for o in objects if not isinstance(o, SchedulerConfiguration)):
            heapq.heappush(self._arrivals, (arrival_time(obj), seq, obj))

    # ----------------------------------------------------------------- stepping

    def step(self, now: float) -> CycleRecord:
        """Everything that happens at ``now``, ending with one scheduling cycle."""
        self.now = now
        while self._arrivals and self._arrivals[0][0] <= now:
            _, _, obj = heapq.heappop(self._arrivals)
            self.world.submit(obj, now)
        completed = self.world.complete_due(now)
        self.world.refresh_queues(now)
        self.cycle_count += 1
        hiding = self._hide_lookalikes(completed)
        result = run_cycle(self.world.cache, self.conf, now, uid=f"cycle-{self.cycle_count}", previous=self.world.applied_outcomes, lookalikes=hiding)
        self._after_lookalikes(result)
        self.world.apply(result, now)
        self.world.refresh_queues(now)
        record = CycleRecord(now, result, completed)
        if self.keep_cycles:
            self.cycles.append(record)
        self.last = result
        for observer in self.observers:
            observer(self, record)
        return record

    def _hide_lookalikes(self, completed: list[str]) -> bool:
        """Whether this cycle hides look-alike waiting jobs from the actions (the result is the
        same either way; see ``lahar.scheduler.lookalikes``): worth it when the cycle decides
        nothing, or only binds a job or two in allocate (a task ended: its room goes to the
        next job of a queue that then refuses the rest), else the cycle runs twice. Every
        cycle but the first tries. After a try that had to run again, the next tries are
        skipped, twice as many after each such try in a row (at most 64)."""
        if self.last is None:
            return False
        skip = getattr(self, "_lookalike_skip", 0)
        if skip > 0:
            self._lookalike_skip = skip - 1
            return False
        return True

    def _after_lookalikes(self, result: CycleResult) -> None:
        if result.lookalikes_ran_again:
            self._lookalike_backoff = min(max(2 * getattr(self, "_lookalike_backoff", 0), 1), 64)
            self._lookalike_skip = self._lookalike_backoff
        elif result.lookalikes_hidden:
            self._lookalike_backoff = 0

    def run_cycles(self, count: int) -> None:
        if count > 1 and (count - 1) * self.period > LATEST_TIME:
            raise BadRequest(f"{count} cycles {self.period:g} s apart would run past 9999-12-31T23:59:59Z, the last time a simulation reaches: give fewer cycles or a shorter period")
        for index in range(count):
            self.step(index * self.period)

    def run_until(self, end: float, max_cycles: int = 10_000_000) -> None:
        with quiet_gc():
            self._run_until(end, max_cycles)

    def _run_until(self, end: float, max_cycles: int) -> None:
        now = 0.0
        for count in range(max_cycles):
            if count % 256 == 255:
                gc.collect(1)
            if now > end:
                break
            record = self.step(now)
            busy = bool(record.result.decisions or record.completed)
            following = next_step_time(now, self.period, busy, None if busy else self._next_event(), record.result.valid_until)
            if following is None:
                break
            now = following

    def _next_event(self) -> float | None:
        times = [t for t in (self._arrivals[0][0] if self._arrivals else None, self.world.next_completion()) if t is not None]
        return min(times) if times else None


def changed_something(record: CycleRecord, previous: list | None) -> tuple[bool, list]:
    """Whether the cycle of ``record`` changed the world (a task ended, or it decided something
    other than the pipelines of the cycle before, whose decisions are ``previous``), and this
    cycle's decisions, to pass as ``previous`` next time.

    A gang that fits only in part keeps one task pipelined (reserved) and reports it again every
    cycle: nothing changes until a task ends or a job arrives, so the next cycle would decide
    the same, and a run that skips idle stretches may jump to the next event (measured on
    Philly's first 200 jobs: 14,447 of 15,092 cycles were such repeats)."""
    decisions = [(d.type, d.task, d.node) for d in record.result.decisions]
    repeated = decisions == previous and all(kind == "pipeline" for kind, _, _ in decisions)
    return bool(record.completed or (decisions and not repeated)), decisions


def arrival_time(obj: ApiObject) -> float:
    """When ``obj`` arrives: its ``lahar.dev/at`` (0 without one); a ``BadRequest`` that names the
    object, the annotation and the rule when it is not a duration."""
    text = obj.annotations.get(LAHAR_AT)
    if not text:
        return 0.0
    try:
        return parse_duration(text)
    except DurationError as exc:
        raise BadRequest(f'{obj.kind} {obj.key}: annotation {LAHAR_AT}: "{text}" {exc}') from None


def grid_time(t: float, period: float) -> float:
    """The first cycle time at or after ``t`` (with a little slack for float error)."""
    return math.ceil(t / period - 1e-9) * period


def next_step_time(now: float, period: float, busy: bool, upcoming: float | None, horizon: float = math.inf) -> float | None:
    """When to step after a cycle at ``now``: the next grid point after a cycle that changed
    something (``busy``); otherwise the grid point at or after the next event (``upcoming``) or
    the cycle's ``horizon`` (its ``valid_until``: where a plugin that reads the clock, such as
    sla, may answer differently with nothing else changed), whichever comes first, never
    sooner than the next grid point; None when nothing is left to happen, or when the next step
    would come after ``LATEST_TIME``. A horizon at or before ``now`` (a plugin that cannot tell)
    steps every period until nothing is left to happen."""
    following = _following_step(now, period, busy, upcoming, horizon)
    return None if following is None or following > LATEST_TIME else following


def _following_step(now: float, period: float, busy: bool, upcoming: float | None, horizon: float) -> float | None:
    if busy:
        return grid_time(now + period, period)
    if horizon <= now:  # a plugin that reads the clock cannot tell until when: each period, while anything is left
        return None if upcoming is None else grid_time(now + period, period)
    nearest = min(math.inf if upcoming is None else upcoming, horizon)
    if nearest == math.inf:
        return None
    return max(grid_time(nearest, period), grid_time(now + period, period))
