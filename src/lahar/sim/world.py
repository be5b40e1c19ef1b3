"""The simulated cluster: API objects, admission, controllers and where tasks run.

``World`` is what a live server does, without HTTP or a database: every object enters through
admission (or is refused, with the reason kept), vcjobs expand into podgroups and pods, bare
pods get podgroups, Commands move queues, the queue controller keeps statuses current, and the
scheduler's decisions are applied (a bind starts a task, an eviction restarts it Pending).
Tasks with ``lahar.dev/duration`` succeed that long after they start.

``raw=True`` skips admission, implicit queues and the controllers: objects are taken exactly as
written, which is how Volcano's own unit tests feed its scheduler.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from lahar.admission import admit_create, builtin_queue
from lahar.admission.view import LiveView
from lahar.controller.job import podgroup_for_bare_pod, restart_pod
from lahar.controller.queue import QueueEvent, apply_action, refresh
from lahar.duration import DurationError, parse_duration
from lahar.errors import LaharError
from lahar.model.base import LAHAR_DURATION, ApiObject
from lahar.model.cluster import Command, Node, PriorityClass, SchedulerConfiguration
from lahar.model.job import Job, expand_job
from lahar.model.queue import DEFAULT, ROOT, Queue
from lahar.model.workload import Pod, PodGroup
from lahar.scheduler.cache import ClusterState, format_time, parse_time
from lahar.scheduler.cycle import CycleResult

__all__ = ["World", "Rejection"]


@dataclass
class Rejection:
    time: float
    kind: str
    name: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "kind": self.kind, "name": self.name, "message": self.message}


# The tables of ``World`` by the kind of object each holds (the kinds are not subclasses of one
# another), and the table name found for each class met so far
_TABLES = (("queues", Queue), ("nodes", Node), ("podgroups", PodGroup), ("pods", Pod), ("classes", PriorityClass), ("jobs", Job))
_TABLE_OF_TYPE: dict[type, str | None] = {}
_UNSEEN = object()


def _created(obj: ApiObject, now: float) -> ApiObject:
    """``obj`` as created at ``now`` (its ``creationTimestamp``, as an API server stamps it), unless
    it says when it was created; what a controller makes for it is made then too (``expand_job``,
    ``podgroup_for_bare_pod``). Job order falls back on the podgroups' creation times (then
    their uids): without it, jobs waiting together would go by name, not first come first
    served. A copy: the same objects may be replayed again (``lahar simulate --compare``)."""
    if obj.metadata.creation_timestamp is not None:
        return obj
    return obj.model_copy(update={"metadata": obj.metadata.model_copy(update={"creation_timestamp": format_time(now)})})


@dataclass
class World:
    raw: bool = False
    queues: dict[str, Queue] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    podgroups: dict[str, PodGroup] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    classes: dict[str, PriorityClass] = field(default_factory=dict)
    cache: ClusterState = field(default_factory=ClusterState)
    rejections: list[Rejection] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)
    live: LiveView = field(default_factory=LiveView)
    _ends: list = field(default_factory=list)  # heap of (end time, pod key) of running tasks
    _statuses_seen: dict = field(default_factory=dict)  # vcjob key -> (job, outcome figures) found up to date
    _phases_seen: dict = field(default_factory=dict)  # podgroup key -> (podgroup, phase, running) found up to date
    _reasons_seen: dict = field(default_factory=dict)  # podgroup key -> (podgroup, reason) found written
    changes: int = 0  # objects taken in or let go so far: the same count means the same world
    _refreshed_at: int = -1  # ``live.generation`` when the queue controller last refreshed and found nothing to change
    _settled: dict = field(default_factory=dict)  # queue name -> ``live.queue_mark`` when the controller last found it up to date
    # What ``apply`` must look at besides the outcomes that changed (``outcomes_to_check``):
    # podgroup and vcjob keys taken in or let go since the last apply began, and the outcomes it applied
    _touched: set = field(default_factory=set)
    applied_outcomes: dict | None = None
    _checked: Iterable[str] = ()  # the keys apply looked at for ``applied_outcomes``
    # Keys of pods, podgroups and vcjobs taken in or let go since the last ``take_changed`` (a
    # server's usage history keeps its totals up from them); None until a reader first asks
    _changed: set | None = None

    def __post_init__(self) -> None:
        if not self.raw:
            for name in (ROOT, DEFAULT):
                self._store(builtin_queue(name))

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling (a replay saved by ``bench/checkpoint.py``): memos an older version did not
        keep start empty."""
        self.__dict__.update(state)
        for memo in ("_phases_seen", "_reasons_seen"):
            self.__dict__.setdefault(memo, {})
        self.__dict__.setdefault("_touched", set())
        self.__dict__.setdefault("applied_outcomes", None)
        self.__dict__.setdefault("_checked", ())
        self.__dict__.setdefault("_refreshed_at", -1)
        self.__dict__.setdefault("_settled", {})

    # ----------------------------------------------------------------- views

    def view(self) -> LiveView:
        """What admission reads: kept up to date by ``ingest`` and ``forget``."""
        return self.live

    def unfinished(self, queue: str) -> int:
        return self.live.unfinished_podgroups(queue)

    # ----------------------------------------------------------------- objects in

    def submit(self, obj: ApiObject, now: float) -> None:
        """An object arrives (from a manifest, at its ``lahar.dev/at`` time)."""
        if isinstance(obj, SchedulerConfiguration):
            return
        try:
            if isinstance(obj, Command):
                self._command(obj, now)
                return
            admitted = obj if self.raw else admit_create(_created(obj, now), self.view())
        except LaharError as exc:
            self.rejections.append(Rejection(now, obj.kind, obj.key, exc.message))
            return
        if isinstance(admitted, Pod) and admitted.phase == "Running" and not admitted.status.start_time:
            admitted = admitted.model_copy(deep=True)
            admitted.status.start_time = format_time(now)
        self._store(admitted)
        self.reconcile(admitted)

    def reconcile(self, obj: ApiObject) -> None:
        """What the job and podgroup controllers do for a new object: a vcjob gets its podgroup
        and pods, a bare pod its own podgroup. Idempotent: nothing is created twice."""
        if isinstance(obj, Job) and obj.key not in self.podgroups:
            group, pods = expand_job(obj)
            self._store(group)
            for pod in pods:
                if pod.key not in self.pods:
                    self._store(pod)
        elif isinstance(obj, Pod) and obj.group_name is None and not self.raw:
            group, joined = podgroup_for_bare_pod(obj)
            if group.key not in self.podgroups:
                self._store(group)
            self._store(joined)

    def _store(self, obj: ApiObject) -> None:
        """Write one object (here: keep it; a server's world also writes it to its store)."""
        self.ingest(obj)

    def _table(self, obj: ApiObject) -> dict | None:
        """The table that holds objects of ``obj``'s kind (None for a kind without one)."""
        name = _TABLE_OF_TYPE.get(type(obj), _UNSEEN)
        if name is _UNSEEN:
            name = _TABLE_OF_TYPE[type(obj)] = next((n for n, kind in _TABLES if isinstance(obj, kind)), None)
        return None if name is None else getattr(self, name)

    def take_changed(self) -> set[str] | None:
        """The keys of the pods, podgroups and vcjobs taken in or let go since the last call;
        None at the first call, from which on they are noted."""
        found, self._changed = self._changed, set()
        return found

    def _count_change(self, obj: ApiObject) -> None:
        self.changes += 1
        if self._changed is not None and isinstance(obj, (Pod, PodGroup, Job)):
            self._changed.add(obj.key)

    def ingest(self, obj: ApiObject) -> None:
        """Take an object as it now is into the tables and the scheduler's cache."""
        self._count_change(obj)
        table = self._table(obj)
        if table is not None:
            table[obj.key] = obj
        if isinstance(obj, (PodGroup, Job)):
            self._touched.add(obj.key)
        self.live.put(obj)
        if isinstance(obj, Pod):
            started = parse_time(obj.status.start_time) if obj.status.start_time else None
            if obj.phase == "Running" and started is not None:
                self.started[obj.key] = started
                duration = _duration(obj)
                if duration is not None:
                    heapq.heappush(self._ends, (started + duration, obj.key))
            else:
                self.started.pop(obj.key, None)
        if not self.raw and self._finished(obj):
            # A finished job cannot change any decision; like a podgroup garbage-collected after
            # its TTL it leaves the scheduler's view (it stays in the tables and the report).
            if isinstance(obj, PodGroup):
                self.cache.forget_job(obj.key)
            return
        self.cache.upsert(obj)

    def _finished(self, obj: ApiObject) -> bool:
        if isinstance(obj, PodGroup):
            return obj.status.phase == "Completed"
        if isinstance(obj, Pod) and obj.group_name:
            group = self.podgroups.get(f"{obj.metadata.namespace}/{obj.group_name}")
            return group is not None and group.status.phase == "Completed"
        return False

    def forget(self, obj: ApiObject) -> None:
        """An object is gone: drop it from the tables and the cache."""
        self._count_change(obj)
        table = self._table(obj)
        if table is not None:
            table.pop(obj.key, None)
        if isinstance(obj, (PodGroup, Job)):  # the memos of what was found up to date hold the last object
            for memo in (self._statuses_seen, self._phases_seen, self._reasons_seen):
                memo.pop(obj.key, None)
            self._touched.add(obj.key)
        self.live.remove(obj)
        self.started.pop(obj.key, None)
        self.cache.remove(obj)

    def _command(self, command: Command, now: float) -> None:
        if command.target is None or command.target.kind != "Queue":
            raise LaharError(f"command {command.key}: target must be a Queue")
        changes = apply_action(self.queues, command.target.name, command.action, self.unfinished)
        self._apply_queue_changes(changes.queues.values(), changes.events, now)
        self.events.append({"time": now, "type": "CommandProcessed", "command": command.key, "action": command.action, "queue": command.target.name})

    def _apply_queue_changes(self, queues: Iterable[Queue], events: Iterable[QueueEvent], now: float) -> None:
        for queue in queues:
            self._store(queue)
        for event in events:
            self.events.append({"time": now, **event.to_json()})

    def refresh_queues(self, now: float) -> None:
        """The queue controller's pass over every queue. It reads only the queues and their
        podgroups' phases per queue, which ``live`` holds (the world's queue table is the same
        queues), so a world that refreshed and found nothing to change would find nothing
        again while ``live.generation`` stands: it is skipped (a step whose writes were pods and
        vcjobs, or nothing). Nor does it look again at a queue it found up to date while
        neither that queue nor its counts moved (``live.queue_mark``): most steps move one queue."""
        if self.raw or self._refreshed_at == self.live.generation:
            return
        mark, settled = self.live.queue_mark, self._settled
        moved = {name for name in self.queues if settled.get(name) != mark(name)}
        changes = refresh(self.queues, self.live.phase_counts, moved)
        for name in changes.settled:  # before the changes are stored: a queue written moves on
            settled[name] = mark(name)
        if not changes.queues and not changes.events:
            self._refreshed_at = self.live.generation
            return
        self._apply_queue_changes(changes.queues.values(), changes.events, now)

    # ----------------------------------------------------------------- time passes

    def complete_due(self, now: float) -> list[str]:
        """Tasks whose duration has run out succeed; returns their keys (in time, then key order)."""
        due = []
        while self._ends and self._ends[0][0] <= now:
            end, key = heapq.heappop(self._ends)
            if self.end_time(key) == end:
                due.append((end, key))
        done = []
        for _, key in sorted(due):
            pod = self.pods.get(key)
            if pod is None or pod.phase != "Running":
                continue
            self._store(pod.model_copy(update={"status": pod.status.model_copy(update={"phase": "Succeeded"})}))
            self.started.pop(key, None)
            done.append(key)
        return done

    def end_time(self, key: str) -> float | None:
        pod = self.pods.get(key)
        duration = _duration(pod) if pod is not None else None
        if duration is None or key not in self.started:
            return None
        return self.started[key] + duration

    def next_completion(self) -> float | None:
        """When the next running task ends (entries of restarted or finished tasks are skipped)."""
        while self._ends and self.end_time(self._ends[0][1]) != self._ends[0][0]:
            heapq.heappop(self._ends)
        return self._ends[0][0] if self._ends else None

    # ----------------------------------------------------------------- decisions

    def apply(self, result: CycleResult, now: float) -> list[Any]:
        """Bind, evict and update podgroup phases as the cycle decided; returns the decisions
        carried out. A decision about a pod that is gone, or a bind of a pod another writer
        bound or to a node that is gone, is dropped: the server takes in what requests wrote
        while the cycle ran before applying it (in the simulator nothing changes meanwhile)."""
        applied = []
        for decision in result.decisions:
            pod = self.pods.get(decision.task)
            if pod is None:
                continue
            if decision.type == "bind":
                if pod.spec.node_name or decision.node not in self.nodes:
                    continue
                spec = pod.spec.model_copy(update={"node_name": decision.node})
                status = pod.status.model_copy(update={"phase": "Running", "start_time": format_time(now)})
                self._store(pod.model_copy(update={"spec": spec, "status": status}))
            elif decision.type == "evict":
                self._store(restart_pod(pod))
            applied.append(decision)
        for uid, group, outcome in self.podgroup_outcomes(result):
            self._podgroup_status(uid, group, outcome)
            job = self.jobs.get(uid)
            if job is not None:
                self._job_status(uid, job, outcome)
        return applied

    def podgroup_outcomes(self, result: CycleResult) -> Iterator[tuple[str, PodGroup, Any]]:
        """(key, podgroup, outcome) of the jobs ``outcomes_to_check`` names that have a podgroup."""
        outcomes = result.jobs
        for uid in self.outcomes_to_check(result):
            group = self.podgroups.get(uid)
            outcome = outcomes.get(uid)
            if group is not None and outcome is not None:
                yield uid, group, outcome

    def outcomes_to_check(self, result: CycleResult) -> Iterable[str]:
        """The jobs whose statuses ``result`` may change, in job order: every job, unless the cycle
        compared its outcomes with the ones applied here last (``run_cycle``'s ``previous``). Then
        only the jobs whose outcome changed, and those whose podgroup or vcjob came, changed or
        went since the last ``apply`` began: any other job's outcome and objects are the ones
        found up to date (or written, which takes the object in again) the last time.

        Worked out once per result's outcomes, when ``apply`` begins (what it writes then counts
        for the next one); later writers of the same outcomes (pending reasons, also of a copy of
        the result without the decisions a request made void) get the same keys."""
        if result.jobs is self.applied_outcomes:
            return self._checked
        touched, self._touched = self._touched, set()
        if result.changed is None or result.compared_to is None or result.compared_to is not self.applied_outcomes:
            keys: Iterable[str] = result.jobs
        else:
            keys = sorted(touched.union(result.changed)) if touched else result.changed
        self.applied_outcomes, self._checked = result.jobs, keys
        return keys

    def _podgroup_status(self, key: str, group: PodGroup, outcome: Any) -> None:
        """A podgroup's phase and pod counts as the cycle found them. A podgroup found up to date
        stays so until it or its figures change (an object is replaced, never changed in place):
        every running job, every cycle, without reading the podgroup itself again."""
        seen = self._phases_seen.get(key)
        if seen is not None and seen[0] is group and seen[1] == outcome.phase and seen[2] == outcome.running:
            return
        if group.status.phase == outcome.phase and group.status.running == outcome.running:
            self._phases_seen[key] = (group, outcome.phase, outcome.running)
            return
        counts = {"running": outcome.running, "succeeded": outcome.succeeded, "failed": outcome.failed}
        status = group.status.model_copy(update={"phase": outcome.phase, **counts})
        self._store(group.model_copy(update={"status": status}))

    def _job_status(self, key: str, job: Job, outcome: Any) -> None:
        """A vcjob's status follows its podgroup: phase and pod counts (as ``vcctl job list`` shows).
        A job found up to date stays so until it or its outcome changes: asked again with the same
        job object and the same figures, nothing is worked out (every running job, every cycle)."""
        figures = (outcome.phase, outcome.running, outcome.succeeded, outcome.failed)
        seen = self._statuses_seen.get(key)
        if seen is not None and seen[0] is job and seen[1] == figures:
            return
        phase = {"Inqueue": "Pending", "Unknown": "Pending"}.get(outcome.phase, outcome.phase) or "Pending"
        counts = (outcome.running, outcome.succeeded, outcome.failed)
        pending = max(0, job.total_replicas - sum(counts))
        status = job.status
        if (status.state or {}).get("phase") == phase and (status.running, status.succeeded, status.failed, status.pending) == (*counts, pending):
            self._statuses_seen[key] = (job, figures)
            return
        running, succeeded, failed = counts
        changes = {"state": {"phase": phase}, "running": running, "succeeded": succeeded, "failed": failed, "pending": pending}
        self._store(job.model_copy(update={"status": status.model_copy(update=changes)}))


def _duration(pod: Pod) -> float | None:
    """The pod's ``lahar.dev/duration`` in seconds, or None (runs until the end)."""
    text = pod.metadata.annotations.get(LAHAR_DURATION)
    if text is None:
        return None
    try:
        return parse_duration(text)
    except DurationError:
        return None
