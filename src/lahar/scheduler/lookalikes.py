"""Look-alike waiting jobs: a deep backlog's cycle with each kind of waiting job looked at once.

A deep backlog is mostly jobs that look alike: admitted (Inqueue), every task waiting, the same
queue, priority, podgroup and pod specs, only their names differ. In a cycle that decides
nothing, the session never changes, so what the actions find for one such job they find for
each: a queue at its deserved share refuses them all alike. ``hide`` keeps the first job of each
kind in the session's jobs and sets the others aside after the plugins opened (their requests
and reservations are counted in every queue's accounting as before); the actions then look at
the first one only. Jobs whose kind an earlier cycle described are set aside sooner, by
``group`` before the plugins open: proportion then adds each kind's look-alikes at once, count
times the first job's part (``queueattr.add_lookalikes``, exact while every value is a whole
number and the totals stay below 2**53; past that ``settled`` says no).

A cycle after a task ended mostly binds a job or two and refuses the rest: when allocate binds
a kind's first job, ``show_next`` shows the kind's next job (in job order) to the actions, where
the long way has it waiting in the queue's heap, and the others wait behind that one. A cycle
while a node stays idle mostly has preempt reserve (pipeline) tasks of a gang that does not fit
whole: where it evicts nothing, in a queue that hides no job, that is followed too (``told``).

``settled`` tells, once the actions are done, whether the shortcut held: nothing was decided but
allocate's binds and those reservations, no other task moved but to be put back (a statement
discarded), each first job still waits with every task pending, without fit errors or refused
by the nodes with nothing decided before its queue ran out of jobs (each look-alike would meet
the same nodes), and where something was bound each first job comes first of its kind in job
order. The close then gives each hidden job its first job's phase, reason (the ``deserved`` and
``no-node-fits`` reasons name the queue, the request or the nodes, never the job) and this
session's conditions (gang's names a refused job's task: each look-alike's names its own). When
the shortcut did not hold the caller runs the cycle again the long way.

Only the default plugins are known to read nothing of a job but its specs and tasks (``PLUGINS``):
with any other plugin enabled nothing is hidden.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Final

from lahar.scheduler.api import ALLOCATED, PENDING, PIPELINED, JobInfo, TaskInfo
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.gang import ORIGIN, origin
from lahar.scheduler.plugins.queueattr import lookalikes_room

__all__ = ["Hidden", "Kind", "NamedConditions", "group", "hide", "settled", "show_next", "show_untold_kinds", "told", "plugins_known", "reason_for", "PLUGINS", "REASONS"]

# Plugins whose answers about a waiting job read only its queue, priority, specs and tasks (and
# its name and creation time for order alone)
PLUGINS: Final = frozenset({"priority", "gang", "conformance", "proportion", "drf", "predicates", "nodeorder", "binpack"})
# Reasons whose text names no job or task: a hidden job's reason is its first job's with its own
# uid. A first job's ``no-node-fits`` reason gets this far only when its fit errors are node errors
# alone, of its one task (``settled``)
REASONS: Final = frozenset({"deserved", "no-node-fits"})
# What names a pod or podgroup rather than describing it: its arrival and run time in a replay,
# its group's and its vcjob's name (no allowed plugin reads a pod's labels: inter-pod affinity
# would make them part of what the scheduler reads)
_NAMING: Final = frozenset({"lahar.dev/at", "lahar.dev/duration", "scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name", "volcano.sh/job-name"})
# At most this many kinds are kept (a server's forecasts run simulations for months)
KINDS_KEPT = 10_000


class Kind:
    """One kind of look-alike waiting job: what the actions read of it (queue, priority, the
    podgroup and pods less their names). One object per kind, so jobs are grouped by identity."""

    __slots__ = ("description", "grouped", "shown")

    def __init__(self, description: tuple) -> None:
        self.description = description
        # the ``group`` call that last met the kind (its number) and the kind's first job there:
        # an attribute read where a map of kinds would be a lookup per job; one pair, read and
        # written at once (sessions in other threads group the same kinds)
        self.grouped: tuple[int, _Group | None] = (-1, None)
        # set once a first job of the kind was refused by the nodes with fit errors that are not
        # told for each look-alike (several tasks, a job-level or non-node error): its look-alikes
        # are no longer hidden (``show_untold_kinds``; kept until the table is emptied)
        self.shown = False

    def __reduce__(self) -> tuple:
        """A kind pickled with a job's description (``JobInfo.described``) loads as the loading
        process's kind of the same description: kinds are told apart by identity, so two jobs
        alike stay alike, and what the table kept for the kind is worked out again there."""
        return (_canonical, (self.description,))


class _Kinds:
    """Every kind met, one ``Kind`` per value: jobs are grouped by that object's identity, without
    hashing or comparing descriptions every cycle. Emptied when full: a kind kept with a job's
    facts carries the generation it was taken in, and one from an older generation is looked up
    again. Grouping by identity can only miss look-alikes, never join jobs that differ."""

    def __init__(self) -> None:
        self.kinds: dict[tuple, Kind] = {}
        self.generation = 0

    def canonical(self, description: tuple) -> Kind:
        found = self.kinds.get(description)
        if found is not None:
            return found
        if len(self.kinds) >= KINDS_KEPT:
            self.kinds = {}
            self.generation += 1
        found = self.kinds[description] = Kind(description)
        return found


_KINDS: Final = _Kinds()  # Final: compiled, a static read without a lookup in the module's names


def _canonical(description: tuple) -> Kind:
    """The kind of ``description`` in this process's table (a pickled kind loads through it)."""
    return _KINDS.canonical(description)


_GROUPINGS: Final = itertools.count()  # numbers each ``group`` call (``Kind.grouped``)


class Hidden:
    """The jobs set aside for one cycle: every job in session order, of which ``count`` are set
    aside, each behind the first job of its kind (which comes before it in that order): that
    job's uid is kept on the session copy (``JobInfo.hidden_behind``), not in a map."""

    def __init__(self, every: dict[str, JobInfo], count: int, firsts: dict[str, Kind]) -> None:
        self.every = every
        self.count = count
        # the first jobs with a look-alike hidden behind them, each once, and its kind (its facts
        # are worked out afresh once its tasks move: ``show_untold_kinds``)
        self.firsts = firsts
        self.changes: dict[str, int] = {}  # each job left in the session: its tasks' change count when the actions began
        self.revealed: list[str] = []  # hidden jobs shown to the actions since (``show_next``), in that order
        # how many decisions the session held when allocate refused (discarded) each job it
        # tried, and when each queue's turn found no job left (``settled``)
        self.refused_at: dict[str, int] = {}
        self.drained_at: dict[str, int] = {}
        # the tasks preempt reserved (pipelined) in queues that hide no job (``told``)
        self.reserved: set[str] = set()

    @property
    def first_of(self) -> dict[str, str]:
        """Each hidden job's first job, by uid (made on demand: the cycle reads the copies)."""
        return {uid: job.hidden_behind for uid, job in self.every.items() if job.hidden_behind}


class _Group:
    """A kind's first job in ``group``, how many look-alikes it stands for, and at most how many."""

    __slots__ = ("first", "kind", "count", "room")

    def __init__(self, first: str, kind: Kind, room: int) -> None:
        self.first, self.kind, self.count, self.room = first, kind, 0, room


def group(ssn: Session) -> Hidden | None:
    """Before the plugins open: set aside each waiting job whose kind an earlier cycle described
    (kept with its facts) behind the first job of that kind, and count them per first job in
    ``ssn.hidden_counts``, so that proportion adds their requests once (``add_lookalikes``)
    instead of job by job. None when nothing was set aside."""
    if not plugins_known(ssn):
        return None
    groups: list[_Group] = []
    grouping = next(_GROUPINGS)
    count = 0
    shown: dict[str, JobInfo] = {}
    every = ssn.jobs
    for job in ssn.listed_jobs():  # a list: the walk costs a few instructions a job, a map's a hundred
        uid = job.uid
        kind = _kind_of_waiting(ssn, job, known_only=True)
        if kind is not None:
            met, found = kind.grouped
            if met != grouping or found is None:
                # the queue is the kind's: asked of its first job (room for none when not Open)
                found = _Group(uid, kind, lookalikes_room(job) if _queue_open(ssn, job) else 0)
                kind.grouped = (grouping, found)
                groups.append(found)
            elif found.count < found.room:
                found.count += 1
                job.hidden_behind = found.first
                count += 1
                continue
        shown[uid] = job
    if not count:
        return None
    ssn.hidden_counts = {found.first: found.count for found in groups if found.count}
    ssn.jobs = shown
    return Hidden(every, count, {found.first: found.kind for found in groups if found.count})


def hide(ssn: Session, grouped: Hidden | None = None) -> Hidden | None:
    """After the plugins open: keep one waiting job of each kind in ``ssn.jobs`` (the jobs that
    ``group`` set others aside behind stay); None when nothing is set aside."""
    if grouped is None and not plugins_known(ssn):
        return None
    first: dict[Kind, str] = {}
    count = grouped.count if grouped is not None else 0  # those ``group`` set aside stay so
    anchors = grouped.firsts if grouped is not None else {}  # stay shown: their look-alikes' outcomes come from theirs
    firsts = dict(anchors)
    shown: dict[str, JobInfo] = {}
    changes: dict[str, int] = {}
    for job in ssn.listed_jobs():
        uid = job.uid
        kind = _kind(ssn, job)
        if kind is not None:
            found = first.get(kind)
            if found is None:
                first[kind] = uid
            elif uid not in anchors:
                job.hidden_behind = found
                count += 1
                firsts[found] = kind
                continue
        shown[uid] = job
        changes[uid] = job.changes
    if not count:
        return None
    hidden = Hidden(grouped.every if grouped is not None else ssn.jobs, count, firsts)
    hidden.changes = changes
    ssn.jobs = shown
    return hidden


def plugins_known(ssn: Session) -> bool:
    """Whether every plugin of the session's configuration is one of ``PLUGINS``: look-alike
    jobs then meet alike whatever they meet."""
    return all(option.name in PLUGINS for tier in ssn.conf.tiers for option in tier.plugins)


def _kind(ssn: Session, job: JobInfo) -> Kind | None:
    """The kind of a waiting job (what the actions read of it), or None when it is not one that
    may be hidden: in an Open queue, admitted, with every task pending and none nominated to a
    node, its answers kept."""
    if not _queue_open(ssn, job):
        return None
    return _kind_of_waiting(ssn, job, known_only=False)


def _queue_open(ssn: Session, job: JobInfo) -> bool:
    """Whether the job's queue is Open (else its reason names the queue's state, not a share:
    the close would not hand it on)."""
    queue = ssn.queues.get(job.queue)
    return queue is not None and queue.state == "Open"


def _kind_of_waiting(ssn: Session, job: JobInfo, known_only: bool) -> Kind | None:
    """``_kind`` but for the queue's state (``_queue_open``, the same for all jobs of a kind).
    ``known_only``: before the plugins open, only a job whose facts and kind an earlier session
    of the same configuration kept, its tasks unchanged since."""
    if job.phase != "Inqueue" or not job.tasks or job.podgroup is None:
        return None
    if known_only:
        facts = job.facts
        if facts is None or facts.kind_generation < 0 or facts.changes != job.changes or facts.conf is not ssn.conf or not facts.valid:
            return None
        if facts.kind is None:
            return None
        # a kind is found for facts made with every task waiting (``JobFacts``, and below), and
        # no task moved since (``changes``): every task still waits, no need to count them
    else:
        pending = job.status_index.get(PENDING)
        if pending is None or len(pending) != len(job.tasks):
            return None
        facts = ssn.job_facts(job)
        if job.facts is not facts or not facts.valid:
            return None  # answers not kept: the plugins may read more than the job's tasks
    if facts.kind_generation < 0:
        described = _described(job)
        facts.kind = _KINDS.canonical((job.queue, job.priority, described)) if described else None
        facts.kind_generation = _KINDS.generation
        job.described = (facts.kind, facts.kind_generation)
    elif facts.kind is not None and facts.kind_generation != _KINDS.generation:
        facts.kind = _KINDS.canonical(facts.kind.description)
        facts.kind_generation = _KINDS.generation
        job.described = (facts.kind, facts.kind_generation)
    kind: Kind | None = facts.kind  # typed: compiled, ``shown`` is then read without a lookup by name
    return None if kind is not None and kind.shown else kind


def _described(job: JobInfo) -> tuple:
    """The job's podgroup and pods as the scheduler reads them, less what names them; () when a
    task has no pod to describe or is nominated to a node (kept while the job's tasks stand: a
    nomination comes with a new pod)."""
    group = job.podgroup
    assert group is not None
    parts: list[Any] = [_without_names(group.model_dump(mode="json", exclude_none=True), group=True)]
    for task in job.tasks.values():
        if task.pod is None or task.nominated_node:
            return ()
        parts.append((task.priority, task.preemptable, task.role, task.preemption_policy, task.critical, task.request_id()))
        parts.append(_without_names(task.pod.model_dump(mode="json", exclude_none=True), group=False))
    return tuple(parts)


def _without_names(document: dict, group: bool) -> str:
    meta = dict(document.get("metadata") or {})
    for field in ("name", "uid", "resource_version", "creation_timestamp", "generate_name"):
        meta.pop(field, None)
    meta["annotations"] = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _NAMING}
    meta["labels"] = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _NAMING}
    # the vcjob that owns them, by name: the scheduler reads no owner
    meta["owner_references"] = [{k: v for k, v in ref.items() if k not in ("name", "uid")} for ref in meta.get("owner_references") or []]
    kept = {"metadata": meta, "spec": document.get("spec")}
    if group:
        status = document.get("status") or {}
        kept["phase"] = status.get("phase")
    return json.dumps(kept, sort_keys=True)


def show_next(ssn: Session, placed: JobInfo) -> JobInfo | None:
    """After allocate bound ``placed``, the first job of a kind: the next job of its kind in job
    order, shown to the actions from now on (in the session's jobs, the others of the kind
    hidden behind it), as it waits in its queue's heap in the long way; None when none is left.

    Nothing before met that job in the long way: its queue's turns asked the queue about its
    kind once, and no other queue's turn reads it; so it is shown as it would be there. The
    kind's first job must come first in job order, as every one of its look-alikes comes up
    after it in the long way (else the session is marked inexact: the cycle runs again)."""
    hidden: Hidden | None = ssn.lookalikes
    if hidden is None or placed.uid not in hidden.firsts:
        return None
    behind = [job for job in hidden.every.values() if job.hidden_behind == placed.uid]
    kind = hidden.firsts.pop(placed.uid)
    if not behind:
        return None
    shown = behind[0]
    for job in behind:  # the earliest in job order
        if _earlier(job, shown):
            shown = job
    if _earlier(shown, placed):
        ssn.hidden_inexact = True
        return None
    shown.hidden_behind = ""
    for job in behind:
        if job is not shown:
            job.hidden_behind = shown.uid
    if len(behind) > 1:
        hidden.firsts[shown.uid] = kind
    hidden.count -= 1
    hidden.changes[shown.uid] = shown.changes
    hidden.revealed.append(shown.uid)
    ssn.jobs[shown.uid] = shown
    for plugin in ssn.plugins.values():
        plugin.on_job_shown(ssn, shown)
    return shown


def _earlier(job: JobInfo, other: JobInfo) -> bool:
    """Whether ``job`` comes before ``other`` in job order, both of one kind (the same priority,
    nothing held: job order then goes by creation, then uid)."""
    if job.creation != other.creation:
        return job.creation < other.creation
    return job.uid < other.uid


def told(ssn: Session, hidden: Hidden, action: str, since: int) -> bool:
    """Whether the decisions ``action`` made (those from ``since`` on) may stand with jobs
    hidden: allocate's (``settled`` follows its binds), and preempt's reservations that evict
    nothing, each in a queue that hides no job (noted in ``hidden.reserved``).

    Preempt takes the queues one at a time, each queue's two phases whole, in an order set when
    it begins (the same either way: hidden jobs count in every queue's share). A queue that
    hides jobs is then looked at wholly before such a reservation or wholly after it, its first
    jobs and their look-alikes alike; what the reservation changes (a node's room, its queue's
    share) is the same for each of them. Within the reserving queue its jobs come up in job
    order (phase A) and session order (phase B), so a look-alike hidden there could come up
    after the reservation where its first job came up before: that is not told."""
    decisions = ssn.decisions
    if len(decisions) == since or action == "allocate":
        return True
    if action != "preempt":
        return False
    hiding = {ssn.jobs[uid].queue for uid in hidden.firsts}
    for decision in decisions[since:]:
        if decision.type != "pipeline" or decision.queue is None or decision.queue in hiding:
            return False
        hidden.reserved.add(decision.task)
    return True


def settled(ssn: Session, hidden: Hidden) -> bool:
    """Whether the actions ran as they would have with the hidden jobs in. Either nothing was
    decided, or allocate bound tasks (``show_next`` then showed each bound first job's next
    look-alike) and preempt reserved tasks as ``told`` allows, and nothing else was decided; no
    other task of any job moved but to be put back, and each first job of a kind still waits as
    it did: without fit errors, or refused by the nodes as each of its look-alikes would be
    (``_refused_by_the_nodes_met``).

    Without decisions the session was the same from the first action to the last, but between
    the tries of a statement and its discard, so each hidden job would have met what its first
    job met. With binds, each kind's first job must come first in job order: each of its
    look-alikes then came up after it in the long way, and a queue only holds more as allocate
    goes on, so it refused them as it refused the first (asked about their tasks alone: no fit
    errors; tried on the nodes before anything changed them: the same fit errors)."""
    if ssn.hidden_inexact:
        return False
    bound: set[str] = set()
    reserved = hidden.reserved
    for decision in ssn.decisions:
        if decision.type == "pipeline" and decision.task in reserved:
            continue
        if decision.type != "bind" or decision.job is None:
            return False
        bound.add(decision.job)
    for job in ssn.listed_jobs():
        uid = job.uid
        if job.changes != hidden.changes.get(uid) and uid not in bound and not _put_back(job, reserved):
            return False
    for uid in hidden.firsts:
        job = ssn.jobs[uid]
        if job.phase != "Inqueue":
            return False
        if (job.fit_errors or job.job_fit_errors) and not _refused_by_the_nodes_met(hidden, job):
            return False
    return not bound or _firsts_come_first(hidden)


def _put_back(job: JobInfo, reserved: set[str]) -> bool:
    """Whether a job whose tasks moved holds nothing new but preempt's reservations that
    ``told`` allowed: every other try was discarded (a statement puts back what it tried). Not
    so when allocate kept a reservation or an allocation: it reports them only at the close,
    not as decisions, so ``told`` never saw them."""
    if job.status_index.get(ALLOCATED):
        return False
    pipelined = job.status_index.get(PIPELINED)
    if not pipelined:
        return True
    for task in pipelined.values():
        if task.key not in reserved:
            return False
    return True


def _refused_by_the_nodes_met(hidden: Hidden, job: JobInfo) -> bool:
    """Whether a first job with fit errors tells what each of its look-alikes meets in the long
    way: allocate refused it, and no decision came before its queue's turn found no job left.
    Its look-alikes come up at its queue's turns after it (later in job order), so each is tried
    on the same nodes (the same node errors), its queue holding the same. And those errors are
    told for each look-alike (``_told_for_each``)."""
    if not _told_for_each(job):
        return False
    return hidden.refused_at.get(job.uid, -1) == hidden.drained_at.get(job.queue, -2)


def _told_for_each(job: JobInfo) -> bool:
    """Whether a first job's fit errors are told for each of its look-alikes: of its one task,
    node errors alone (gang's message then names that task: ``NamedConditions``; the reason
    names none)."""
    return not job.job_fit_errors and len(job.tasks) == 1 and len(job.fit_errors) == 1 and not next(iter(job.fit_errors.values())).err


def show_untold_kinds(ssn: Session, hidden: Hidden) -> None:
    """After the actions, whatever came of them: each first job refused with fit errors that are
    not told for each look-alike (``_told_for_each``) has its kind shown from the next cycle on.
    Each of its look-alikes would be tried on the nodes too, and their conditions name their
    own tasks; so that the cycles after this one can hide the others (a deep backlog's queue
    whose first job waits for a node with room would otherwise send every cycle the long way),
    even when this one ended at a decision about that very job (preempt reserving its tasks)."""
    for uid, kind in hidden.firsts.items():
        job = ssn.jobs[uid]
        if (job.fit_errors or job.job_fit_errors) and not _told_for_each(job):
            kind.shown = True


def _firsts_come_first(hidden: Hidden) -> bool:
    """Whether each hidden job comes after its first job in job order."""
    every = hidden.every
    seen = ""
    first: JobInfo | None = None
    for job in every.values():
        uid = job.hidden_behind
        if not uid:
            continue
        if uid != seen or first is None:  # look-alikes mostly come together in session order
            seen, first = uid, every[uid]
        if not _earlier(first, job):
            return False
    return True


class NamedConditions:
    """The conditions this session wrote for a first job refused by the nodes, for each of its
    look-alikes: gang's Unschedulable message names the first job's one task (``gang.origin``),
    each look-alike's names its own; the rest reads the same (``_refused_by_the_nodes_met``).
    Each condition that names it is kept as the text before the name and after it, so that a
    look-alike's is one new string and one new map (thousands of look-alikes every cycle)."""

    def __init__(self, first: JobInfo, conditions: list[dict[str, Any]]) -> None:
        name = _only_task(first).name
        named = origin(name)
        # each condition, with its message's text before the task's name and after it ("" when
        # it does not name the task)
        self.parts: list[tuple[dict[str, Any], str, str]] = []
        for condition in conditions:
            message = condition.get("message", "")
            at = message.find(named) if isinstance(message, str) else -1
            if at < 0:
                self.parts.append((condition, "", ""))
                continue
            start = at + len(ORIGIN)  # the origin's ": " then begins the text after the name
            self.parts.append((condition, message[:start], message[start + len(name) :]))

    def of(self, job: JobInfo) -> list[dict[str, Any]]:
        name = _only_task(job).name
        found: list[dict[str, Any]] = []
        for condition, before, after in self.parts:
            if not after:
                found.append(condition)
                continue
            made = dict(condition)
            made["message"] = f"{before}{name}{after}"  # compiled: one new string (two concatenations make two)
            found.append(made)
        return found


def _only_task(job: JobInfo) -> TaskInfo:
    for task in job.tasks.values():  # compiled: a loop over the values, not a generic iterator
        return task
    raise ValueError(f"{job.uid} has no task")


def reason_for(uid: str, first: dict[str, Any] | None) -> dict[str, Any] | None:
    """A hidden job's reason: its first job's, when that names no job; None when it may."""
    if first is None or first.get("kind") not in REASONS:
        return None
    reason = dict(first)
    reason["job"] = uid
    return reason


class HiddenReasons:
    """The reasons of one close's hidden look-alikes: ``reason_for`` each, but a job whose last
    reason was a copy of a first job's reason then (``made_from``) that reads as its first
    job's now but for the job keeps that reason object (no copy; its status compares at once).
    Whether two first reasons read alike is worked out once per pair: every look-alike of a
    kind asks the same, most of them one after the other."""

    def __init__(self) -> None:
        self.alike: dict[int, tuple[dict[str, Any], bool]] = {}  # id(made_from) -> (first, alike)
        self.made_from: dict[str, Any] | None = None  # the last pair found alike
        self.first: dict[str, Any] | None = None

    def of(self, uid: str, first: dict[str, Any] | None, last: dict[str, Any] | None, made_from: dict[str, Any] | None) -> dict[str, Any] | None:
        if made_from is not None and made_from is self.made_from and first is self.first:
            return last
        if last is None or made_from is None or first is None or first.get("kind") not in REASONS:
            return reason_for(uid, first)
        known = self.alike.get(id(made_from))
        if known is None or known[0] is not first:
            known = self.alike[id(made_from)] = (first, _alike_but_the_job(made_from, first))
        if not known[1]:
            return reason_for(uid, first)
        self.made_from, self.first = made_from, first
        return last


def _alike_but_the_job(one: dict[str, Any], other: dict[str, Any]) -> bool:
    if len(one) != len(other):
        return False
    for key, value in one.items():
        if key != "job" and (key not in other or other[key] != value):
            return False
    return True
