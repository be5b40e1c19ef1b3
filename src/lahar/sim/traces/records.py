"""A trace, read: one ``TraceJob`` per job, and the API objects a simulation replays.

Every trace format (Philly, Alibaba, Lahar's CSV) is read into the same small records first, so
that what is common to all of them is written once: keeping the first N jobs, speeding the
clock up, routing trace keys to queues and turning jobs into PodGroups and Pods.

A job becomes one PodGroup (``minMember`` = its ``min_available``) and one Pod per task, named
``<job>-<index>``, all in namespace ``default``. Both carry ``lahar.dev/at`` (the arrival), pods
carry ``lahar.dev/duration``. They are built with plain constructors: validation costs about
13 µs a job on the full Philly trace, small against the replay itself (see docs/what-if.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from lahar.errors import BadRequest
from lahar.model import Node, Pod, PodGroup, PriorityClass, Queue
from lahar.model.base import GROUP_NAME_ANNOTATIONS, LAHAR_AT, LAHAR_DURATION, ObjectMeta
from lahar.model.queue import DEFAULT, ROOT
from lahar.model.workload import Container, PodGroupSpec, PodSpec, ResourceRequirements

__all__ = [
    "TraceJob",
    "Trace",
    "Routing",
    "limit_jobs",
    "speed_up",
    "queue_name",
    "default_queues",
    "route",
    "job_objects",
    "priority_classes",
    "MAX_TASKS",
]

PRIORITY_CLASS_PREFIX = "trace-priority-"
# The most tasks one job of a trace may have: a row is read as that many pods (a gang wider than
# any cluster a replay runs on; a number past it is a typo, such as 1e20, not a job)
MAX_TASKS = 100_000


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace: ``tasks`` identical tasks of ``requests`` each (Kubernetes quantities)."""

    name: str
    queue: str  # the trace's queue key, before routing
    arrival: float  # seconds from the start of the trace
    duration: float  # seconds each task runs once bound
    tasks: int
    requests: dict[str, str]
    min_available: int
    priority: int | None = None
    row: int = 0  # line in the source file, for messages


@dataclass
class Trace:
    """Jobs sorted by (arrival, row); ``nodes`` when the trace brings its own cluster."""

    kind: str
    jobs: list[TraceJob]
    nodes: list[Node] = field(default_factory=list)


def limit_jobs(jobs: list[TraceJob], count: int | None) -> list[TraceJob]:
    """The first ``count`` jobs by arrival (the list is already sorted); all when None."""
    if count is None:
        return jobs
    if count < 1:
        raise BadRequest(f"--limit-jobs: Invalid value: {count}: must be >= 1")
    return jobs[:count]


def speed_up(jobs: list[TraceJob], factor: float | None) -> list[TraceJob]:
    """Arrival times and durations divided by ``factor`` (> 0): the same workload, compressed."""
    if factor is None or factor == 1:
        return jobs
    if not factor > 0 or math.isinf(factor):
        raise BadRequest(f"--speedup: Invalid value: {factor}: must be a number > 0")
    return [replace(j, arrival=j.arrival / factor, duration=j.duration / factor) for j in jobs]


_NOT_LABEL = re.compile(r"[^a-z0-9-]+")


def queue_name(key: str) -> str:
    """A trace key as a queue name: lower case, each run of other characters than ``a-z0-9-``
    replaced by ``-``, trimmed of ``-``, cut to 63 characters; an empty key is ``default``."""
    name = _NOT_LABEL.sub("-", key.strip().lower()).strip("-")[:63].rstrip("-")
    return name or DEFAULT


def default_queues(keys: list[str]) -> list[Queue]:
    """One Open queue of weight 1 per trace key (sorted), except ``default``, which always exists."""
    names = sorted({queue_name(k) for k in keys} - {DEFAULT})
    return [Queue(metadata=ObjectMeta(name=name), spec={"weight": 1}) for name in names]


@dataclass
class Routing:
    """Where each trace key's jobs go, and the keys that had no queue of their own."""

    queues: dict[str, str]
    unknown: list[str]


def route(jobs: list[TraceJob], queues: list[Queue]) -> Routing:
    """Each trace key goes to the leaf queue named ``queue_name(key)``; a key with no such leaf
    queue (absent, a parent queue, or ``root``) goes to ``default`` and is listed in ``unknown``."""
    parents = {q.spec.parent for q in queues if q.spec.parent}
    leaves = {q.name for q in queues if q.name not in parents and q.name != ROOT}
    if DEFAULT not in parents:
        leaves.add(DEFAULT)
    mapping: dict[str, str] = {}
    unknown: list[str] = []
    for key in sorted({j.queue for j in jobs}):
        name = queue_name(key)
        if name not in leaves:
            unknown.append(key)
            name = DEFAULT
        mapping[key] = name
    return Routing(mapping, unknown)


def priority_classes(jobs: list[TraceJob]) -> list[PriorityClass]:
    """One PriorityClass per distinct job priority, named ``trace-priority-<value>``."""
    values = sorted({j.priority for j in jobs if j.priority is not None})
    return [PriorityClass(metadata=ObjectMeta(name=_class_name(v)), value=v) for v in values]


def _class_name(value: int) -> str:
    return f"{PRIORITY_CLASS_PREFIX}{value}" if value >= 0 else f"{PRIORITY_CLASS_PREFIX}minus-{-value}"


def job_objects(jobs: list[TraceJob], routing: Routing) -> list[PodGroup | Pod]:
    """PodGroups and Pods for ``jobs``, each group just before its pods (so it arrives first)."""
    out: list[PodGroup | Pod] = []
    for job in jobs:
        out.extend(_objects_of(job, routing.queues.get(job.queue, DEFAULT)))
    return out


def _seconds(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


def _objects_of(job: TraceJob, queue: str) -> list[PodGroup | Pod]:
    at = _seconds(job.arrival)
    klass = _class_name(job.priority) if job.priority is not None else None
    group = PodGroup(
        metadata=ObjectMeta(name=job.name, namespace="default", annotations={LAHAR_AT: at}),
        spec=PodGroupSpec(min_member=job.min_available, queue=queue, priority_class_name=klass),
    )
    annotations = {LAHAR_AT: at, LAHAR_DURATION: _seconds(job.duration), GROUP_NAME_ANNOTATIONS[0]: job.name}
    pods: list[PodGroup | Pod] = [group]
    for index in range(job.tasks):
        container = Container(name="main", resources=ResourceRequirements(requests=dict(job.requests)))
        spec = PodSpec(containers=[container], priority_class_name=klass, priority=job.priority)
        pods.append(Pod(metadata=ObjectMeta(name=f"{job.name}-{index}", namespace="default", annotations=dict(annotations)), spec=spec))
    return pods
