"""The Microsoft Philly trace (2017), as flattened by the Pollux/adaptdl artifact.

Columns ``timestamp,duration,num_gpus,gpu_time,cluster`` (see the trace's README). The mapping:

- queue key = ``cluster`` (the virtual cluster, VC);
- one job per row; up to 8 GPUs it is one task of ``num_gpus`` GPUs, above that a gang of
  ``ceil(num_gpus / 8)`` tasks of 8 GPUs each, all needed to start (minAvailable = tasks), so a
  12-GPU job asks for 2 x 8 GPUs;
- arrival = ``timestamp`` minus the earliest timestamp; duration = ``duration``;
- rows are not sorted in the file: jobs are ordered by (timestamp, row) before anything else;
- the job is named ``philly-<row>``, the data row number (1 is the line after the header);
- tasks ask only for ``nvidia.com/gpu``: the trace has no CPU or memory columns.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

from lahar.resources import GPU
from lahar.sim.traces.reading import CsvRow, CsvTable
from lahar.sim.traces.records import MAX_TASKS, Trace, TraceJob

__all__ = ["load_philly", "GPUS_PER_NODE"]

GPUS_PER_NODE = 8
_REQUIRED = ("timestamp", "duration", "num_gpus", "cluster")


def load_philly(path: str | Path) -> Trace:
    """Every job of a Philly CSV, sorted by (arrival, row). Raises ``BadRequest`` on a bad row."""
    table = CsvTable(path, "Philly", _REQUIRED, ("gpu_time",))
    rows = [_parse(row) for row in table.rows()]
    if not rows:
        return Trace("philly", [])
    start = min(stamp for stamp, *_ in rows)
    jobs = [_job(number, (stamp - start).total_seconds(), *rest) for number, (stamp, *rest) in enumerate(rows, start=1)]
    jobs.sort(key=lambda j: (j.arrival, j.row))
    return Trace("philly", jobs)


def _parse(row: CsvRow) -> tuple[datetime, float, int, str]:
    try:
        stamp = datetime.fromisoformat(row.get("timestamp"))
    except ValueError:
        raise row.fail("timestamp", "is not a time such as 2017-10-09 07:01:55") from None
    return stamp, row.number("duration"), row.integer("num_gpus", minimum=1, maximum=GPUS_PER_NODE * MAX_TASKS), row.get("cluster")


def _job(row: int, arrival: float, duration: float, gpus: int, key: str) -> TraceJob:
    tasks = 1 if gpus <= GPUS_PER_NODE else math.ceil(gpus / GPUS_PER_NODE)
    per_task = gpus if tasks == 1 else GPUS_PER_NODE
    return TraceJob(
        name=f"philly-{row}",
        queue=key,
        arrival=arrival,
        duration=duration,
        tasks=tasks,
        requests={GPU: str(per_task)},
        min_available=tasks,
        row=row,
    )
