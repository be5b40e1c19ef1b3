"""The scheduler's working objects: tasks, jobs, nodes and queues as a session sees them.

These mirror Volcano's ``pkg/scheduler/api`` (TaskInfo, JobInfo, NodeInfo, QueueInfo) because
the scheduling rules are stated in their terms (``ReadyTaskNum``, ``FutureIdle``...). They are
plain mutable objects owned by one session; ``lahar.scheduler.cache`` builds them from API
objects and clones them per session.

One deliberate simplification: a node refers to the *same* ``TaskInfo`` objects as their jobs
(Volcano keeps clones). The node remembers the status it accounted each task under, so that a
status change followed by ``update_task`` undoes the old accounting exactly as Volcano does.
"""

from __future__ import annotations

import sys
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Final, Iterable

from lahar.resources import Resource, request_id
# named here too: checkpoints pickled before they had their own module look for them here
from lahar.scheduler.fit import FitError, FitErrors, PredicateError, StatusCode
from lahar.scheduler.placement import Placement

if TYPE_CHECKING:
    from lahar.model.queue import Queue
    from lahar.model.workload import Pod, PodGroup
    from lahar.scheduler.columnar import NodeIndex
    from lahar.scheduler.cycle import JobOutcome
    from lahar.scheduler.framework.session import JobFacts

__all__ = [
    "TaskStatus",
    "TaskInfo",
    "JobInfo",
    "NodeInfo",
    "QueueInfo",
    "FitError",
    "FitErrors",
    "StatusCode",
    "allocated_status",
    "preemptable_status",
    "scheduled_status",
    "completed_status",
    "SCHEDULED_STATUSES",
    "COMPLETED_STATUSES",
    "PENDING",
    "ALLOCATED",
    "PIPELINED",
    "BINDING",
    "BOUND",
    "RUNNING",
    "RELEASING",
    "SUCCEEDED",
    "FAILED",
    "UNKNOWN",
]


class TaskStatus(IntEnum):
    PENDING = 1 << 0
    ALLOCATED = 1 << 1
    PIPELINED = 1 << 2
    BINDING = 1 << 3
    BOUND = 1 << 4
    RUNNING = 1 << 5
    RELEASING = 1 << 6
    SUCCEEDED = 1 << 7
    FAILED = 1 << 8
    UNKNOWN = 1 << 9

    @property
    def label(self) -> str:
        return self.name.title()


# Each status under its own name too: a cycle reads them per job and per task, and in Python
# 3.11 a member read off the enum class goes through ``EnumType.__getattr__``'s hook (about
# 150 ns, against 10 for a module's name). Compiled, both are static reads; a module's name
# that is not Final (as the sets below were) is a lookup in its module's names.
PENDING: Final = TaskStatus.PENDING
ALLOCATED: Final = TaskStatus.ALLOCATED
PIPELINED: Final = TaskStatus.PIPELINED
BINDING: Final = TaskStatus.BINDING
BOUND: Final = TaskStatus.BOUND
RUNNING: Final = TaskStatus.RUNNING
_RUNNING_PHASE: Final = sys.intern("Running")  # the podgroup phase (``JobInfo.is_pending``)
RELEASING: Final = TaskStatus.RELEASING
SUCCEEDED: Final = TaskStatus.SUCCEEDED
FAILED: Final = TaskStatus.FAILED
UNKNOWN: Final = TaskStatus.UNKNOWN


_ALLOCATED: Final = {BOUND, BINDING, RUNNING, ALLOCATED}
_PREEMPTABLE: Final = {BOUND, RUNNING}
_SCHEDULED: Final = {RUNNING, BOUND, FAILED, SUCCEEDED}
_COMPLETED: Final = {FAILED, SUCCEEDED}
SCHEDULED_STATUSES: Final = frozenset(_SCHEDULED)  # for loops over a job's status index
COMPLETED_STATUSES: Final = frozenset(_COMPLETED)  # a part of SCHEDULED_STATUSES
_VALID: Final = (
    BOUND, BINDING, RUNNING, ALLOCATED,
    SUCCEEDED, PIPELINED, PENDING,
)  # fmt: skip
_NOT_VALID: Final = (RELEASING, FAILED, UNKNOWN)  # every status not in _VALID
assert set(_VALID) | set(_NOT_VALID) == set(TaskStatus) and not set(_VALID) & set(_NOT_VALID)
_READY: Final = (BOUND, BINDING, RUNNING, ALLOCATED, SUCCEEDED)
_READY_SET: Final = frozenset(_READY)
# A session copy's conditions when it has none (``JobInfo.refresh``): one list for all, never
# changed in place (as no list of conditions is: ``JobInfo.set_condition`` makes a new one)
NO_CONDITIONS: Final[list[dict[str, Any]]] = []


def allocated_status(status: TaskStatus) -> bool:
    """Counts toward a queue's or job's allocation: Bound, Binding, Running, Allocated."""
    return status in _ALLOCATED


def preemptable_status(status: TaskStatus) -> bool:
    return status in _PREEMPTABLE


def scheduled_status(status: TaskStatus) -> bool:
    return status in _SCHEDULED


def completed_status(status: TaskStatus) -> bool:
    return status in _COMPLETED


_TASK_FIELDS: Final = (
    "uid", "name", "namespace", "job", "role", "pod", "resreq", "init_resreq", "node_name",
    "status", "priority", "preemptable", "best_effort", "preemption_policy", "creation",
    "nominated_node", "eviction_occurred", "index", "critical", "duration", "_request_id", "_key",
    "_placement",
)  # fmt: skip


class TaskInfo:
    """One pod: its request, status, node and the attributes plugins read."""

    __slots__ = _TASK_FIELDS

    def __init__(
        self,
        uid: str = "",
        name: str = "",
        namespace: str = "",
        job: str = "",
        resreq: Resource | None = None,
        *,
        status: TaskStatus = PENDING,
        node_name: str = "",
        priority: int = 1,
        preemptable: bool = True,
        role: str = "",
        preemption_policy: str = "",
        creation: float = 0.0,
        nominated_node: str = "",
        pod: "Pod | None" = None,
        critical: bool = False,
        duration: float | None = None,
    ) -> None:
        self.uid, self.name, self.namespace, self.job = uid, name, namespace, job
        if resreq is None:
            resreq = Resource()
        self.resreq = resreq
        self.init_resreq = resreq
        self.status = status
        self.node_name = node_name
        self.priority = priority
        self.preemptable = preemptable
        self.role = role
        self.preemption_policy = preemption_policy
        self.creation = creation
        self.nominated_node = nominated_node
        self.pod = pod
        self.best_effort = resreq.is_empty()
        self.eviction_occurred = False
        self.index = _pod_index(name)
        self.critical = critical
        self.duration = duration
        self._request_id = -1  # resources.request_id of the request, once asked (request_id())
        self._key = ""  # namespace/name, once asked (key)
        self._placement: Placement | None = None  # the pod's, once asked (placement())

    @property
    def key(self) -> str:
        """``namespace/name``, made once (a task's name never changes; notes ask it for every
        waiting task of a backlog, every cycle)."""
        found = self._key
        if not found:
            found = self._key = f"{self.namespace}/{self.name}"
        return found

    def clone(self) -> "TaskInfo":
        """A shallow copy (requests and the pod are shared: a session never changes them)."""
        # the class called with arguments: compiled, a direct native call (``__new__`` is a generic
        # one, then the constructor with its defaults); the fields it works out are set below
        twin = TaskInfo(self.uid, "", "", "", self.resreq)
        twin.uid, twin.name, twin.namespace, twin.job = self.uid, self.name, self.namespace, self.job
        twin.role, twin.pod, twin.resreq, twin.init_resreq = self.role, self.pod, self.resreq, self.init_resreq
        twin.node_name, twin.status, twin.priority, twin.preemptable = self.node_name, self.status, self.priority, self.preemptable
        twin.best_effort, twin.preemption_policy, twin.creation = self.best_effort, self.preemption_policy, self.creation
        twin.nominated_node, twin.eviction_occurred, twin.index = self.nominated_node, self.eviction_occurred, self.index
        twin.critical, twin.duration, twin._request_id, twin._key = self.critical, self.duration, self._request_id, self._key
        twin._placement = self._placement
        return twin

    def __getstate__(self) -> dict[str, Any]:
        state = {name: getattr(self, name) for name in _TASK_FIELDS}
        state["_request_id"] = -1  # numbers are the process's own: worked out again where unpickled
        state["_placement"] = None  # worked out again from the pod
        return state

    def __setstate__(self, state: Any) -> None:
        """Also a task pickled by an older version (slots as ``(None, fields)``, fewer fields)."""
        if isinstance(state, tuple):
            state = state[1]
        self._request_id, self._key, self._placement = -1, "", None
        for name, value in state.items():
            setattr(self, name, value)

    def placement(self) -> Placement:
        """The pod's node selector and tolerations (``Placement``), read once per pod object."""
        found = self._placement
        if found is None or found.pod is not self.pod:
            found = self._placement = Placement(self.pod)
        return found

    def request_id(self) -> int:
        """``resources.request_id`` of the task's request (which never changes), worked out once."""
        found = self._request_id
        if found < 0:
            found = self._request_id = request_id(self.resreq)
        return found

    def __repr__(self) -> str:
        return f"Task({self.key}, {self.status.label}, node={self.node_name or '-'})"


def _pod_index(name: str) -> int | None:
    """The replica index in ``<job>-<task>-<index>`` pod names (Volcano's ``GetPodIndexUnderTask``)."""
    parts = name.split("-")
    if len(parts) < 3:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


class JobInfo:
    """One podgroup and its tasks, with the counters the gang rules read."""

    # also a class default: a job pickled before there were facts reads None (bench/checkpoint.py)
    facts: "JobFacts | None" = None
    # a cache job's copy in the last snapshot that took it, with the ``changes`` of both then
    # (``ClusterState.snapshot`` takes the copy back while neither changed); class defaults too
    twin: "JobInfo | None" = None
    changes_handed: int = -1
    twin_changes_handed: int = -1
    # what proportion adds to its queue's totals for this job and for a look-alike of it (None:
    # not worked out), with the ``changes`` and phase they were worked out at
    # (``ProportionPlugin._add_parts``); class defaults too, as ``facts``
    part: object = None
    part_alike: object = None
    part_changes: int = -1
    part_phase: str = ""
    # a session copy set aside as a look-alike (``lahar.scheduler.lookalikes``): the uid of the
    # first job of its kind, which the actions look at in its place; "" when it is not set aside
    # (every snapshot hands a copy on with ""); a class default too, as ``facts``
    hidden_behind: str = ""
    # the kind of look-alike waiting job it was described as and that table's generation
    # (``lahar.scheduler.lookalikes``; kind None: not one), kept past the facts its tasks'
    # moves made stale, and handed to the next copy while the cache job stands: a kind reads
    # the job's queue, priority, podgroup and pods, which no session changes; a class default
    # too, as ``facts``
    described: "tuple[Any, int] | None" = None
    # the number the cache's queue names had (``ClusterState.queue_names``, a new one whenever
    # a name comes or goes) when the snapshot last found this job's queue among them: while
    # that number stands, the job's queue still exists (its queue never changes: a job with
    # another queue is a new object); a class default too, as ``facts``
    queue_seen: int = -1
    # a session copy's outcome in the last cycle that closed over it and that cycle's map of
    # outcomes (``cycle._close``): a cycle given that very map as ``previous`` reads the job's
    # last outcome here instead of looking it up by key (no one changes a result's map); the
    # map stays alive while a copy points at it, the one a copy's next cycle replaces; class
    # defaults too, as ``facts``
    last_outcome: "JobOutcome | None" = None
    last_outcomes: "dict[str, JobOutcome] | None" = None

    def __init__(
        self,
        uid: str = "",
        name: str = "",
        namespace: str = "",
        queue: str = "",
        *,
        min_available: int = 0,
        task_min_available: dict[str, int] | None = None,
        priority: int = 0,
        creation: float = 0.0,
        podgroup: "PodGroup | None" = None,
        min_resources: Resource | None = None,
        preemptable: bool = False,
    ) -> None:
        # the queue's name interned, as the queue's own is (``QueueInfo``): every pass over the
        # jobs looks each one's queue up, in maps and sets keyed by the queue's name, and the
        # same object is told at once (a name read from each podgroup is a text of its own)
        self.uid, self.name, self.namespace, self.queue = uid, name, namespace, sys.intern(queue)
        self.min_available = min_available
        self.task_min_available = dict(task_min_available or {})
        self.task_min_available_total = sum(self.task_min_available.values())
        self.priority = priority
        self.creation = creation
        self.podgroup = podgroup
        # interned, as the literals every pass compares it with are: then one identity check
        self.phase: str = sys.intern((podgroup.status.phase if podgroup is not None else "") or "")
        self._read_podgroup_spec()
        self.min_resources = min_resources
        self.preemptable = preemptable
        self.tasks: dict[str, TaskInfo] = {}
        self.best_effort_tasks = False  # whether any task ever added asks for nothing
        self.status_index: dict[TaskStatus, dict[str, TaskInfo]] = {}
        self._ready = 0  # tasks in a ready status (_READY), kept with status_index: job order asks often
        self.changes = 0  # bumped by every change to tasks, status_index, allocated or total_request
        self.allocated = Resource()
        self.total_request = Resource()
        self.fit_errors: dict[str, FitErrors] = {}
        self.job_fit_errors = ""
        self.conditions: list[dict[str, Any]] = []
        self.reason: dict[str, Any] | None = None  # Lahar: structured why-pending, set at close
        # a session's answers about this job that read only its tasks (``Session.job_facts``),
        # kept with the ``changes`` they were worked out at: a copy taken back by the next
        # snapshot keeps them while its tasks stand
        self.facts: JobFacts | None = None
        self.part: object = None
        self.part_alike: object = None
        self.part_changes = -1
        self.part_phase = ""
        self.hidden_behind = ""
        self.described: tuple[Any, int] | None = None

    def _read_podgroup_spec(self) -> None:
        """The podgroup's minMember and the names its minResources lists, read once: every cycle
        asks them of every job, and by then the podgroup is an object far away in memory."""
        podgroup = self.podgroup
        self.min_member = podgroup.spec.min_member if podgroup is not None else self.min_available
        listed = podgroup.spec.min_resources if podgroup is not None else None
        self.min_resource_names: tuple[str, ...] | None = tuple(listed) if listed is not None else None

    # ----------------------------------------------------------------- membership

    def add_task(self, task: TaskInfo) -> None:
        self.changes += 1
        if task.best_effort:
            self.best_effort_tasks = True
        self.tasks[task.uid] = task
        self.status_index.setdefault(task.status, {})[task.uid] = task
        if task.status in _READY_SET:
            self._ready += 1
        self.total_request.add(task.resreq)
        if allocated_status(task.status):
            self.allocated.add(task.resreq)

    def delete_task(self, task: TaskInfo) -> None:
        known = self.tasks.pop(task.uid, None)
        if known is None:
            return
        self.changes += 1
        if known.status in _READY_SET:
            self._ready -= 1
        self.total_request.sub(known.resreq)
        if allocated_status(known.status):
            self.allocated.sub(known.resreq)
        bucket = self.status_index.get(known.status)
        if bucket is not None:
            bucket.pop(known.uid, None)
            if not bucket:
                del self.status_index[known.status]

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Re-index ``task`` under ``status`` (Volcano's ``UpdateTaskStatus``)."""
        old = self.tasks.get(task.uid)
        if old is not None:
            self._unindex(old, old.status)
        task.status = status
        self.add_task(task)

    def _unindex(self, task: TaskInfo, status: TaskStatus) -> None:
        del self.tasks[task.uid]
        if status in _READY_SET:
            self._ready -= 1
        self.total_request.sub(task.resreq)
        if allocated_status(status):
            self.allocated.sub(task.resreq)
        bucket = self.status_index.get(status)
        if bucket is not None:
            bucket.pop(task.uid, None)
            if not bucket:
                del self.status_index[status]

    def tasks_in(self, *statuses: TaskStatus) -> list[TaskInfo]:
        index = self.status_index
        if len(statuses) == 1:  # every caller in the scheduler, for every job, several times a cycle
            bucket = index.get(statuses[0])
            return list(bucket.values()) if bucket else []
        out: list[TaskInfo] = []
        for status in statuses:
            bucket = index.get(status)
            if bucket:
                out.extend(bucket.values())
        return out

    def count(self, status: TaskStatus) -> int:
        return len(self.status_index.get(status, ()))

    # ----------------------------------------------------------------- gang counters

    def ready_task_num(self) -> int:
        return self._ready

    def waiting_task_num(self) -> int:
        return self.count(PIPELINED)

    def pending_best_effort_task_num(self) -> int:
        pending = self.status_index.get(PENDING)
        if not pending or not self.best_effort_tasks:
            return 0
        return sum(1 for t in pending.values() if t.best_effort)

    def valid_task_num(self) -> int:
        """Tasks in a valid status: all but the few in the three statuses that are not (gang's
        job_valid asks for every job in several actions each cycle)."""
        index = self.status_index
        invalid = 0
        for status in _NOT_VALID:
            bucket = index.get(status)
            if bucket:
                invalid += len(bucket)
        return len(self.tasks) - invalid

    def is_ready(self) -> bool:
        if self._ready >= self.min_available:  # job order asks in every heap comparison
            return True
        if not self.best_effort_tasks:  # no task asks for nothing: none can count as ready
            return False
        return self._ready + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        # each pass of a cycle asks every job. A running job's phase is mostly the very text
        # ``_RUNNING_PHASE`` (interned when a job is made, and the literal a session sets), told
        # by one look at the object; any other text is compared ("Running" and "Pending" have
        # the same length: a full compare)
        if self.podgroup is None:
            return True
        phase = self.phase
        return phase is not _RUNNING_PHASE and (not phase or phase == "Pending")

    # ----------------------------------------------------------------- per-role minimums

    def _role_counts(self, include: Iterable[TaskStatus], empty_pending: bool) -> dict[str, int]:
        wanted = set(include)
        counts: dict[str, int] = {}
        for status, tasks in self.status_index.items():
            for task in tasks.values():
                counted = status in wanted or (
                    empty_pending and status is PENDING and task.init_resreq.is_empty()
                )
                if counted:
                    counts[task.role] = counts.get(task.role, 0) + 1
        return counts

    def _roles_meet(self, counts: dict[str, int]) -> bool:
        return all(counts.get(role, 0) >= minimum for role, minimum in self.task_min_available.items() if minimum)

    def check_task_valid(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        valid = {*_ALLOCATED, SUCCEEDED, PIPELINED, PENDING}
        return self._roles_meet(self._role_counts(valid, False))

    def allocated_roles(self) -> dict[str, int]:
        return self._role_counts({*_ALLOCATED, SUCCEEDED}, True)

    def check_task_ready(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet(self.allocated_roles())

    def check_task_pipelined(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet(self._role_counts({*_ALLOCATED, SUCCEEDED, PIPELINED}, True))

    def fit_failed_roles(self) -> set[str]:
        return {self.tasks[uid].role for uid in self.fit_errors if uid in self.tasks}

    def task_has_fit_errors(self, task: TaskInfo) -> bool:
        return bool(task.role) and task.role in self.fit_failed_roles()

    def need_continue_allocating(self) -> bool:
        """After a task found no node: may allocate keep trying this job's other tasks?"""
        if self.min_available == len(self.tasks):
            return False
        failed = self.fit_failed_roles()
        if self.min_available < self.task_min_available_total:
            pending: dict[str, int] = {}
            for task in self.status_index.get(PENDING, {}).values():
                pending[task.role] = pending.get(task.role, 0) + 1
            left = sum(count for role, count in pending.items() if role not in failed)
            return self.ready_task_num() + left >= self.min_available
        allocated = self.allocated_roles()
        return all(
            allocated.get(role, 0) >= self.task_min_available.get(role, 0)
            for role in failed
            if self.task_min_available.get(role, 0)
        )

    # ----------------------------------------------------------------- resources

    def get_min_resources(self) -> Resource:
        return self.min_resources.clone() if self.min_resources is not None else Resource()

    def get_elastic_resources(self) -> Resource:
        """What the job holds above its minResources: per dimension ``max(allocated - min, 0)``."""
        if self.min_resources is None:
            allocated = self.allocated
            out = Resource(max(allocated.milli_cpu, 0.0), max(allocated.memory, 0.0), scalars={})
            out.scalars = {k: v for k, v in (allocated.scalars or {}).items() if v > 0}
            return out
        from lahar.resources import exceeded_part

        return exceeded_part(self.allocated, self.min_resources)

    def clone(self) -> "JobInfo":
        """A deep copy: every task cloned, indexes and sums copied rather than recomputed."""
        twin = JobInfo(self.uid)  # a direct native call compiled (see TaskInfo.clone); every other field is set below
        twin.name, twin.namespace, twin.queue = self.name, self.namespace, self.queue
        twin.min_available, twin.task_min_available_total = self.min_available, self.task_min_available_total
        twin.priority, twin.creation, twin.podgroup, twin.phase = self.priority, self.creation, self.podgroup, self.phase
        twin.min_member, twin.min_resource_names = self.min_member, self.min_resource_names
        twin.min_resources, twin.preemptable, twin.best_effort_tasks = self.min_resources, self.preemptable, self.best_effort_tasks
        twin._ready, twin.changes, twin.job_fit_errors, twin.reason = self._ready, self.changes, self.job_fit_errors, self.reason
        twin.facts = None  # facts hold this job's own tasks: the clone works out its own (and its part)
        twin.task_min_available = dict(self.task_min_available)
        twin.tasks = {uid: task.clone() for uid, task in self.tasks.items()}
        twin.status_index = {s: {uid: twin.tasks[uid] for uid in bucket} for s, bucket in self.status_index.items()}
        twin.allocated, twin.total_request = self.allocated.clone(), self.total_request.clone()
        twin.fit_errors, twin.conditions = {}, [dict(c) for c in self.conditions]
        return twin

    def refresh(self, twin: "JobInfo") -> "JobInfo":
        """``twin``, an earlier ``clone()`` of this job, made equal to a fresh clone again. Only
        valid while neither job changed its tasks since the clone (``changes`` on both sides
        tells). Its own tasks and sums are kept; the fields a session writes besides them
        (phase, conditions, fit errors, reason) are read from this job again, and it is no
        longer set aside behind a look-alike (``hidden_behind``). Nothing else can
        differ: this job's other fields never change (the cache replaces a job whose podgroup
        changed), and a session writes no other field of its copies
        (``tests/property/test_snapshot_reuse.py`` compares every field with a fresh clone's)
        but those that hold what it worked out from the copy's own tasks, each with the
        ``changes`` it was worked out at (``facts``; ``part``, with the phase too)."""
        twin.phase, twin.job_fit_errors, twin.reason = self.phase, self.job_fit_errors, self.reason
        # an empty map is kept as it is (the usual case in a backlog): no one fills one in place
        # that a session handed on, and whoever holds the copy holds this very session's copy
        # anyway; no conditions are the one empty list ``NO_CONDITIONS`` (no one changes a list
        # of conditions in place: ``set_condition`` makes a new one)
        if twin.fit_errors:
            twin.fit_errors = {}
        if twin.hidden_behind:
            twin.hidden_behind = ""
        twin.conditions = [dict(c) for c in self.conditions] if self.conditions else NO_CONDITIONS
        return twin

    def set_condition(self, condition: dict[str, Any]) -> None:
        """Put ``condition`` in place of the job's condition of its type (after its others), in
        a new list: a list of conditions may be shared (``refresh``; a look-alike's outcome)
        and is never changed in place."""
        if not self.conditions:  # the usual case: a session copy starts with none
            self.conditions = [condition]
            return
        kind = condition.get("type")
        self.conditions = [c for c in self.conditions if c.get("type") != kind]
        self.conditions.append(condition)

    def __repr__(self) -> str:
        return f"Job({self.uid}, queue={self.queue}, phase={self.phase}, min={self.min_available})"


class NodeInfo:
    """One node's allocatable, idle, used, releasing and pipelined resources and its tasks."""

    # a session copy holding a clone of a task whose job is not in its session (``clone_with``);
    # a class default, so that a node pickled before it reads False (bench/checkpoint.py)
    foreign: bool = False

    def __init__(
        self,
        name: str = "",
        allocatable: Resource | None = None,
        *,
        capacity: Resource | None = None,
        labels: dict[str, str] | None = None,
        unschedulable: bool = False,
        taints: list[dict] | None = None,
        ready: bool = True,
    ) -> None:
        if allocatable is None:
            allocatable = Resource()
        self.name = name
        self.allocatable = allocatable
        self.capacity = capacity if capacity is not None else allocatable.clone()
        self.idle = allocatable.clone()
        self.used = Resource()
        self.releasing = Resource()
        self.pipelined = Resource()
        self.labels = dict(labels or {})
        self.unschedulable = unschedulable
        self.taints = list(taints or [])
        self.ready = ready
        self.max_task_num: float = float(allocatable.max_task_num)  # a count; infinite while predicates look past it
        self.index: NodeIndex | None = None  # a columnar index mirroring this node, when a session built one
        self.version = 0  # bumped on every task added or removed
        self.tasks: dict[str, TaskInfo] = {}
        self._accounted: dict[str, TaskStatus] = {}
        # a session copy's node (``clone_with``) and that node's ``version`` then: the copy's
        # figures are the node's while that version stands
        self.source: NodeInfo | None = None
        self.source_version = -1
        # (version, scalar columns, rows): this node's rows in a node index with those columns
        # at that version (``columnar.node_rows``; the rows are never changed in place)
        self.rows_kept: tuple[int, tuple[str, ...], tuple[list[float], ...]] | None = None

    def future_idle(self) -> Resource:
        """Idle + Releasing - Pipelined: what will be free once evictions finish."""
        return self.idle.clone().add(self.releasing).sub(self.pipelined)

    def add_task(self, task: TaskInfo) -> None:
        key = task.key
        if key in self.tasks:
            raise ValueError(f"task <{key}> already on node <{self.name}>")
        status = task.status
        if status is RELEASING:
            self.idle.sub(task.resreq)
            self.releasing.add(task.resreq)
            self.used.add(task.resreq)
        elif status is PIPELINED:
            self.pipelined.add(task.resreq)
        else:
            self.idle.sub(task.resreq)
            self.used.add(task.resreq)
        task.node_name = self.name
        self.tasks[key] = task
        self._accounted[key] = status
        self.version += 1
        if self.index is not None:
            self.index.refresh(self)

    def remove_task(self, task: TaskInfo) -> None:
        key = task.key
        status = self._accounted.pop(key, None)
        if status is None:
            return
        if status is RELEASING:
            self.releasing.sub(task.resreq)
            self.idle.add(task.resreq)
            self.used.sub(task.resreq)
        elif status is PIPELINED:
            self.pipelined.sub(task.resreq)
        else:
            self.idle.add(task.resreq)
            self.used.sub(task.resreq)
        del self.tasks[key]
        self.version += 1
        if self.index is not None:
            self.index.refresh(self)

    def update_task(self, task: TaskInfo) -> None:
        self.remove_task(task)
        self.add_task(task)

    def pod_count(self) -> int:
        return len(self.tasks)

    def clone_with(self, jobs: dict[str, "JobInfo"]) -> "NodeInfo":
        """A copy whose task entries are the tasks of the given job copies (by job, then task
        uid; a task of another job is cloned), accounting copied as is. Looked up there, not in
        a map of every task on a node made for it: one entry less per task every cycle."""
        twin = self.clone_empty()
        twin.idle, twin.used = self.idle.clone(), self.used.clone()
        twin.releasing, twin.pipelined = self.releasing.clone(), self.pipelined.clone()
        own = twin.tasks = dict(self.tasks)  # the keys in order at once, each value then replaced
        for key, task in self.tasks.items():
            owner = jobs.get(task.job)
            copy = owner.tasks.get(task.uid) if owner is not None else None
            if copy is None:
                copy = task.clone()
                twin.foreign = True
            own[key] = copy
        twin._accounted = dict(self._accounted)
        twin.source, twin.source_version = self, self.version
        return twin

    def clone_empty(self) -> "NodeInfo":
        """The same node with none of its tasks (a session re-adds its own clones)."""
        return NodeInfo(
            self.name,
            self.allocatable,
            capacity=self.capacity,
            labels=self.labels,
            unschedulable=self.unschedulable,
            taints=self.taints,
            ready=self.ready,
        )

    def __repr__(self) -> str:
        return f"Node({self.name}, idle=<{self.idle}>)"


class QueueInfo:
    """One queue as the scheduler reads it."""

    def __init__(self, queue: "Queue", creation: float = 0.0) -> None:
        self.uid = self.name = sys.intern(queue.name)  # as its jobs' queue names: see ``JobInfo``
        self.queue = queue
        self.weight = queue.spec.weight
        self.priority = queue.spec.priority or 0
        self.parent = queue.parent_name
        self.creation = creation
        self.state = queue.state
        # read once: a property of the queue object, which is replaced, never changed in place
        # (reclaim and preempt ask it for each task they look at on each node)
        self._reclaimable = queue.reclaimable

    def __reduce__(self) -> tuple:
        """Pickled as the queue object it reads (a compiled build makes no object without it)."""
        return (QueueInfo, (self.queue, self.creation))

    def reclaimable(self) -> bool:
        return self._reclaimable

    def is_open(self) -> bool:
        return self.state == "Open"

    def __repr__(self) -> str:
        return f"Queue({self.name}, {self.state})"
