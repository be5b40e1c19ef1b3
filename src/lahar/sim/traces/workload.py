"""From ``--trace`` and its options to the objects a simulation replays.

The rules, in the order they apply (docs/what-if.md repeats them for users):

1. ``--trace KIND:PATH`` is read (KIND is ``philly``, ``alibaba`` or ``csv``); jobs are sorted by
   arrival; ``--limit-jobs N`` keeps the first N; ``--speedup X`` divides arrival times and
   durations by X (manifests given as FILE arguments keep their own times).
2. Nodes: ``--nodes FILE`` and ``--cluster SPEC`` (both may be given: all their nodes), else
   Nodes among the FILE manifests, else the trace's own (Alibaba's node list), else the default
   cluster sized from the jobs (``lahar.sim.traces.cluster``).
3. Queues: the Queue documents of ``--queues FILE``; without it, one queue of weight 1 per trace
   key. Queues among the FILE manifests are added either way.
4. Routing: a key goes to the leaf queue of the same name (``records.queue_name``: lower case,
   other characters than ``a-z0-9-`` made ``-``); a key with no such leaf queue goes to
   ``default``, and the CLI prints those keys on stderr.

``Workload.objects(queues)`` builds fresh objects on every call, so two configurations (see
``lahar.sim.compare``) replay exactly the same jobs without sharing any mutable object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lahar.errors import BadRequest
from lahar.model import Node, Queue, SchedulerConfiguration
from lahar.model.base import ApiObject
from lahar.model.manifest import load_files
from lahar.scheduler.cycle import paused_gc
from lahar.sim.traces.alibaba import load_alibaba
from lahar.sim.traces.cluster import default_cluster, parse_cluster
from lahar.sim.traces.csvtrace import load_csv
from lahar.sim.traces.philly import load_philly
from lahar.sim.traces.records import Routing, Trace, TraceJob, default_queues, job_objects, limit_jobs, priority_classes, route, speed_up

__all__ = ["TRACE_KINDS", "Workload", "QueueFile", "load_trace", "read_queue_file", "build_workload", "manifest_workload"]

TRACE_KINDS = ("philly", "alibaba", "csv")


def load_trace(spec: str, queue_key: str | None = None) -> Trace:
    """``KIND:PATH`` read with the loader of its kind."""
    kind, sep, path = spec.partition(":")
    if not sep or kind not in TRACE_KINDS or not path:
        raise BadRequest(f'--trace: Invalid value: "{spec}": expected KIND:PATH with KIND one of philly, alibaba, csv (e.g. philly:philly.csv)')
    if queue_key is not None and kind != "alibaba":
        raise BadRequest(f"--queue-key: only for alibaba traces (the {kind} trace's queue key is fixed)")
    if not Path(path).exists():
        raise BadRequest(f"{path}: no such file")
    if kind == "philly":
        return load_philly(path)
    if kind == "alibaba":
        return load_alibaba(path, queue_key or "qos")
    return load_csv(path)


@dataclass
class QueueFile:
    """A queues file: Queue documents, and at most one SchedulerConfiguration."""

    path: str
    queues: list[Queue]
    config: SchedulerConfiguration | None = None


def read_queue_file(path: str) -> QueueFile:
    objects = load_files([path])
    others = sorted({o.kind for o in objects if not isinstance(o, (Queue, SchedulerConfiguration))})
    if others:
        raise BadRequest(f"{path}: a queues file holds Queue documents and at most one SchedulerConfiguration, not {', '.join(others)}")
    configs = [o for o in objects if isinstance(o, SchedulerConfiguration)]
    if len(configs) > 1:
        raise BadRequest(f"{path}: holds {len(configs)} SchedulerConfiguration documents: keep one")
    return QueueFile(path, [o for o in objects if isinstance(o, Queue)], configs[0] if configs else None)


@dataclass
class Workload:
    """A trace's jobs, the nodes to replay them on, and the extra manifests."""

    kind: str
    jobs: list[TraceJob]
    nodes: list[Node]
    extras: list[ApiObject] = field(default_factory=list)
    cluster_note: str = ""  # how the default cluster was sized, when it was

    def queues(self, defined: list[Queue] | None) -> list[Queue]:
        """``defined`` (from a queues file), or one queue per trace key; plus the FILE queues
        (a queue in both: ``defined`` wins; a default queue and a FILE queue: the FILE one)."""
        extra = [o for o in self.extras if isinstance(o, Queue)]
        if defined is None:
            named = {q.name for q in extra}
            return [*(q for q in default_queues([j.queue for j in self.jobs]) if q.name not in named), *extra]
        names = {q.name for q in defined}
        return [*defined, *(q for q in extra if q.name not in names)]

    def objects(self, defined: list[Queue] | None) -> tuple[list[ApiObject], Routing]:
        """Fresh objects for one run: priority classes, queues, nodes, extras, then the jobs."""
        queues = self.queues(defined)
        routing = route(self.jobs, queues)
        with paused_gc():
            nodes = [n.model_copy(deep=True) for n in self.nodes]
            jobs = job_objects(self.jobs, routing)
        own = [o for o in self.extras if not isinstance(o, Queue)]
        return [*priority_classes(self.jobs), *(q.model_copy(deep=True) for q in queues), *nodes, *own, *jobs], routing


def build_workload(
    trace: str,
    *,
    queue_key: str | None = None,
    limit: int | None = None,
    speedup: float | None = None,
    node_files: list[str] | None = None,
    cluster: list[str] | None = None,
    extras: list[ApiObject] | None = None,
) -> Workload:
    loaded = load_trace(trace, queue_key)
    jobs = speed_up(limit_jobs(loaded.jobs, limit), speedup)
    extras = list(extras or [])
    nodes = _given_nodes(node_files or [], cluster or [])
    if nodes or any(isinstance(o, Node) for o in extras):
        return Workload(loaded.kind, jobs, nodes, extras)
    if loaded.nodes:
        return Workload(loaded.kind, jobs, loaded.nodes, extras)
    sized, note = default_cluster(jobs)
    return Workload(loaded.kind, jobs, sized, extras, note)


def _given_nodes(node_files: list[str], cluster: list[str]) -> list[Node]:
    nodes: list[Node] = []
    for path in node_files:
        objects = load_files([path])
        others = sorted({o.kind for o in objects if not isinstance(o, Node)})
        if others:
            raise BadRequest(f"{path}: a nodes file holds Node documents only, not {', '.join(others)}")
        nodes += objects  # type: ignore[arg-type]
    return nodes + parse_cluster(cluster)


def manifest_workload(extras: list[ApiObject], node_files: list[str] | None = None, cluster: list[str] | None = None) -> Workload:
    """A workload of manifests only (``--compare`` without ``--trace``), plus any given nodes."""
    return Workload("manifests", [], _given_nodes(node_files or [], cluster or []), list(extras))
