"""What a what-if run measures: waits, usage, utilisation and fairness, collected as it runs.

``MetricsCollector`` is a ``Simulation`` observer (called after every step). It keeps:

- per job: submit (its ``lahar.dev/at``), start (the cycle of its first bind, or the first cycle
  that sees it running), end (the cycle that sees it Completed), evictions of its tasks;
  wait = start - submit, run = end - start. A job that never started has no wait: it is
  counted in ``never_started`` instead;
- per queue and cluster-wide, time series on the cycle grid: allocated and deserved per
  resource, share, pending jobs (Pending or Inqueue), utilisation per resource
  (allocated / capacity over leaf queues) and Jain's index. Each point is the *time average*
  of the state over a bin of the grid; when more than ``max_points`` bins are needed, pairs of
  bins merge (the width doubles), so memory stays bounded however long the replay is. Totals
  (resource-hours, mean utilisation, mean index) are exact integrals, not read from the bins;
- evictions by reason (``reclaim``, ``preempt``) from the cycles' decisions.

The state after a step holds until the next step: a step's allocation counts from its time.

**Share** of a queue: Volcano's proportion share, ``max over resources r with deserved_r > 0
of allocated_r / deserved_r``, with deserved as the scheduler's queue plugin (proportion or
capacity) computed it that cycle; no share when the queue has no deserved resource.

**Jain's fairness index** at a step: over the leaf queues that are *active* (a pending job, or
anything allocated) and have a share x_q, ``J = (sum x_q)^2 / (n * sum x_q^2)``: 1 when all have
the same share, 1/n when one queue has everything. J is 1 when every active queue has share 0,
and undefined (not averaged) when no queue is active. ``jain_mean`` is its time average over
the time it is defined.

**Percentiles** of waits use linear interpolation between order statistics (numpy's default),
over the jobs that started.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from lahar.duration import DurationError, parse_duration
from lahar.model.base import LAHAR_AT
from lahar.model.queue import ROOT
from lahar.resources import GPU, PODS, Resource

__all__ = [
    "MetricsCollector",
    "JobRecord",
    "Bins",
    "jain_index",
    "percentile",
    "queue_share",
    "main_resource",
    "summary_rows",
    "queue_table",
    "fmt_seconds",
    "fmt_pct",
    "fmt_num",
]

_PENDING_PHASES = ("Pending", "Inqueue")


@dataclass(slots=True)
class JobRecord:
    queue: str
    submit: float
    start: float | None = None
    end: float | None = None
    evictions: int = 0

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.submit

    @property
    def run(self) -> float | None:
        return None if self.start is None or self.end is None else self.end - self.start

    def to_json(self) -> dict[str, Any]:
        return {"queue": self.queue, "submit": self.submit, "start": self.start, "end": self.end, "wait": self.wait, "run": self.run, "evictions": self.evictions}


def jain_index(shares: list[float]) -> float | None:
    """(sum x)^2 / (n sum x^2); 1.0 when all are 0; None for no values."""
    if not shares:
        return None
    squares = sum(x * x for x in shares)
    return 1.0 if squares == 0 else sum(shares) ** 2 / (len(shares) * squares)


def percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def queue_share(allocated: dict[str, float], deserved: dict[str, float]) -> float | None:
    """max over resources with deserved > 0 of allocated / deserved; None when none."""
    ratios = [allocated.get(n, 0.0) / v for n, v in deserved.items() if v > 0 and n != PODS]
    return max(ratios) if ratios else None


class Bins:
    """Time averages of a vector of columns over bins of ``width`` seconds starting at 0.

    ``add(t0, t1, values)`` says the columns held ``values`` over [t0, t1). Bins merge in pairs
    when more than ``max_bins`` would be needed. Columns may be added at any time (earlier
    bins read 0 for them).
    """

    def __init__(self, width: float, max_bins: int = 1024) -> None:
        self.width = width
        self.max_bins = max(2, max_bins)
        self.sums = np.zeros((self.max_bins, 0))
        self.rows = 0
        self.end = 0.0

    def add(self, t0: float, t1: float, values: np.ndarray) -> None:
        if t1 <= t0:
            return
        self._widen(values.size)
        while math.ceil(t1 / self.width - 1e-9) > self.max_bins:
            self._merge()
        k0, k1 = int(t0 // self.width), int(t1 // self.width)
        if k0 == k1:
            self.sums[k0] += values * (t1 - t0)
        else:
            self.sums[k0] += values * ((k0 + 1) * self.width - t0)
            self.sums[k0 + 1 : k1] += values * self.width
            if k1 < self.max_bins:
                self.sums[k1] += values * (t1 - k1 * self.width)
        self.rows = max(self.rows, min(self.max_bins, math.ceil(t1 / self.width - 1e-9)))
        self.end = max(self.end, t1)

    def _widen(self, columns: int) -> None:
        if columns > self.sums.shape[1]:
            extra = np.zeros((self.max_bins, columns - self.sums.shape[1]))
            self.sums = np.hstack([self.sums, extra])

    def _merge(self) -> None:
        pairs = self.sums[0::2] + self.sums[1::2]
        self.sums = np.zeros_like(self.sums)
        self.sums[: len(pairs)] = pairs
        self.width *= 2
        self.rows = math.ceil(self.rows / 2)

    def averages(self) -> tuple[list[float], np.ndarray]:
        """Bin start times, and the time average of each column in each bin (rows x columns)."""
        starts = [k * self.width for k in range(self.rows)]
        spans = np.array([min(self.width, self.end - s) for s in starts]) if starts else np.zeros(0)
        spans[spans <= 0] = self.width
        return starts, self.sums[: self.rows] / spans[:, None] if self.rows else np.zeros((0, self.sums.shape[1]))


class MetricsCollector:
    """A ``Simulation`` observer; ``result(sim)`` gives the metrics as JSON-ready data."""

    def __init__(self, max_points: int = 1024) -> None:
        self.max_points = max_points
        self.jobs: dict[str, JobRecord] = {}
        self.evictions: dict[str, int] = {}
        self.queue_evictions: dict[str, int] = {}
        self.cycles = 0
        self.bins: Bins | None = None
        self.columns: dict[tuple, int] = {}
        self.totals = np.zeros(0)
        self.capacity: dict[str, float] = {}
        self._state = np.zeros(0)
        self._kept_figures: tuple | None = None  # what ``_state`` was made of (``_snapshot``)
        self._leaf_parts: tuple | None = None  # each leaf's part of it, on that capacity and those leaves (``_state_of``)
        self._last: float | None = None
        self._leaves: list[str] = []
        self._shape = (-1, -1)
        self._reset_pending()

    def _reset_pending(self) -> None:
        """What ``_track_jobs`` carries from one cycle to the next: the waiting jobs (uid -> queue)
        and their count per queue, the jobs bound in the last cycle, and its outcomes."""
        self._waiting: dict[str, str] = {}
        self._waiting_per_queue: dict[str, int] = {}
        self._bound_before: set[str] = set()
        self._seen_outcomes: dict | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling a collector an older version saved: it starts with a full look at the jobs."""
        self.__dict__.update(state)
        self.__dict__.setdefault("_kept_figures", None)
        self.__dict__.setdefault("_leaf_parts", None)
        if "_waiting" not in state:
            self._reset_pending()

    # ----------------------------------------------------------------- observing

    def __call__(self, sim: Any, record: Any) -> None:
        if self.bins is None:
            self.bins = Bins(sim.period, self.max_points)
        if self._last is not None and record.time > self._last:
            self._integrate(self._last, record.time)
        self.cycles += 1
        self._refresh_cluster(sim)
        pending = self._track_jobs(sim, record)
        self._track_decisions(record)
        self._state = self._snapshot(sim, record, pending)
        self._last = record.time

    def _integrate(self, t0: float, t1: float) -> None:
        state = self._state
        if state.size < len(self.columns):
            state = np.concatenate([state, np.zeros(len(self.columns) - state.size)])
        if self.totals.size < state.size:
            self.totals = np.concatenate([self.totals, np.zeros(state.size - self.totals.size)])
        self.totals[: state.size] += state * (t1 - t0)
        self.bins.add(t0, t1, state)

    def _refresh_cluster(self, sim: Any) -> None:
        cache = sim.world.cache
        shape = (len(cache.nodes), len(cache.queues))
        if shape == self._shape:
            return
        self._shape = shape
        total = Resource()
        for node in cache.nodes.values():
            total.add(node.allocatable)
        self.capacity = {k: v for k, v in total.to_json().items() if k != PODS}
        parents = {info.queue.spec.parent for info in cache.queues.values()}
        self._leaves = sorted(n for n in cache.queues if n not in parents and n != ROOT)

    def _track_jobs(self, sim: Any, record: Any) -> dict[str, int]:
        """Register new jobs, note starts and ends; returns the pending jobs per queue (a job
        bound in this cycle still reports its old phase: it is counted as started)."""
        now, outcomes = record.time, record.result.jobs
        bound = {d.job for d in record.result.decisions if d.type == "bind"}
        for uid in self._jobs_to_look_at(record.result, bound):
            outcome = outcomes.get(uid)
            if outcome is None:
                continue
            job = self.jobs.get(uid)
            if job is None:
                job = self.jobs[uid] = JobRecord(outcome.queue, _submit_time(sim, uid, now))
            if job.start is None and (uid in bound or outcome.running or outcome.phase == "Completed"):
                job.start = now
            waiting = outcome.phase in _PENDING_PHASES and uid not in bound
            self._count_waiting(uid, outcome.queue if waiting else None)
            if not waiting and outcome.phase == "Completed" and job.end is None:
                job.end = now
        self._bound_before, self._seen_outcomes = bound, outcomes
        return {queue: count for queue, count in self._waiting_per_queue.items() if count}

    def _jobs_to_look_at(self, result: Any, bound: set[str]) -> Iterable[str]:
        """Every job of ``result``, in job order; or, when the cycle compared its outcomes with
        the last ones seen here (the simulation applied them: ``CycleResult.changed``), only
        those whose outcome changed and those bound in this cycle or the last (binding moves a
        job out of the waiting count before its outcome changes), once the jobs that left its
        view since (finished: the cache forgot them) are no longer counted as waiting. Any other
        job's outcome, and so what was noted of it, is the same as when last looked at."""
        before = self._seen_outcomes
        if result.changed is not None and before is not None and result.compared_to is before:
            now = result.jobs
            arrived = sum(1 for uid in result.changed if uid not in before)
            if len(now) != len(before) + arrived:  # some left: the keys' difference, in C (any order: counts)
                for uid in before.keys() - now.keys():
                    self._count_waiting(uid, None)
            return sorted(set(result.changed).union(bound, self._bound_before))
        self._reset_pending()
        return result.jobs

    def _count_waiting(self, uid: str, queue: str | None) -> None:
        """The job waits in ``queue`` now (None: it does not wait)."""
        was = self._waiting.pop(uid, None)
        if was is not None:
            self._waiting_per_queue[was] -= 1
        if queue is not None:
            self._waiting[uid] = queue
            self._waiting_per_queue[queue] = self._waiting_per_queue.get(queue, 0) + 1

    def _track_decisions(self, record: Any) -> None:
        for decision in record.result.decisions:
            if decision.type != "evict":
                continue
            job = self.jobs.get(decision.job or "")
            reason = decision.reason or "other"
            self.evictions[reason] = self.evictions.get(reason, 0) + 1
            queue = decision.queue or (job.queue if job else "")
            self.queue_evictions[queue] = self.queue_evictions.get(queue, 0) + 1
            if job is not None:
                job.evictions += 1

    # ----------------------------------------------------------------- results

    def result(self, sim: Any) -> dict[str, Any]:
        """Everything measured, as JSON-ready data (None where a value is undefined)."""
        horizon = self.horizon(sim)
        return {
            "summary": self._summary(sim, horizon),
            "queues": {name: self._queue_summary(name, horizon) for name in self._queue_names()},
            "jobs": {key: job.to_json() for key, job in sorted(self.jobs.items())},
            "series": self._series(horizon),
        }

    def horizon(self, sim: Any) -> float:
        """The measured window's end: when the last job ended if every job did, else the last step."""
        ends = [job.end for job in self.jobs.values()]
        if ends and all(end is not None for end in ends):
            return max(ends)  # type: ignore[type-var]
        return self._last or 0.0

    def _total(self, key: tuple) -> float:
        index = self.columns.get(key)
        return float(self.totals[index]) if index is not None and index < self.totals.size else 0.0

    def _queue_names(self) -> list[str]:
        """Leaf queues that had a job or used anything, and every queue a job ran in."""
        used = {q for q in self._leaves if any(self._total(("allocated", q, k)) for k in self.capacity)}
        return sorted(used | {job.queue for job in self.jobs.values()})

    def _summary(self, sim: Any, horizon: float) -> dict[str, Any]:
        jobs = list(self.jobs.values())
        waits = [j.wait for j in jobs if j.wait is not None]
        defined = self._total(("jain_time",))
        return {
            "time": horizon,
            "cycles": self.cycles,
            "jobs": len(jobs),
            "started": len(waits),
            "completed": sum(1 for j in jobs if j.end is not None),
            "never_started": sum(1 for j in jobs if j.start is None),
            "rejected": len(sim.world.rejections),
            "evictions": dict(sorted(self.evictions.items())),
            "reclaims": self.evictions.get("reclaim", 0),
            "preemptions": self.evictions.get("preempt", 0),
            "wait_p50": percentile(waits, 50),
            "wait_p90": percentile(waits, 90),
            "wait_mean": float(np.mean(waits)) if waits else None,
            "capacity": dict(self.capacity),
            "utilisation": {k: self._total(("util", k)) / horizon if horizon > 0 else 0.0 for k in self.capacity},
            "jain_mean": self._total(("jain",)) / defined if defined > 0 else None,
        }

    def _queue_summary(self, name: str, horizon: float) -> dict[str, Any]:
        jobs = [j for j in self.jobs.values() if j.queue == name]
        waits = [j.wait for j in jobs if j.wait is not None]
        usage = {k: self._total(("allocated", name, k)) / 3600 for k in self.capacity}
        everyone = {k: sum(self._total(("allocated", q, k)) for q in self._leaves) / 3600 for k in self.capacity}
        return {
            "jobs": len(jobs),
            "started": len(waits),
            "completed": sum(1 for j in jobs if j.end is not None),
            "never_started": sum(1 for j in jobs if j.start is None),
            "wait_p50": percentile(waits, 50),
            "wait_p90": percentile(waits, 90),
            "wait_mean": float(np.mean(waits)) if waits else None,
            "wait_max": max(waits) if waits else None,
            "evictions": self.queue_evictions.get(name, 0),
            "usage_hours": usage,
            "usage_share": {k: usage[k] / everyone[k] if everyone[k] > 0 else 0.0 for k in usage},
            "mean_allocated": {k: self._total(("allocated", name, k)) / horizon if horizon > 0 else 0.0 for k in self.capacity},
            "mean_deserved": {k: self._total(("deserved", name, k)) / horizon if horizon > 0 else 0.0 for k in self.capacity},
            "mean_share": self._total(("share", name)) / horizon if horizon > 0 else 0.0,
            "mean_pending": self._total(("pending", name)) / horizon if horizon > 0 else 0.0,
        }

    def _series(self, horizon: float) -> dict[str, Any]:
        if self.bins is None:
            return {"width": None, "time": [], "capacity": {}, "utilisation": {}, "jain": [], "queues": {}}
        starts, table = self.bins.averages()
        keep = max(1, sum(1 for start in starts if start < horizon)) if starts else 0
        starts, table = starts[:keep], table[:keep]

        def column(key: tuple) -> list[float]:
            index = self.columns.get(key)
            if index is None or index >= table.shape[1]:
                return [0.0] * len(starts)
            return [round(float(v), 9) for v in table[:, index]]

        defined, jain = column(("jain_time",)), column(("jain",))
        queues = {
            name: {
                "allocated": {k: column(("allocated", name, k)) for k in self.capacity},
                "deserved": {k: column(("deserved", name, k)) for k in self.capacity},
                "share": column(("share", name)),
                "pending": column(("pending", name)),
            }
            for name in self._queue_names()
        }
        return {
            "width": self.bins.width,
            "time": starts,
            "capacity": dict(self.capacity),
            "utilisation": {k: column(("util", k)) for k in self.capacity},
            "jain": [round(j / d, 9) if d > 0 else None for j, d in zip(jain, defined)],
            "queues": queues,
        }

    # ----------------------------------------------------------------- the state vector

    def _column(self, key: tuple) -> int:
        index = self.columns.get(key)
        if index is None:
            index = self.columns[key] = len(self.columns)
        return index

    def _snapshot(self, sim: Any, record: Any, pending: dict[str, int]) -> np.ndarray:
        """The state vector after ``record``'s cycle. It is made of each leaf queue's allocation,
        deserved share and waiting count on the cluster's capacity: when those are the last
        cycle's (most cycles of a backlog), it is the last vector."""
        attrs = record.result.session.queue_attrs
        figures = _figures(self._leaves, record.result.queue_allocated, attrs, pending)
        kept = self._kept_figures
        if kept is not None and kept[0] is self.capacity and kept[1] is self._leaves and kept[2] == figures:
            return self._state
        # copies: the cycle's objects are its own to change later (a value that moved is a new look)
        copies = [(_copy(a), _copy(d), n) for a, d, n in figures]
        self._kept_figures = (self.capacity, self._leaves, copies)
        return self._state_of(copies)

    def _state_of(self, figures: list[tuple]) -> np.ndarray:
        """The state vector of each leaf queue's ``figures`` (``_figures``). A leaf's columns are
        worked out again only when its own figures moved (a cycle mostly moves one queue)."""
        parts = self._leaf_parts
        if parts is None or parts[0] is not self.capacity or parts[1] is not self._leaves:
            parts = self._leaf_parts = (self.capacity, self._leaves, {})
        known = parts[2]
        values: dict[int, float] = {}
        used: dict[str, float] = {}
        shares = []
        for name, figure in zip(self._leaves, figures):
            part = known.get(name)
            if part is None or part[0] != figure:
                part = known[name] = self._leaf_part(name, figure)
            _, columns, allocated, share = part
            values.update(columns)
            for key, value in allocated.items():
                used[key] = used.get(key, 0.0) + value
            if share is not None and (figure[2] or any(allocated.values())):
                shares.append(share)
        for key, total in self.capacity.items():
            values[self._column(("util", key))] = used.get(key, 0.0) / total if total > 0 else 0.0
        jain = jain_index(shares)
        values[self._column(("jain",))] = jain or 0.0
        values[self._column(("jain_time",))] = 1.0 if jain is not None else 0.0
        state = np.zeros(len(self.columns))
        for index, value in values.items():
            state[index] = value
        return state

    def _leaf_part(self, name: str, figure: tuple) -> tuple:
        """One leaf's part of the state vector, from its figures (allocation, deserved share,
        waiting jobs): the figures, its columns' values, its allocation and its share."""
        allocated, deserved = _public(figure[0]), _public(figure[1])
        share = queue_share(allocated, deserved)
        columns: dict[int, float] = {}
        self._queue_values(columns, name, allocated, deserved, share, figure[2])
        return figure, columns, allocated, share

    def _queue_values(self, values: dict[int, float], name: str, allocated: dict, deserved: dict, share: float | None, pending: int) -> None:
        for key in self.capacity:
            values[self._column(("allocated", name, key))] = allocated.get(key, 0.0)
            values[self._column(("deserved", name, key))] = deserved.get(key, 0.0)
        values[self._column(("share", name))] = share or 0.0
        values[self._column(("pending", name))] = float(pending)


def _figures(leaves: list[str], allocated: dict, attrs: dict, pending: dict[str, int]) -> list[tuple]:
    """What a state vector is made of, per leaf queue: allocation, deserved share, waiting jobs."""
    found = []
    for name in leaves:
        attr = attrs.get(name)
        found.append((allocated.get(name), attr.deserved if attr is not None else None, pending.get(name, 0)))
    return found


def _copy(res: Resource | None) -> Resource | None:
    return res.clone() if res is not None else None


def _public(res: Resource | None) -> dict[str, float]:
    if res is None:
        return {}
    return {k: v for k, v in res.to_json().items() if k != PODS}


def _submit_time(sim: Any, uid: str, now: float) -> float:
    group = sim.world.podgroups.get(uid)
    text = group.metadata.annotations.get(LAHAR_AT) if group is not None else None
    if text is None:
        return 0.0 if group is not None else now
    try:
        return parse_duration(text)
    except DurationError:
        return now


# ----------------------------------------------------------------- rows for people (tables, reports)


def fmt_seconds(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if abs(value) >= size:
            return f"{value / size:.1f}{unit}"
    return f"{value:.0f}s"


def fmt_pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def fmt_num(value: float | None) -> str:
    return "-" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))


def main_resource(capacity: dict[str, float]) -> str:
    """GPUs when the cluster has any, else cpu: the resource whose hours tables and plots show."""
    return GPU if capacity.get(GPU, 0) > 0 else "cpu"


def summary_rows(metrics: dict[str, Any]) -> list[list[str]]:
    s = metrics["summary"]
    rows = [
        ["simulated time", fmt_seconds(s["time"])],
        ["jobs / started / completed / never started", f"{s['jobs']} / {s['started']} / {s['completed']} / {s['never_started']}"],
        ["wait p50 / p90 / mean", f"{fmt_seconds(s['wait_p50'])} / {fmt_seconds(s['wait_p90'])} / {fmt_seconds(s['wait_mean'])}"],
        ["reclaims / preemptions", f"{s['reclaims']} / {s['preemptions']}"],
        ["Jain's index (time mean)", fmt_num(s["jain_mean"])],
        ["rejected by admission", str(s["rejected"])],
    ]
    rows += [[f"utilisation {k}", fmt_pct(v)] for k, v in sorted(s["utilisation"].items()) if v or k == main_resource(s["capacity"])]
    return rows


def queue_table(metrics: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    resource = main_resource(metrics["summary"]["capacity"])
    short = "gpu" if resource == GPU else resource
    header = ["queue", "jobs", "started", "never", "wait p50", "p90", "mean", f"{short}-hours", "of all", "mean share", "evictions"]
    rows = []
    for name, q in sorted(metrics["queues"].items()):
        rows.append([
            name, str(q["jobs"]), str(q["started"]), str(q["never_started"]),
            fmt_seconds(q["wait_p50"]), fmt_seconds(q["wait_p90"]), fmt_seconds(q["wait_mean"]),
            f"{q['usage_hours'].get(resource, 0.0):.1f}", fmt_pct(q["usage_share"].get(resource)),
            f"{q['mean_share']:.2f}", str(q["evictions"]),
        ])  # fmt: skip
    return header, rows


