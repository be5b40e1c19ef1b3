"""Where a long replay stands, on stderr, while it runs.

A whole trace takes minutes to replay (Philly's 82,247 jobs: tens of minutes on a laptop), and
until now ``lahar simulate --trace`` said nothing until it was done. ``ReplayProgress`` is a
``Simulation`` observer that shows, at most every ``interval`` seconds of wall time and once
more at the end:

    replay: cycle 20,000, simulated 12d04h; jobs: 8,113 of 82,247 arrived, 7,954 finished (9.7%); 1m40s elapsed

On a terminal the line is rewritten in place (``\\r``); elsewhere (a log, a pipe) each one is
a line of its own. A job counts as finished once the scheduler no longer holds it (its podgroup
completed); a job that can never run (too large for the cluster) stays arrived.

What it reads each cycle is two lengths and the clock: a replay of 263,403 cycles pays well
under a second for it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, TextIO

from lahar.duration import format_duration
from lahar.model.job import Job
from lahar.model.workload import Pod, PodGroup

__all__ = ["ProgressSettings", "ReplayProgress", "jobs_in", "progress_shown"]


def jobs_in(objects: list[Any]) -> int:
    """The jobs a replay of ``objects`` submits: podgroups, vcjobs and pods of no group (the
    controllers give each vcjob and each such pod a podgroup of its own)."""
    return sum(1 for o in objects if isinstance(o, (PodGroup, Job)) or (isinstance(o, Pod) and o.group_name is None))


@dataclass(frozen=True)
class ProgressSettings:
    """How to show a replay's progress (plain data: a ``--compare`` side takes it to its process).

    ``total_jobs``: the jobs the replay will submit; ``label``: put before each line (a
    comparison's side); ``in_place``: rewrite one line (a terminal) instead of printing lines;
    ``interval``: least wall seconds between two lines."""

    total_jobs: int
    label: str = ""
    in_place: bool = False
    interval: float = 5.0

    def observer(self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> "ReplayProgress":
        return ReplayProgress(self, stream, clock)


@contextmanager
def progress_shown(sim: Any, settings: ProgressSettings | None) -> Iterator[None]:
    """While the ``with`` body runs ``sim``, its progress as ``settings`` say (None: none), then
    the last line once the body is done."""
    if settings is None:
        yield
        return
    shown = settings.observer()
    sim.observers.append(shown)
    yield
    shown.finish(sim)


class ReplayProgress:
    """A ``Simulation`` observer that shows the replay's progress (see the module); call
    ``finish`` once the replay is over for the last line."""

    def __init__(self, settings: ProgressSettings, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings, self.clock = settings, clock
        self.stream = stream if stream is not None else sys.stderr
        self.started = self._shown = clock()
        self.lines = 0  # shown so far

    def __call__(self, sim: Any, record: Any) -> None:
        now = self.clock()
        if now - self._shown >= self.settings.interval:
            self._shown = now
            self._show(self.line(sim, now), end="")

    def finish(self, sim: Any) -> None:
        """The last line: where the replay ended."""
        self._show(self.line(sim, self.clock()), end="\n")

    def line(self, sim: Any, now: float) -> str:
        settings = self.settings
        arrived = len(sim.world.podgroups)
        finished = max(0, arrived - len(sim.world.cache.jobs))
        share = f" ({100 * finished / settings.total_jobs:.1f}%)" if settings.total_jobs else ""
        prefix = f"{settings.label}: " if settings.label else ""
        return (
            f"{prefix}replay: cycle {sim.cycle_count:,}, simulated {format_duration(sim.now)}; "
            f"jobs: {arrived:,} of {settings.total_jobs:,} arrived, {finished:,} finished{share}; "
            f"{format_duration(now - self.started)} elapsed"
        )

    def _show(self, text: str, end: str) -> None:
        if self.settings.in_place:
            self.stream.write(f"\r{text}\x1b[K{end}")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.lines += 1
