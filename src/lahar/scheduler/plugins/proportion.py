"""proportion: weight-based fair shares by water-filling, and the queue gates built on them.

Reference section 4.1. Queues that hold at least one job share the cluster by weight; a queue
never deserves more than it requests or its capability, and what it does not need is shared
again among the others. Allocation is capped at the deserved share; a queue at or above it in
every dimension is *overused* and skipped; only queues above their deserved share give up
victims to reclaim.

Lahar arguments (absent from Volcano, off unless set):
- ``schedulableStates``: queue states that may be admitted and allocated (default ``[Open]``).
"""

from __future__ import annotations

from typing import Final

from lahar.resources import Dim, Resource, exceeded_part, res_max
from lahar.scheduler.api import JobInfo, QueueInfo, TaskInfo
from lahar.scheduler.framework.session import EventHandler, PERMIT, REJECT, Session
from lahar.scheduler.plugins.base import Plugin
from lahar.scheduler.plugins.queueattr import (
    JobPart,
    PartTally,
    QueueAttr,
    add_job,
    add_lookalikes,
    add_parts,
    admits,
    capability_of,
    exact_totals,
    interned,
    job_bound,
    job_part,
    lookalike_part,
    part_current,
    schedulable_states,
    update_share,
)


class ProportionPlugin(Plugin):
    name = "proportion"
    reads_clock = False
    queue_answers_read_requests = True

    def on_session_open(self, ssn: Session) -> None:
        self.states = schedulable_states(self.arguments)
        self.attrs: dict[str, QueueAttr] = {}
        total = ssn.total_resource.clone()
        total_guarantee = Resource()
        for queue in ssn.queues.values():
            if queue.queue.guarantee_list:
                total_guarantee.add(Resource.from_list(queue.queue.guarantee_list))
        counts = ssn.hidden_counts  # look-alikes set aside before the plugins opened, by first job
        if not self._add_parts(ssn, total, total_guarantee):
            self.attrs = {}
            for job in ssn.listed_jobs():
                attr = self.attrs.get(job.queue)
                if attr is None:
                    attr = self.attrs[job.queue] = _new_attr(ssn.queues[job.queue], total, total_guarantee)
                add_job(attr, job)
                if counts:
                    count = counts.get(job.uid)
                    if count:
                        add_lookalikes(attr, job, count)
        if counts and not all(exact_totals(attr) for attr in self.attrs.values()):
            ssn.hidden_inexact = True
        _water_fill(list(self.attrs.values()), total)
        ssn.queue_attrs = self.attrs  # type: ignore[attr-defined]
        # Allocatable's answers per queue and task request, while the queue's allocation stands
        # (cleared by the allocate and deallocate events): a backlog asks alike many times.
        self._answers: dict[str, dict[int, bool]] = {}  # by request_id
        self._register(ssn)

    def _add_parts(self, ssn: Session, total: Resource, total_guarantee: Resource) -> bool:
        """The jobs added to their queues' totals by equal parts (``queueattr.add_parts``): the
        totals of the loop over ``add_job`` above, for a cost per job of a look at its part,
        which stands while its tasks and phase do (the rest of what ``add_job`` reads is fixed
        with the podgroup) and is kept on the job, so a copy the next snapshot takes back keeps
        it. A job first seen (in its present state) is added by ``add_job`` in its place; its
        part is made, and joins the equal ones (``interned``), when a later cycle finds the job
        unchanged. Jobs in a row with one part in one queue are counted together. False when
        some value is not a whole number at or above zero, or some sum could reach 2**53."""
        counts = ssn.hidden_counts
        tally = PartTally()
        for job in ssn.listed_jobs():
            entry, weight = self._entry(job)
            if weight < 0.0:
                return False
            if tally.count(job.queue, entry, weight):
                self.attrs[job.queue] = _new_attr(ssn.queues[job.queue], total, total_guarantee)
            count = counts.get(job.uid) if counts else None
            if count:
                if job.part_alike is None:
                    job.part_alike = lookalike_part(job) or False
                alike = job.part_alike
                if not isinstance(alike, JobPart):
                    return False
                tally.count_more(alike, count, alike.largest)
        tally.end_run()
        return all(add_parts(self.attrs[name], found, tally.bounds[name]) for name, found in tally.groups.items())

    @staticmethod
    def _entry(job: JobInfo) -> tuple[object, float]:
        """What stands for ``job`` in its queue's parts: its part, or the job itself when first
        seen; with a bound on the values it adds (-1: not whole numbers at or above zero)."""
        if not part_current(job):
            job.part, job.part_alike = None, None
            job.part_changes, job.part_phase = job.changes, job.phase
            return job, job_bound(job)
        part = job.part
        if part is None:
            made = job_part(job)
            part = job.part = interned(made) if made is not None else False
        if isinstance(part, JobPart):
            return part, part.largest
        return None, -1.0

    def _register(self, ssn: Session) -> None:
        attrs = self.attrs
        ssn.add("queue_order", self.name, self._queue_order)
        ssn.add("reclaimable", self.name, self._reclaimable(ssn))
        ssn.add("overused", self.name, lambda q: attrs[q.uid].deserved.less_equal(attrs[q.uid].allocated, Dim.ZERO))
        ssn.add("allocatable", self.name, self._allocatable_task)
        ssn.add("preemptive", self.name, self._allocatable)
        ssn.add("job_enqueueable", self.name, self._enqueueable(ssn))
        ssn.add("job_enqueued", self.name, self._enqueued)
        ssn.add("deserved", self.name, lambda q: attrs[q.uid].deserved if q.uid in attrs else None)
        ssn.add_event_handler(EventHandler(self._on_allocate(ssn, 1), self._on_allocate(ssn, -1)))

    def _queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        ls, rs = self.attrs[left.uid].share, self.attrs[right.uid].share
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def _reclaimable(self, ssn: Session):
        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]):
            """A queue at or below its share gives nothing (its allocation only falls here), so
            only a queue above it gets a working copy of its allocation to count down."""
            victims: list[TaskInfo] = []
            allocations: dict[str, Resource | None] = {}
            for task in reclaimees:
                job = ssn.jobs.get(task.job)
                attr = self.attrs.get(job.queue) if job is not None else None
                if job is None or attr is None:
                    continue
                if job.queue in allocations:
                    allocated = allocations[job.queue]
                elif attr.allocated.less_equal(attr.deserved, Dim.ZERO):
                    allocated = allocations[job.queue] = None
                else:
                    allocated = allocations[job.queue] = attr.allocated.clone()
                if allocated is not None and not allocated.less_equal(attr.deserved, Dim.ZERO):
                    allocated.sub(task.resreq)
                    victims.append(task)
            return victims, PERMIT

        return reclaimable

    def _allocatable_task(self, queue: QueueInfo, task: TaskInfo) -> bool:
        key = task.request_id()
        answers = self._answers.setdefault(queue.uid, {})
        answer = answers.get(key)
        if answer is None:
            answer = answers[key] = self._within_deserved(queue, task.resreq)
        return answer

    def _allocatable(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        if len(tasks) == 1:  # the sum of one request is that request: Allocatable's memoised answer
            return self._allocatable_task(queue, tasks[0])
        total = Resource()
        for task in tasks:
            total.add(task.resreq)
        return self._within_deserved(queue, total)

    def _within_deserved(self, queue: QueueInfo, request: Resource) -> bool:
        if queue.state not in self.states:
            return False
        attr = self.attrs[queue.uid]
        future = attr.allocated.clone().add(request)
        return future.less_equal_with_dimension_and_resources_name(attr.deserved, request)[0]

    def _enqueueable(self, ssn: Session):
        def enqueueable(job: JobInfo) -> int:
            attr = self.attrs[job.queue]
            queue = ssn.queues[job.queue]
            if queue.state not in self.states:
                ssn.note(job.uid, kind="queue-state", queue=queue.name, state=queue.state)
                return REJECT
            if job.min_resources is None:
                return PERMIT
            minimum = job.get_min_resources()
            ok, names = admits(attr, minimum)
            if ok:
                return PERMIT
            ssn.note(job.uid, kind="queue-quota", queue=queue.name, resources=names, plugin=self.name)
            return REJECT

        return enqueueable

    def _enqueued(self, job: JobInfo) -> None:
        if job.min_resources is None:
            return
        attr = self.attrs.get(job.queue)
        if attr is not None:
            attr.inqueue.add(job.get_min_resources())

    def _on_allocate(self, ssn: Session, sign: int):
        def handler(task: TaskInfo) -> None:
            job = ssn.jobs.get(task.job)
            attr = self.attrs.get(job.queue) if job is not None else None
            if job is None or attr is None:
                return
            if sign > 0:
                attr.allocated.add(task.resreq)
            else:
                attr.allocated.sub(task.resreq)
            update_share(attr)
            self._answers.pop(job.queue, None)

        return handler


def _new_attr(queue: QueueInfo, total: Resource, total_guarantee: Resource) -> QueueAttr:
    attr = QueueAttr(name=queue.name, weight=queue.weight)
    attr.capability = capability_of(queue.queue.spec.capability)
    if queue.queue.guarantee_list:
        attr.guarantee = Resource.from_list(queue.queue.guarantee_list)
    real = exceeded_part(total, total_guarantee).add(attr.guarantee)
    if attr.capability is not None:
        real.min_dimension_resource(attr.capability, Dim.INFINITY)
    else:
        attr.capability = Resource()
    attr.real_capability = real
    return attr


class _Filled:
    """A water fill: what it read (the total, and each queue's name, weight, capability,
    request and guarantee, in order) and each queue's deserved share it gave."""

    __slots__ = ("total", "inputs", "deserved")

    def __init__(self, total: Resource, inputs: list[tuple[str, int, Resource | None, Resource, Resource]], deserved: list[Resource]) -> None:
        self.total, self.inputs, self.deserved = total, inputs, deserved


# The last water fill of this process (one slot, replaced whole: sessions in other threads
# read it as a whole). Most sessions of a replay or a server open on the queues' requests of
# the session before, and a fill is a pure function of what it reads.
_LAST_FILL: Final[list[_Filled | None]] = [None]


def _water_fill(attrs: list[QueueAttr], total: Resource) -> None:
    """Each queue's deserved share (``_fill``). When the last fill read the same values (each
    equal, ``max_task_num`` included) on queues that deserved nothing yet, its shares are copied
    instead of worked out again."""
    fresh = all(_untouched(attr.deserved) for attr in attrs)
    last = _LAST_FILL[0]
    if fresh and last is not None and _same_fill(last, attrs, total):
        for attr, deserved in zip(attrs, last.deserved):
            attr.deserved = deserved.clone()
            update_share(attr)
        return
    _fill(attrs, total)  # changes each queue's deserved share and share alone
    if fresh:
        inputs = [(a.name, a.weight, _copy(a.real_capability), a.request.clone(), a.guarantee.clone()) for a in attrs]
        _LAST_FILL[0] = _Filled(total.clone(), inputs, [attr.deserved.clone() for attr in attrs])


def _same_fill(last: _Filled, attrs: list[QueueAttr], total: Resource) -> bool:
    if len(last.inputs) != len(attrs) or not _same(last.total, total):
        return False
    for attr, (name, weight, capability, request, guarantee) in zip(attrs, last.inputs):
        if attr.name != name or attr.weight != weight:
            return False
        if not (_same(attr.request, request) and _same(attr.guarantee, guarantee)):
            return False
        real = attr.real_capability
        if real is None or capability is None:
            if real is not capability:
                return False
        elif not _same(real, capability):
            return False
    return True


def _untouched(res: Resource) -> bool:
    """Whether ``res`` is as ``Resource()`` makes it."""
    return res.milli_cpu == 0.0 and res.memory == 0.0 and res.scalars is None and res.max_task_num == 0


def _same(left: Resource, right: Resource) -> bool:
    return left == right and left.max_task_num == right.max_task_num


def _copy(res: Resource | None) -> Resource | None:
    return res.clone() if res is not None else None


def _fill(attrs: list[QueueAttr], total: Resource) -> None:
    """Deserved shares by weight, iterated until nothing is left or nobody can take more."""
    remaining = total.clone()
    met: set[str] = set()
    while True:
        total_weight = sum(a.weight for a in attrs if a.name not in met)
        if total_weight == 0:
            break
        old_remaining = remaining.clone()
        increased, decreased = Resource(), Resource()
        for attr in attrs:
            if attr.name in met:
                continue
            old = attr.deserved.clone()
            attr.deserved.add(remaining.clone().multi(attr.weight / total_weight))
            if attr.real_capability is not None:
                attr.deserved.min_dimension_resource(attr.real_capability, Dim.INFINITY)
            attr.deserved.min_dimension_resource(attr.request, Dim.ZERO)
            attr.deserved = res_max(attr.deserved, attr.guarantee)
            update_share(attr)
            if attr.request.less_equal(attr.deserved, Dim.ZERO) or attr.deserved == old:
                met.add(attr.name)
            inc, dec = attr.deserved.diff(old, Dim.ZERO)
            increased.add(inc)
            decreased.add(dec)
        remaining = exceeded_part(remaining.clone().add(decreased), increased)
        if remaining.is_empty() or remaining == old_remaining:
            break
