"""The scheduler's view of the cluster, built from API objects, and the per-cycle snapshot.

``ClusterState.from_objects`` reads Nodes, Queues, PodGroups, Pods and PriorityClasses the way
Volcano's scheduler cache does (reference section 3): a job is a podgroup with its pods; a job
whose queue does not exist is left out; only Ready nodes count; a pod's status comes from its
phase, node and deletion mark. ``snapshot()`` gives a session its own copies.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from itertools import count
from typing import Any, Final, Iterable

from lahar.duration import DurationError, parse_duration
from lahar.model.base import LAHAR_DURATION, PREEMPTABLE, ApiObject
from lahar.model.cluster import Node, PriorityClass
from lahar.model.job import TASK_SPEC
from lahar.model.queue import Queue
from lahar.model.workload import Pod, PodGroup
from lahar.resources import PODS, Resource
from lahar.scheduler.api import BOUND, FAILED, PENDING, RELEASING, RUNNING, SUCCEEDED, UNKNOWN, JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus

__all__ = ["ClusterState", "task_from_pod", "job_from_podgroup", "node_from_object", "parse_time", "format_time"]

_CRITICAL_CLASSES: Final = ("system-cluster-critical", "system-node-critical")


def format_time(seconds: float) -> str:
    """Seconds since the epoch as RFC 3339 UTC (``1970-01-01T00:01:30Z`` for 90 s of simulated time)."""
    stamp = datetime.fromtimestamp(seconds, timezone.utc)
    text = stamp.strftime("%Y-%m-%dT%H:%M:%S")
    if stamp.microsecond:
        text += f".{stamp.microsecond:06d}".rstrip("0")
    return text + "Z"


def parse_time(text: str | None) -> float:
    """RFC 3339 to seconds since the epoch; missing means the zero time (0.0). Each text is read
    once (``_TIMES``): the cache reads a job's creation time at every write of its podgroup and
    its pods, and the jobs of a tick share one."""
    if not text:
        return 0.0
    known = _TIMES.get(text)
    if known is None:
        try:
            known = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            known = 0.0
        if len(_TIMES) >= _TIMES_KEPT:
            _TIMES.clear()
        _TIMES[text] = known
    return known


_TIMES: Final[dict[str, float]] = {}  # ``parse_time``'s answers, by text
_TIMES_KEPT: Final = 4096


def _bool_annotation(obj: ApiObject, key: str, default: bool) -> bool:
    """Go's ``strconv.ParseBool`` on an annotation (else a label); unparsable means false."""
    value = obj.metadata.annotations.get(key, obj.metadata.labels.get(key))
    if value is None:
        return default
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    return False


def task_status(pod: Pod) -> TaskStatus:
    """Volcano's ``getTaskStatus``."""
    deleted = pod.metadata.deletion_timestamp is not None
    phase = pod.phase
    if phase == "Running":
        return RELEASING if deleted else RUNNING
    if phase == "Pending":
        if deleted:
            return RELEASING
        return BOUND if pod.spec.node_name else PENDING
    return {"Succeeded": SUCCEEDED, "Failed": FAILED}.get(phase, UNKNOWN)


def task_from_pod(pod: Pod, job_uid: str, classes: dict[str, PriorityClass], resreq: Resource | None = None) -> TaskInfo:
    """The pod's task; ``resreq``: its request, when known (see ``_kept_request``)."""
    if resreq is None:
        requests = pod.requests()
        resreq = Resource.from_list({k: v for k, v in requests.items() if k != PODS})
        resreq.add_scalar(PODS, 1)
    klass = classes.get(pod.spec.priority_class_name or "")
    policy = pod.spec.preemption_policy or (klass.preemption_policy if klass else None) or ""
    duration = None
    if LAHAR_DURATION in pod.metadata.annotations:
        try:
            duration = parse_duration(pod.metadata.annotations[LAHAR_DURATION])
        except DurationError:
            duration = None
    return TaskInfo(
        uid=pod.metadata.uid or f"{pod.metadata.namespace}-{pod.name}",
        name=pod.name,
        namespace=pod.metadata.namespace or "default",
        job=job_uid,
        resreq=resreq,
        status=task_status(pod),
        node_name=pod.spec.node_name or "",
        priority=pod.spec.priority if pod.spec.priority is not None else 1,
        preemptable=_bool_annotation(pod, PREEMPTABLE, True),
        role=pod.metadata.annotations.get(TASK_SPEC) or pod.metadata.labels.get(TASK_SPEC, ""),
        preemption_policy=policy,
        creation=parse_time(pod.metadata.creation_timestamp),
        nominated_node=pod.status.nominated_node_name or "",
        pod=pod,
        critical=(pod.spec.priority_class_name in _CRITICAL_CLASSES) or pod.metadata.namespace == "kube-system",
        duration=duration,
    )


def job_from_podgroup(group: PodGroup, classes: dict[str, PriorityClass], old: JobInfo | None = None) -> JobInfo:
    """The podgroup's job; ``old``: the job it replaces, whose minResources it takes over where
    they are the very same (see ``_kept_min_resources``)."""
    klass = classes.get(group.spec.priority_class_name or "")
    if klass is None:
        default = [c for c in classes.values() if c.global_default]
        priority = default[0].value if default else 0
    else:
        priority = klass.value
    listed = group.spec.min_resources
    min_resources = _kept_min_resources(old, listed) if old is not None else None
    if min_resources is None and listed is not None:
        min_resources = Resource.from_list(listed)
    return JobInfo(
        uid=group.key,
        name=group.name,
        namespace=group.metadata.namespace or "default",
        queue=group.queue,
        min_available=group.spec.min_member,
        task_min_available=group.spec.min_task_member,
        priority=priority,
        creation=parse_time(group.metadata.creation_timestamp),
        podgroup=group,
        min_resources=min_resources,
        preemptable=_bool_annotation(group, PREEMPTABLE, False),
    )


def _kept_min_resources(old: JobInfo, listed: dict | None) -> Resource | None:
    """``old``'s minResources where its podgroup lists the very same map (a write that moved
    only the podgroup's status shares it, and no one changes a map in place); a job's
    minResources is never changed in place either (clones share it)."""
    before = old.podgroup
    if listed is None or before is None or before.spec.min_resources is not listed:
        return None
    return old.min_resources


def _kept_request(old: TaskInfo | None, pod: Pod) -> Resource | None:
    """``old``'s request where the pod's containers are the very lists it was worked out from
    (a bind or a status write shares them: objects are never changed in place), else None. A
    task's request is never changed in place (clones share it)."""
    before = old.pod if old is not None else None
    if before is None:
        return None
    spec, was = pod.spec, before.spec
    if spec is not was and (spec.containers is not was.containers or spec.init_containers is not was.init_containers):
        return None
    return old.resreq  # type: ignore[union-attr]


def node_from_object(node: Node) -> NodeInfo:
    allocatable = Resource.from_list(node.allocatable)
    capacity = Resource.from_list(node.status.capacity) if node.status.capacity else None
    return NodeInfo(
        node.name,
        allocatable,
        capacity=capacity,
        labels=node.metadata.labels,
        unschedulable=bool(node.spec.unschedulable),
        taints=node.spec.taints,
        ready=node.status.ready(),
    )


_QUEUE_NAMES: Final = count()  # ``ClusterState.queue_names``


class JobOrder:
    """One run of snapshots whose job maps each took the last one's again (``_session_jobs``):
    the keys taken out of the kept map since the run began (``_pop_job``), in order, and the
    outcomes of the last close over one of its sessions, with how many keys had been taken out
    by that session's snapshot. That close's map lists its session's jobs in session order; a
    later session of the same run lists the same jobs less those taken out since, in the same
    order, then the jobs that came since: a close given that map as ``previous`` starts from a
    copy of it (``cycle._outcomes_start``) instead of putting every job in again."""

    def __init__(self) -> None:
        self.dropped: list[str] = []
        self.base = 0  # how many keys were cut from the front of ``dropped``
        self.closed: dict[str, Any] | None = None
        self.closed_at = 0

    def count(self) -> int:
        """How many keys were taken out of the kept map since the run began."""
        return self.base + len(self.dropped)

    def dropped_between(self, start: int, end: int) -> list[str] | None:
        """The keys taken out after the first ``start`` and up to the first ``end``; None when
        some of them were cut already."""
        if start < self.base:
            return None
        return self.dropped[start - self.base : end - self.base]

    def record_close(self, outcomes: dict[str, Any], at: int) -> None:
        """A close's outcomes over a session whose snapshot came after ``at`` keys taken out;
        the keys before those are no longer asked for."""
        cut = at - self.base
        if cut > 0:
            del self.dropped[:cut]
            self.base = at
        self.closed, self.closed_at = outcomes, at


@dataclass
class ClusterState:
    """Jobs, nodes (with their tasks) and queues as the scheduler reads them, kept up to date by
    ``upsert`` / ``remove`` of API objects (Volcano's scheduler cache, fed by watch events)."""

    jobs: dict[str, JobInfo] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    orphans: dict[str, Pod] = field(default_factory=dict)
    # the session's job order, kept as jobs come and go (None: sort them at the next snapshot):
    # each job's creation time, then its key (``_place``). Job order falls back on the same two
    # (the session order Volcano has is a map's, any order): so look-alike jobs come in job order
    # (``lahar.scheduler.lookalikes``: the first of a kind is the first in the session)
    job_keys: list[tuple[float, str]] | None = field(default=None, repr=False, compare=False)
    # the jobs in that order, kept with the keys (the snapshot reads them without a lookup each)
    job_list: list[JobInfo] | None = field(default=None, repr=False, compare=False)
    # a new number whenever a queue name comes or goes (not when a queue is replaced), drawn
    # from one count for every state: a job's ``queue_seen`` equal to it tells the snapshot
    # that the job's queue still exists here
    queue_names: int = field(default_factory=lambda: next(_QUEUE_NAMES), repr=False, compare=False)
    # each node's copy in the last snapshot that took it, with that copy's ``version`` then, and
    # ``queue_names`` at that snapshot: a snapshot takes a copy back while nothing moved it
    # (``_node_copy``). Kept here, not on the node: a node and its copy (``source``) pointing
    # at each other would be a reference cycle left to the garbage collector
    node_copies: dict[str, tuple[NodeInfo, int]] = field(default_factory=dict, repr=False, compare=False)
    nodes_copied_at: int = field(default=-1, repr=False, compare=False)
    # the last snapshot's session jobs (kept here, never handed out: a session gets a copy),
    # less the jobs dropped since, and ``queue_names`` then (``_session_jobs``)
    session_jobs: dict[str, JobInfo] | None = field(default=None, repr=False, compare=False)
    session_jobs_names: int = field(default=-1, repr=False, compare=False)
    # the run of snapshots the kept map belongs to (a new one whenever it is made anew)
    job_order: JobOrder | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Each field from ``state``, also one pickled by an older version (bench/checkpoint.py):
        a field it did not have yet takes its default, one since dropped (``handed``, the copies
        now kept by each job) is left out."""
        for known in fields(ClusterState):
            if known.name in state:
                setattr(self, known.name, state[known.name])
            else:
                factory = known.default_factory
                setattr(self, known.name, factory() if callable(factory) else known.default)
        self.queue_names = next(_QUEUE_NAMES)  # another process's number may be one of this one's
        if self.job_keys and not isinstance(self.job_keys[0], tuple):  # keys alone, by an older version
            self.job_keys = self.job_list = None

    @classmethod
    def from_objects(cls, objects: Iterable[ApiObject]) -> "ClusterState":
        objects = list(objects)
        state = cls()
        order = (PriorityClass, Queue, Node, PodGroup, Pod)
        for kind in order:
            batch = [o for o in objects if isinstance(o, kind)]
            if kind is PodGroup:
                batch.sort(key=lambda g: g.key)
            for obj in batch:
                state.upsert(obj)
        return state

    def upsert(self, obj: ApiObject) -> None:
        """Add or replace one object (other kinds are ignored)."""
        if isinstance(obj, Pod):
            self._upsert_pod(obj)
        elif isinstance(obj, PodGroup):
            self._upsert_podgroup(obj)
        elif isinstance(obj, Queue):
            if obj.name not in self.queues:
                self.queue_names = next(_QUEUE_NAMES)
            self.queues[obj.name] = QueueInfo(obj, parse_time(obj.metadata.creation_timestamp))
        elif isinstance(obj, Node):
            self._upsert_node(obj)
        elif isinstance(obj, PriorityClass):
            self.priority_classes[obj.name] = obj

    def remove(self, obj: ApiObject) -> None:
        if isinstance(obj, Pod):
            self._remove_task(obj.key)
            self.orphans.pop(obj.key, None)
        elif isinstance(obj, PodGroup):
            job = self._pop_job(obj.key)
            for task in list(job.tasks.values()) if job else []:
                self._remove_task(task.key)
                if task.pod is not None:
                    self.orphans[task.key] = task.pod
        elif isinstance(obj, Queue):
            if self.queues.pop(obj.name, None) is not None:
                self.queue_names = next(_QUEUE_NAMES)
        elif isinstance(obj, Node):
            self.nodes.pop(obj.name, None)
            self.node_copies.pop(obj.name, None)
        elif isinstance(obj, PriorityClass):
            self.priority_classes.pop(obj.name, None)

    def forget_job(self, key: str) -> None:
        """Drop a finished job and its tasks (its pods are not kept as orphans)."""
        job = self._pop_job(key)
        for task in list(job.tasks.values()) if job else []:
            self._remove_task(task.key)

    def _pop_job(self, key: str) -> JobInfo | None:
        job = self.jobs.pop(key, None)
        if job is not None:
            self._unplace(job)
            kept = self.session_jobs
            if kept is not None and kept.pop(key, None) is not None and self.job_order is not None:
                self.job_order.dropped.append(key)
        return job

    def _unplace(self, job: JobInfo) -> None:
        """Take ``job`` out of the session's job order (``job_keys``)."""
        keys, listed = self.job_keys, self.job_list
        if keys is not None:
            place = _place(job)
            at = bisect_left(keys, place)
            if at < len(keys) and keys[at] == place:
                del keys[at]
                if listed is not None:
                    del listed[at]

    def _upsert_pod(self, pod: Pod) -> None:
        old = self.tasks.get(pod.key)
        self._remove_task(pod.key)
        group = pod.group_name
        job = self.jobs.get(f"{pod.metadata.namespace}/{group}") if group else None
        if job is None:
            self.orphans[pod.key] = pod
            return
        self.orphans.pop(pod.key, None)
        task = task_from_pod(pod, job.uid, self.priority_classes, _kept_request(old, pod))
        job.add_task(task)
        self.tasks[task.key] = task
        node = self.nodes.get(task.node_name) if task.node_name else None
        if node is not None and task.status not in _TERMINAL:
            node.add_task(task)

    def _remove_task(self, key: str) -> None:
        task = self.tasks.pop(key, None)
        if task is None:
            return
        job = self.jobs.get(task.job)
        if job is not None:
            job.delete_task(task)
        node = self.nodes.get(task.node_name) if task.node_name else None
        if node is not None:
            node.remove_task(task)

    def _upsert_podgroup(self, group: PodGroup) -> None:
        old = self.jobs.get(group.key)
        fresh = job_from_podgroup(group, self.priority_classes, old)
        if old is not None:
            for task in old.tasks.values():
                fresh.add_task(task)
        self.jobs[group.key] = fresh
        if old is not None and old.creation != fresh.creation:
            self._unplace(old)  # created anew under the same key: another place
        keys, listed = self.job_keys, self.job_list
        if keys is not None:
            place = _place(fresh)
            at = bisect_left(keys, place)
            if at == len(keys) or keys[at] != place:
                keys.insert(at, place)
                if listed is not None:
                    listed.insert(at, fresh)
            elif listed is not None:
                listed[at] = fresh  # the same job: the new object in the old one's place
        waiting = [p for p in self.orphans.values() if p.metadata.namespace == group.metadata.namespace and p.group_name == group.name]
        for pod in waiting:
            self._upsert_pod(pod)

    def _upsert_node(self, node: Node) -> None:
        fresh = node_from_object(node)
        old = self.nodes.get(node.name)
        self.nodes[node.name] = fresh
        tasks = list(old.tasks.values()) if old else [t for t in self.tasks.values() if t.node_name == node.name]
        for task in tasks:
            if task.status not in _TERMINAL:
                fresh.add_task(task)

    def snapshot(self) -> tuple[dict[str, JobInfo], dict[str, NodeInfo], list[NodeInfo], dict[str, QueueInfo]]:
        """Session copies: jobs of existing queues, Ready nodes holding the copied tasks.

        A job copy is the session's own until a later snapshot, which takes it back when
        neither the job here nor the copy changed a task since (no deep copy of what did not
        change; ``JobInfo.refresh`` makes it equal to a fresh clone). The job keeps its copy
        (``JobInfo.twin``); a job replaced here is a new object, without one. A node's copy is
        taken back the same way (``_node_copy``) where no job with a task on it was copied anew
        and no queue name came or went."""
        every = self.jobs
        keys, listed = self.job_keys, self.job_list
        if keys is None or listed is None or len(keys) != len(every) or len(listed) != len(keys):  # the same length: the same keys (kept as jobs come and go)
            keys = self.job_keys = _in_order(every)
            listed = self.job_list = [every[uid] for _, uid in keys]
        names = self.queue_names  # a job whose queue was found at this count is in one still
        copied: set[str] = set()  # nodes with a task of a job copied anew
        jobs = self._session_jobs(listed, names, copied)
        # the same session jobs as the last snapshot's but for those copied anew: a job comes
        # or goes with its tasks (its nodes' versions move), or with its queue's name
        same_jobs = names == self.nodes_copied_at
        self.nodes_copied_at = names
        nodes: dict[str, NodeInfo] = {}
        kept_copies = self.node_copies
        for name, node in self.nodes.items():
            if node.ready:  # a task on a node is its job copy's
                nodes[name] = _node_copy(node, jobs, kept_copies, same_jobs and name not in copied)
        return jobs, nodes, list(nodes.values()), dict(self.queues)

    def _session_jobs(self, listed: list[JobInfo], names: int, copied: set[str]) -> dict[str, JobInfo]:
        """The session's job copies in session order (``_session_copy`` each), the nodes of those
        copied anew added to ``copied``. The last snapshot's dict (less the jobs dropped since)
        is taken as it stands where it still lists the first of the session's jobs in the same
        order, the jobs that came since put after them (``_put_copies``): a dict copied at once,
        not grown key by key, which costs several times as much a key. Else it is made anew."""
        jobs = self.session_jobs if self.session_jobs_names == names else None
        if jobs is None or not _put_copies(jobs, listed, names, self.queues, copied):
            jobs = {}
            _put_copies(jobs, listed, names, self.queues, copied)  # into an empty dict: every job put in
            self.session_jobs, self.session_jobs_names = jobs, names
            self.job_order = JobOrder()
        elif self.job_order is None:  # a state pickled before there were runs (bench/checkpoint.py)
            self.job_order = JobOrder()
        return jobs.copy()


def _put_copies(jobs: dict[str, JobInfo], listed: list[JobInfo], names: int, queues: dict[str, QueueInfo], copied: set[str]) -> bool:
    """Put each session job's copy into ``jobs``, which lists copies of the first of them (none,
    or the last snapshot's less the jobs dropped since): a copy made anew in its job's place,
    a job that came since after them; False, and ``jobs`` left half done, where it does not
    list them in the same order (a job came before some of them, or a job's place moved). The
    caller then makes the dict anew (``_session_copy`` takes back the copies made here, and
    ``copied`` keeps the nodes found). A job's ``twin`` is only ever set by ``_session_copy``:
    a copy it took back is the one the dict holds. With the queue names unchanged since that
    dict was made, the jobs left out (their queue is gone) are the ones it left out."""
    order = list(jobs)
    known = len(order)
    place = 0
    for job in listed:
        if job.queue_seen == names or job.queue in queues:
            job.queue_seen = names
            uid = job.uid
            listed_before = place < known
            if listed_before:
                if order[place] != uid:
                    return False
                place += 1
            kept = job.twin
            twin = _session_copy(job)
            if twin is not kept or not listed_before:
                jobs[uid] = twin
            if twin is not kept:
                _nodes_of(job, kept, copied)
    return place == known


def _node_copy(node: NodeInfo, jobs: dict[str, JobInfo], kept: dict[str, tuple[NodeInfo, int]], may_reuse: bool) -> NodeInfo:
    """The node's copy for a session over ``jobs``: the last snapshot's copy (in ``kept``) taken
    back when ``may_reuse`` (every task on it is still its job copy's task: no job with a task
    here was copied anew), it was made of this very node, neither the node nor the copy moved a
    task since (the versions of both tell: its figures and accounting are the node's) and it
    holds no clone of a task outside the session; else a new ``clone_with``, kept."""
    found = kept.get(node.name)
    if may_reuse and found is not None:
        twin, version = found
        if twin.source is node and twin.source_version == node.version and twin.version == version and not twin.foreign:
            twin.index = None  # a session that was not released leaves its index set
            return twin
    twin = node.clone_with(jobs)
    kept[node.name] = (twin, twin.version)
    return twin


def _nodes_of(job: JobInfo, kept: JobInfo | None, found: set[str]) -> None:
    """Add to ``found`` the nodes of the job's tasks and of its last copy's (``kept``)."""
    for owner in (job, kept):
        if owner is not None:
            for task in owner.tasks.values():
                if task.node_name:
                    found.add(task.node_name)


def _in_order(jobs: dict[str, JobInfo]) -> list[tuple[float, str]]:
    """Every job's place (``_place``), sorted. Where all were created at once (a cluster loaded
    whole, creation times unknown) the keys alone: strings sort several times faster than pairs
    that tie on their first half (50,000 keys: about 30 ms against 150)."""
    creations = {job.creation for job in jobs.values()}
    if len(creations) == 1:
        created = creations.pop()
        return [(created, uid) for uid in sorted(jobs)]
    return sorted([_place(job) for job in jobs.values()])


def _place(job: JobInfo) -> tuple[float, str]:
    """Where a job comes in the session's order: by creation time, then key."""
    return (job.creation, job.uid)


def _session_copy(job: JobInfo) -> JobInfo:
    """The job's copy taken back (``JobInfo.refresh``) when neither side changed since it was
    handed, else a new clone; the job keeps it with both sides' ``changes``."""
    twin = job.twin
    changes = job.changes
    if twin is not None and changes == job.changes_handed and twin.changes == job.twin_changes_handed:
        twin = job.refresh(twin)
    else:
        # where only the session moved the copy's tasks (tried and put back, or kept), the job
        # stands, and so does its description (``JobInfo.described``)
        described = twin.described if twin is not None and changes == job.changes_handed else None
        twin = job.clone()
        twin.described = described
    job.twin, job.changes_handed, job.twin_changes_handed = twin, changes, twin.changes
    return twin


_FIELDS: Final = tuple(f.name for f in fields(ClusterState))
_TERMINAL: Final = (SUCCEEDED, FAILED)
