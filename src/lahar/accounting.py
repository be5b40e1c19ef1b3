"""Accounting: who used what, like Slurm's ``sacct``, per queue and per user, over time.

``UsageLedger`` is fed after every scheduling cycle with the tasks that ran since the last one
and the jobs that finished. It keeps, per (queue, user, hour):

- resource-seconds used (cpu core-seconds, memory byte-seconds, GPU-seconds, ...);
- jobs finished, and the sum and maximum of their waits (submit to start) and run times.

Buckets older than ``retention`` are dropped, so the ledger stays bounded. It also keeps a
bounded time series of each queue's allocation for charts. Pure: the caller passes the time.
"""

from __future__ import annotations

import csv
import io
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable

from lahar.resources import Resource

__all__ = ["UsageLedger", "Bucket", "BUCKET_SECONDS"]

BUCKET_SECONDS = 3600.0
DEFAULT_RETENTION = 90 * 86400.0


@dataclass
class Bucket:
    queue: str
    user: str
    start: float
    usage: dict[str, float] = field(default_factory=dict)  # resource -> unit-seconds (JSON units)
    jobs: int = 0
    wait_sum: float = 0.0
    wait_max: float = 0.0
    run_sum: float = 0.0

    def to_json(self) -> dict:
        return {
            "queue": self.queue,
            "user": self.user,
            "start": self.start,
            "usage": {k: round(v, 3) for k, v in sorted(self.usage.items())},
            "jobs": self.jobs,
            "waitSum": round(self.wait_sum, 3),
            "waitMax": round(self.wait_max, 3),
            "runSum": round(self.run_sum, 3),
        }

    @classmethod
    def from_json(cls, data: dict) -> "Bucket":
        return cls(
            data["queue"], data["user"], data["start"], dict(data.get("usage", {})),
            data.get("jobs", 0), data.get("waitSum", 0.0), data.get("waitMax", 0.0), data.get("runSum", 0.0),
        )  # fmt: skip


class UsageLedger:
    def __init__(self, retention: float = DEFAULT_RETENTION, series_points: int = 2000) -> None:
        self.retention = retention
        self.buckets: dict[tuple[str, str, float], Bucket] = {}
        self.series: dict[str, deque] = {}
        self.series_points = series_points
        self.last: float | None = None

    def _bucket(self, queue: str, user: str, now: float) -> Bucket:
        start = now - now % BUCKET_SECONDS
        key = (queue, user, start)
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = Bucket(queue, user, start)
        return bucket

    def observe(self, now: float, running: Iterable[tuple[str, str, Resource]]) -> None:
        """Charge every running task (queue, user, request) for the time since the last call."""
        elapsed = 0.0 if self.last is None else max(0.0, now - self.last)
        self.last = now
        per_queue: dict[str, dict[str, float]] = {}
        for queue, user, request in running:
            values = {k: v for k, v in request.to_json().items() if k != "pods"}
            totals = per_queue.setdefault(queue, {})
            for name, value in values.items():
                totals[name] = totals.get(name, 0.0) + value
            if elapsed:
                usage = self._bucket(queue, user, now).usage
                for name, value in values.items():
                    usage[name] = usage.get(name, 0.0) + value * elapsed
        for queue in set(per_queue) | set(self.series):
            points = self.series.setdefault(queue, deque(maxlen=self.series_points))
            points.append((now, per_queue.get(queue, {})))
        self._expire(now)

    def job_finished(self, now: float, queue: str, user: str, wait: float, run: float) -> None:
        bucket = self._bucket(queue, user, now)
        bucket.jobs += 1
        bucket.wait_sum += wait
        bucket.wait_max = max(bucket.wait_max, wait)
        bucket.run_sum += run

    def _expire(self, now: float) -> None:
        horizon = now - self.retention
        for key in [k for k in self.buckets if k[2] < horizon - BUCKET_SECONDS]:
            del self.buckets[key]

    def rows(self, since: float = 0.0, queue: str | None = None, user: str | None = None) -> list[dict]:
        """Totals per (queue, user) over buckets starting at or after ``since``."""
        totals: dict[tuple[str, str], Bucket] = {}
        for (q, u, start), bucket in sorted(self.buckets.items()):
            if start + BUCKET_SECONDS <= since or (queue and q != queue) or (user and u != user):
                continue
            total = totals.setdefault((q, u), Bucket(q, u, start))
            for name, value in bucket.usage.items():
                total.usage[name] = total.usage.get(name, 0.0) + value
            total.jobs += bucket.jobs
            total.wait_sum += bucket.wait_sum
            total.wait_max = max(total.wait_max, bucket.wait_max)
            total.run_sum += bucket.run_sum
        out = []
        for total in totals.values():
            row = total.to_json()
            row["waitMean"] = round(total.wait_sum / total.jobs, 3) if total.jobs else 0.0
            out.append(row)
        return out

    def series_json(self) -> dict:
        """Per resource, per queue, [[time, amount], ...] for charts."""
        out: dict[str, dict[str, list]] = {}
        for queue, points in sorted(self.series.items()):
            for now, totals in points:
                for name, value in totals.items():
                    out.setdefault(name, {}).setdefault(queue, []).append([now, value])
        return out

    def snapshot(self) -> list[dict]:
        return [bucket.to_json() for bucket in self.buckets.values()]

    def restore(self, rows: Iterable[dict]) -> None:
        for row in rows:
            bucket = Bucket.from_json(row)
            self.buckets[(bucket.queue, bucket.user, bucket.start)] = bucket


def rows_csv(rows: list[dict]) -> str:
    """Rows as CSV: queue, user, jobs, wait statistics and one column per resource."""
    resources = sorted({name for row in rows for name in row["usage"]})
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["queue", "user", "jobs", "wait_mean_s", "wait_max_s", "run_s", *[f"{r}_seconds" for r in resources]])
    for row in rows:
        writer.writerow([row["queue"], row["user"], row["jobs"], row["waitMean"], row["waitMax"], row["runSum"], *[row["usage"].get(r, 0.0) for r in resources]])
    return buffer.getvalue()
