"""Lahar's CSV trace format, for users' own job logs (documented in docs/what-if.md).

One job per line, a header naming the columns (any order):

========== ======== ==================================================================
column      needed   meaning
========== ======== ==================================================================
submit      yes      seconds from the start (``90``, ``12.5``) or an ISO time
                     (``2024-05-01 09:30:00``, ``2024-05-01T09:30:00Z``); one form per
                     file; ISO times count from the earliest one
duration    yes      run time of each task: seconds or ``90s`` / ``10m`` / ``1h30m``
queue       yes      queue key (empty: the ``default`` queue)
tasks       yes      number of identical tasks (1 to 100,000)
cpu         one of   per-task requests as Kubernetes quantities (``500m``, ``2``; ``4Gi``;
memory      these    GPUs may be fractional: ``0.5``); an empty cell asks for none
gpu                  (``gpu`` is ``nvidia.com/gpu``)
priority    no       integer job priority (a PriorityClass ``trace-priority-<value>``)
name        no       job name (RFC 1123 subdomain, unique); default ``job-<row>``
minAvailable no      tasks needed to start (1..tasks); default all of them
========== ======== ==================================================================

Other columns are refused (a typo would otherwise be silently ignored). A bad cell raises
``BadRequest`` naming the file, line and column.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from lahar.duration import DurationError, parse_duration
from lahar.errors import BadRequest
from lahar.quantity import MAX_MAGNITUDE, TOO_LARGE, QuantityError, parse_quantity
from lahar.resources import GPU
from lahar.sim.traces.reading import CsvRow, CsvTable
from lahar.sim.traces.records import MAX_TASKS, Trace, TraceJob

__all__ = ["load_csv", "COLUMNS"]

_REQUIRED = ("submit", "duration", "queue", "tasks")
_RESOURCES = {"cpu": "cpu", "memory": "memory", "gpu": GPU}
_OPTIONAL = (*_RESOURCES, "priority", "name", "minAvailable")
COLUMNS = (*_REQUIRED, *_OPTIONAL)
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT32 = 2**31 - 1


def load_csv(path: str | Path) -> Trace:
    """Every job of a trace in Lahar's CSV format, sorted by (arrival, row)."""
    table = CsvTable(path, "Lahar CSV", _REQUIRED, _OPTIONAL, closed=True)
    rows = list(table.rows())
    if rows and not any(c in rows[0].index for c in _RESOURCES):
        raise BadRequest(f"{path}: line 1: give at least one request column: cpu, memory or gpu")
    submits = _arrivals(rows)
    jobs = [_job(row, number, submits[number - 1]) for number, row in enumerate(rows, start=1)]
    _check_unique(jobs, rows)
    jobs.sort(key=lambda j: (j.arrival, j.row))
    return Trace("csv", jobs)


def _arrivals(rows: list[CsvRow]) -> list[float]:
    """Seconds for each row: numbers as given, ISO times from the earliest; one form per file."""
    values: list[float | datetime] = []
    for row in rows:
        value = _submit(row)
        if values and isinstance(value, datetime) != isinstance(values[0], datetime):
            form = "ISO times" if isinstance(values[0], datetime) else "seconds"
            raise row.fail("submit", f"mixes forms: the first data row gives {form}; use one form per file")
        values.append(value)
    stamps = [v for v in values if isinstance(v, datetime)]
    if not stamps:
        return [float(v) for v in values]  # type: ignore[arg-type]
    start = min(stamps)
    return [(v - start).total_seconds() for v in stamps]


def _submit(row: CsvRow) -> float | datetime:
    text = row.get("submit")
    try:
        return row.number("submit")
    except BadRequest:
        pass
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise row.fail("submit", "must be seconds >= 0 or an ISO time such as 2024-05-01 09:30:00") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def _job(row: CsvRow, number: int, arrival: float) -> TraceJob:
    tasks = row.integer("tasks", minimum=1, maximum=MAX_TASKS)
    return TraceJob(
        name=_name(row, number),
        queue=row.get("queue"),
        arrival=arrival,
        duration=_duration(row),
        tasks=tasks,
        requests=_requests(row),
        min_available=_min_available(row, tasks),
        priority=_priority(row),
        row=number,
    )


def _duration(row: CsvRow) -> float:
    try:
        return parse_duration(row.get("duration"))
    except DurationError as exc:
        raise row.fail("duration", str(exc)) from None


def _requests(row: CsvRow) -> dict[str, str]:
    out = {}
    for column, resource in _RESOURCES.items():
        text = row.get(column)
        if not text:
            continue
        try:
            value = parse_quantity(text)
        except QuantityError:
            raise row.fail(column, "is not a quantity such as 500m, 2, 4Gi") from None
        if value < 0:
            raise row.fail(column, "must not be negative")
        if value > MAX_MAGNITUDE:
            raise row.fail(column, TOO_LARGE)
        if value:
            out[resource] = text
    return out


def _min_available(row: CsvRow, tasks: int) -> int:
    if not row.get("minAvailable"):
        return tasks
    value = row.integer("minAvailable", minimum=1)
    if value > tasks:
        raise row.fail("minAvailable", f"must be at most tasks ({tasks})")
    return value


def _priority(row: CsvRow) -> int | None:
    text = row.get("priority")
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise row.fail("priority", "must be an integer") from None
    if abs(value) > _INT32:
        raise row.fail("priority", f"must be in -{_INT32}..{_INT32}")
    return value


def _name(row: CsvRow, number: int) -> str:
    name = row.get("name") or f"job-{number}"
    if len(name) > 240 or not _NAME.match(name):
        raise row.fail("name", "must be a lowercase RFC 1123 name: letters, digits, '-' and '.', at most 240 characters")
    return name


def _check_unique(jobs: list[TraceJob], rows: list[CsvRow]) -> None:
    seen: dict[str, str] = {}
    for job, row in zip(jobs, rows):
        if job.name in seen:
            raise row.fail("name", f"is already the name of the job at {seen[job.name].split(': ')[-1]}")
        seen[job.name] = row.where
