"""Per-queue accounting shared by proportion and capacity: allocated, request, inqueue, elastic.

Both plugins read a session the same way (reference 4.1.1): ``allocated`` sums the requests of
tasks in an allocated status, ``request`` adds the pending tasks, ``inqueue`` reserves the
not-yet-allocated part of admitted jobs' ``minResources``, ``elastic`` is what jobs hold above
their ``minResources``. The states in which a queue may be scheduled are an argument: Volcano
schedules only Open queues; Lahar's default also lets Closing and Unknown queues drain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from lahar.resources import EXACT_SUMS_BELOW, MAX_FLOAT, MIN_RESOURCE, Dim, Resource, share
from lahar.scheduler.api import PENDING, SUCCEEDED, JobInfo
from lahar.scheduler.framework.config import Arguments

__all__ = [
    "JobPart",
    "PartTally",
    "QueueAttr",
    "add_inqueue",
    "add_job",
    "add_lookalikes",
    "add_parts",
    "admits",
    "allocations_by_parts",
    "exact_totals",
    "interned",
    "job_bound",
    "job_part",
    "lookalike_part",
    "lookalikes_room",
    "part_current",
    "schedulable_states",
    "standing_part",
    "update_share",
]

_INFINITE: Final = float(Dim.INFINITY)  # a scalar that reads as unlimited (Volcano's -1), as a float


@dataclass(init=False)  # its own __init__: compiled, the generated one is plain Python (cycle.JobOutcome)
class QueueAttr:
    name: str
    weight: int
    share: float
    deserved: Resource
    allocated: Resource
    request: Resource
    elastic: Resource
    inqueue: Resource
    capability: Resource | None
    real_capability: Resource | None
    guarantee: Resource
    # capacity hierarchy
    parent: str | None
    ancestors: list[str]
    children: list[str]

    def __init__(self, name: str = "", weight: int = 1, deserved: Resource | None = None) -> None:
        """A queue's attributes at session open; every other one starts empty (None, zero or []).
        Every argument has a default: compiled, unpickling (bench/checkpoint.py) calls it with none."""
        self.name, self.weight, self.share = name, weight, 0.0
        self.deserved = deserved if deserved is not None else Resource()
        self.allocated, self.request, self.elastic, self.inqueue = Resource(), Resource(), Resource(), Resource()
        self.capability = self.real_capability = None
        self.guarantee = Resource()
        self.parent = None
        self.ancestors, self.children = [], []


def capability_of(spec_capability: dict | None) -> Resource | None:
    """``spec.capability`` with cpu or memory <= 0 read as unlimited; None when unset."""
    if not spec_capability:
        return None
    cap = Resource.from_list(spec_capability)
    if cap.milli_cpu <= 0:
        cap.milli_cpu = MAX_FLOAT
    if cap.memory <= 0:
        cap.memory = MAX_FLOAT
    return cap


def add_job(attr: QueueAttr, job: JobInfo) -> None:
    """Add one job's tasks and reservations to its queue's accounting."""
    _add_job_to(attr.allocated, attr.request, attr.inqueue, attr.elastic, job)


def _add_job_to(allocated: Resource, request: Resource, inqueue: Resource, elastic: Resource, job: JobInfo) -> None:
    allocated.add_nonzero(job.allocated)  # JobInfo keeps it as the sum over its allocated tasks
    request.add_nonzero(job.allocated)
    waiting = job.status_index.get(PENDING)  # no empty dict made for each running job
    if waiting:
        for task in waiting.values():
            request.add(task.resreq)
    add_inqueue(inqueue, job)
    if job.min_resources is not None:
        _add_exceeded(elastic, job.allocated, job.min_resources)
    else:
        _add_positive(elastic, job.allocated)  # all it holds is elastic


# Look-alike waiting jobs (``lahar.scheduler.lookalikes``) counted as one: an admitted job with
# every task waiting and nothing held adds its pending requests to ``request`` and its
# ``minResources`` to ``inqueue`` (``add_job`` adds nothing else for it), so ``count`` more jobs
# alike add ``count`` times as much. The sum is the one ``add_job`` job by job would reach, in
# any order, while every value added is a whole number and every total stays below 2**53: the
# values a cycle adds come from quantities, rounded up to whole milli-units and bytes.


def _lookalike_part(job: JobInfo) -> tuple[Resource, Resource]:
    """What ``add_job`` adds to ``request`` and to ``inqueue`` for an admitted job whose tasks all wait."""
    request = Resource()
    for task in job.status_index.get(PENDING, {}).values():
        request.add(task.resreq)
    reserved = Resource()
    add_inqueue(reserved, job)
    return request, reserved


def lookalikes_room(job: JobInfo) -> int:
    """How many look-alikes of ``job`` ``add_lookalikes`` may count at once exactly: 0 when a
    value it adds is not a whole number at or above zero."""
    largest = 1.0
    for part in _lookalike_part(job):
        largest = _largest_of(part, largest)
    return int(EXACT_SUMS_BELOW / 2 // largest) if largest >= 0.0 else 0


def add_lookalikes(attr: QueueAttr, job: JobInfo, count: int) -> None:
    """Add ``count`` more jobs like ``job`` (admitted, every task waiting) to its queue, once."""
    request, reserved = _lookalike_part(job)
    attr.request.add(request.multi(count))
    attr.inqueue.add(reserved.multi(count))


# Jobs alike counted once. ``add_job`` adds to a queue's four totals only what it reads of the
# job itself (its tasks, phase and minResources): the same values and the same scalar keys in
# the same order whatever the totals hold (it inserts a key or makes a scalar map exactly when
# it would into empty totals). So a job's part, what ``add_job`` adds to empty totals, added
# ``count`` times for ``count`` jobs with equal parts, gives the totals ``add_job`` job by job
# gives, in job order, as long as every value is a whole number at or above zero and no sum
# reaches 2**53 in any order (``add_parts`` checks the bound): such sums are exact, whatever
# the order. Parts are interned, so equal parts are one object and a cycle counts jobs by it.
# A job first seen is added by ``add_job`` in its place (most jobs of a cold cycle are seen
# once: making a part costs more than adding the job); its part is made when a later cycle
# finds it unchanged.


class JobPart:
    """What ``add_job`` adds to empty totals for one job (``add_lookalikes``: for one look-alike)."""

    __slots__ = ("allocated", "request", "inqueue", "elastic", "largest")

    def __init__(self, allocated: Resource, request: Resource, inqueue: Resource, elastic: Resource, largest: float) -> None:
        self.allocated, self.request, self.inqueue, self.elastic = allocated, request, inqueue, elastic
        self.largest = largest  # the largest of its values (none is below zero)

    def __reduce__(self) -> tuple:
        """A pickled job's part is interned again when read back (bench/checkpoint.py)."""
        return (_part_again, (self.allocated, self.request, self.inqueue, self.elastic))


_PARTS: dict[tuple, JobPart] = {}
_PARTS_KEPT: Final = 4096  # distinct parts interned at most (then the table starts again)


def job_part(job: JobInfo) -> JobPart | None:
    """The job's part, not interned yet, or None when a value it is made of is not a whole
    number at or above zero (``job_bound``: values of both signs could cancel in the part)."""
    if job_bound(job) < 0.0:
        return None
    allocated, request, inqueue, elastic = Resource(), Resource(), Resource(), Resource()
    _add_job_to(allocated, request, inqueue, elastic, job)
    return _whole_part(allocated, request, inqueue, elastic)


def part_current(job: JobInfo) -> bool:
    """Whether the job's part (and look-alike part) was worked out for its present tasks and
    phase (``ProportionPlugin._entry`` stamps them); else it stands for an older state."""
    return job.part_changes == job.changes and job.part_phase == job.phase


def standing_part(job: JobInfo) -> JobPart | None:
    """The job's part when it was made for the job as it now is (its tasks and phase: see
    ``ProportionPlugin._entry``, which makes it), else None."""
    part = job.part
    if isinstance(part, JobPart) and part_current(job):
        return part
    return None


def lookalike_part(job: JobInfo) -> JobPart | None:
    """What ``add_lookalikes`` adds per look-alike of ``job``, as a part (None: not whole numbers)."""
    request, reserved = _lookalike_part(job)
    part = _whole_part(Resource(), request, reserved, Resource())
    return interned(part) if part is not None else None


def _whole_part(allocated: Resource, request: Resource, inqueue: Resource, elastic: Resource) -> JobPart | None:
    largest = 0.0
    for total in (allocated, request, inqueue, elastic):
        largest = _largest_of(total, largest)
    return JobPart(allocated, request, inqueue, elastic, largest) if largest >= 0.0 else None


def _largest_whole(value: float, largest: float) -> float:
    """The larger of ``largest`` and ``value``; -1 (and -1 from then on) when ``value`` is not a
    whole number at or above zero (infinite and NaN are not). With no value below zero every sum
    ``add_job`` makes on the way to a job's part is at most the part's value, so the part's
    largest value bounds them too."""
    if largest < 0.0 or value < 0.0 or value % 1.0 != 0.0:
        return -1.0
    return value if value > largest else largest


def interned(part: JobPart) -> JobPart:
    """The one part with ``part``'s values (equal parts, one object: a cycle counts jobs by it).
    Worked out for a job's part when a later cycle finds it again, not when it is made: most
    jobs of a cold cycle are seen once."""
    key = (*_values(part.allocated), *_values(part.request), *_values(part.inqueue), *_values(part.elastic))
    found = _PARTS.get(key)
    if found is not None:
        return found
    if len(_PARTS) >= _PARTS_KEPT:
        _PARTS.clear()  # a part already handed out stays valid: equal ones then count apart
    _PARTS[key] = part
    return part


def _values(total: Resource) -> tuple:
    """A total's values and scalar keys in order, and whether it has a scalar map, for a key."""
    scalars = total.scalars
    return total.milli_cpu, total.memory, None if scalars is None else tuple(scalars.items())


def _part_again(allocated: Resource, request: Resource, inqueue: Resource, elastic: Resource) -> JobPart | None:
    part = _whole_part(allocated, request, inqueue, elastic)
    return interned(part) if part is not None else None


def job_bound(job: JobInfo) -> float:
    """A bound on every value ``add_job`` adds for ``job`` (what it holds, what its waiting tasks
    ask, its minResources), or -1 when one of them is not a whole number at or above zero."""
    held = _largest_of(job.allocated, 0.0)
    minimum = _largest_of(job.min_resources, 0.0) if job.min_resources is not None else 0.0
    if held < 0.0 or minimum < 0.0:
        return -1.0
    bound = held + minimum
    waiting = job.status_index.get(PENDING)
    if waiting:
        for task in waiting.values():
            asked = _largest_of(task.resreq, 0.0)
            if asked < 0.0:
                return -1.0
            bound += asked
    return bound


def _largest_of(total: Resource, largest: float) -> float:
    largest = _largest_whole(total.milli_cpu, largest)
    largest = _largest_whole(total.memory, largest)
    if total.scalars:
        for value in total.scalars.values():
            largest = _largest_whole(value, largest)
    return largest


def add_parts(attr: QueueAttr, parts: dict[object, int], bound: float) -> bool:
    """Add each part ``count`` times and each job (a job first seen, which has no part yet) as
    ``add_job`` adds it, in the order given (the order of each one's first job); False, with
    nothing added, when ``bound`` (of the magnitudes of everything added) reaches 2**53."""
    if bound >= EXACT_SUMS_BELOW:
        return False
    for part, count in parts.items():
        if isinstance(part, JobPart):
            _add_times(attr.allocated, part.allocated, count)
            _add_times(attr.request, part.request, count)
            _add_times(attr.inqueue, part.inqueue, count)
            _add_times(attr.elastic, part.elastic, count)
        elif isinstance(part, JobInfo):
            add_job(attr, part)
    return True


class PartTally:
    """Jobs counted by what stands for each (a part, or the job itself) queue by queue, in the
    order of each one's first job, with a bound per queue on every value added (``count x``
    the entry's largest value): jobs in a row with one entry in one queue are counted at once."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[object, int]] = {}  # by queue, in the order of its first job
        self.bounds: dict[str, float] = {}
        self._counts: dict[object, int] = {}
        self._last: object = None  # the entry of the last jobs in a row, ``_run`` of them, of ``_queue``
        self._queue = ""
        self._run = 0
        self._largest = 0.0

    def count(self, queue: str, entry: object, largest: float) -> bool:
        """One more job of ``queue`` standing as ``entry``; True when it is the queue's first."""
        first = False
        if entry is not self._last or queue != self._queue:
            self.end_run()
            found = self.groups.get(queue)
            if found is None:
                found = self.groups[queue] = {}
                self.bounds[queue] = 0.0
                first = True
            self._counts, self._last, self._queue, self._largest = found, entry, queue, largest
        self._run += 1
        return first

    def count_more(self, entry: object, count: int, largest: float) -> None:
        """``count`` more of ``entry`` in the last job's queue (its look-alikes), after it."""
        self.end_run()
        found = self.groups[self._queue]
        found[entry] = found.get(entry, 0) + count
        self.bounds[self._queue] += largest * count

    def end_run(self) -> None:
        if self._last is not None:
            self._counts[self._last] = self._counts.get(self._last, 0) + self._run
            self.bounds[self._queue] += self._largest * self._run
        self._last, self._run = None, 0


_FIRST_HOLDERS: Final = 64  # with no part among a session's first holders, the totals are added one by one


def allocations_by_parts(jobs: list[JobInfo], totals: dict[str, Resource]) -> dict[str, None] | None:
    """What every job holds added to its queue's total in ``totals``, jobs alike once: each job
    whose part stands for it (``standing_part``) by its part, ``count`` times, the others one by
    one in their place, in the order of each one's first job. The totals of ``add_nonzero`` job
    by job (``cycle.queue_allocations``): the same values, scalar keys and scalar maps (see
    ``add_parts``). Returns the queues that hold something, in the order of their first job
    holding something; None, with nothing added, when some value is not a whole number at or
    above zero or some sum could reach 2**53, or when none of the first 64 jobs holding
    something has a part (a cold session: the caller's loop costs less)."""
    tally = PartTally()
    held_by_part: dict[JobPart, bool] = {}
    holders = by_part = 0
    for job in jobs:
        part = standing_part(job)
        entry: object = part
        if part is not None:
            holds = held_by_part.get(part)
            if holds is None:
                holds = held_by_part[part] = part.allocated.holds_anything()
            bound = part.largest
        else:
            holds, entry, bound = job.allocated.holds_anything(), job, _largest_of(job.allocated, 0.0)
        if not holds:
            continue
        if bound < 0.0:
            return None
        holders += 1
        if part is not None:
            by_part += 1
        if by_part == 0 and holders == _FIRST_HOLDERS:
            return None  # a cold session (no job seen before): one by one costs less than counting
        tally.count(job.queue, entry, bound)
    tally.end_run()
    if any(bound >= EXACT_SUMS_BELOW for bound in tally.bounds.values()):
        return None
    for name, found in tally.groups.items():
        total = totals[name]
        for added, count in found.items():
            if isinstance(added, JobPart):
                _add_times(total, added.allocated, count)
            elif isinstance(added, JobInfo):
                total.add_nonzero(added.allocated)
    return dict.fromkeys(tally.groups)


def _add_times(total: Resource, part: Resource, count: int) -> None:
    total.milli_cpu += part.milli_cpu * count
    total.memory += part.memory * count
    if part.scalars is not None:
        scalars = total.scalars if total.scalars is not None else {}
        for name, value in part.scalars.items():
            scalars[name] = scalars.get(name, 0.0) + value * count
        total.scalars = scalars


def exact_totals(attr: QueueAttr) -> bool:
    """Whether the queue's totals that ``add_lookalikes`` adds to stay where sums are exact."""
    for total in (attr.request, attr.inqueue):
        for _, value in total.dims():
            if abs(value) >= EXACT_SUMS_BELOW:
                return False
    return True


# The helpers below add a job's part to a queue's total in place: what ``Resource.add`` of the
# part ``JobInfo.get_elastic_resources`` (or the positive part of an allocation) builds would add,
# the same values and scalar keys in the same order, without building that part. A server adds
# every running job of the cluster to its queue every cycle.


def _add_positive(total: Resource, held: Resource) -> None:
    """``total.add(held's positive part)`` (a job without minResources: all it holds is elastic)."""
    if held.milli_cpu > 0:
        total.milli_cpu += held.milli_cpu
    if held.memory > 0:
        total.memory += held.memory
    if held.scalars:
        for name, value in held.scalars.items():
            if value > 0:
                total.add_scalar(name, value)


def _add_exceeded(total: Resource, held: Resource, minimum: Resource) -> None:
    """``total.add(exceeded_part(held, minimum))``: per dimension ``held - minimum`` where held is
    more (a scalar missing on one side is 0; ``Dim.INFINITY`` kept as ``Resource.diff`` keeps it)."""
    if held.milli_cpu > minimum.milli_cpu:
        total.milli_cpu += held.milli_cpu - minimum.milli_cpu
    if held.memory > minimum.memory:
        total.memory += held.memory - minimum.memory
    mine, theirs = held.scalars or {}, minimum.scalars or {}
    if not theirs:  # the usual minResources (cpu, memory): every held scalar is above its 0
        for name, lval in mine.items():
            if lval == _INFINITE or lval > 0.0:
                total.add_scalar(name, lval)
        return
    names = list(mine) + [name for name in theirs if name not in mine]
    for name in names:
        lval, rval = mine.get(name, 0.0), theirs.get(name, 0.0)
        if lval == _INFINITE:
            total.add_scalar(name, lval)
        elif rval != _INFINITE and lval > rval:
            total.add_scalar(name, lval - rval)


def add_inqueue(total: Resource, job: JobInfo) -> None:
    """Add what an admitted job still reserves of its ``minResources`` (Inqueue, or Running with
    at least minMember tasks allocated): per dimension named there, ``max(min - allocated, 0)``
    (Volcano's GetInqueueResource; a scalar the job holds none of reserves its whole minimum).
    A job whose podgroup sets no minResources reserves nothing."""
    names = job.min_resource_names  # the podgroup's minResources, as listed there
    if names is None:
        return
    phase = job.phase
    if phase != "Inqueue":
        if phase != "Running":
            return
        # tasks in an allocated status: the ready ones (JobInfo keeps their count) less the succeeded
        if job.ready_task_num() - job.count(SUCCEEDED) < job.min_member:
            return
    allocated, minimum = job.allocated, job.min_resources
    held = allocated.scalars or {}
    for name in names:
        if name == "cpu":
            reserved = minimum.milli_cpu if minimum is not None else 0.0
            if reserved - allocated.milli_cpu > 0:
                total.milli_cpu += reserved - allocated.milli_cpu
        elif name == "memory":
            reserved = minimum.memory if minimum is not None else 0.0
            if reserved - allocated.memory > 0:
                total.memory += reserved - allocated.memory
        elif not name.startswith("count/"):
            reserved = minimum.get(name) if minimum is not None else 0.0
            have = held.get(name)
            if have is None and name != "pods":
                total.add_scalar(name, reserved)
            elif reserved - (have or 0.0) > 0:
                total.add_scalar(name, reserved - (have or 0.0))


def update_share(attr: QueueAttr, empty_share: float = 0.0) -> None:
    """share = max over deserved's dimensions (>= 0.1, pods included) of allocated / deserved."""
    best, seen = 0.0, False
    allocated = attr.allocated
    for name, value in attr.deserved.dims():
        if value >= MIN_RESOURCE:
            seen = True
            ratio = share(allocated.get(name), value)
            if ratio > best:
                best = ratio
    attr.share = best if seen else empty_share


def schedulable_states(arguments: Arguments) -> frozenset[str]:
    """Queue states whose jobs may be admitted and given resources (argument ``schedulableStates``)."""
    value = arguments.get("schedulableStates", ["Open"])
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
    return frozenset(str(v) for v in value if v)


def admits(attr: QueueAttr, minimum: Resource) -> tuple[bool, list[str]]:
    """Whether a job's ``minimum`` still fits the queue's real capability once everything it
    holds and has admitted is counted: ``minimum + allocated + inqueue - elastic <= realCapability``
    on the dimensions the job asks for (Volcano's enqueue check, strict)."""
    needed = minimum.clone().add(attr.allocated).add(attr.inqueue).sub(attr.elastic)
    return needed.less_equal_with_dimension_and_resources_name(attr.real_capability, minimum)
