"""The session: one scheduling cycle's working copy of the cluster, and the plugins' votes.

A session is opened on a snapshot (jobs, nodes, queues), builds each configured plugin in tier
order and lets it register named callbacks (``ssn.add("queue_order", name, fn)``). Actions ask
the session, and the session combines the plugins' answers exactly as Volcano's
``session_plugins.go`` does (reference section 4.0): first non-zero comparator in tier order,
AND / OR over booleans, tier-scoped victim intersection, Permit / Abstain / Reject votes.

Only decisions leave a session: committed binds and evictions, pipelined placements, podgroup
phases and conditions, queue allocations and, for Lahar, each waiting job's reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Final, Iterable

import numpy as np

from lahar.resources import Resource
from lahar.scheduler.api import BINDING, PENDING, JobInfo, NodeInfo, QueueInfo, TaskInfo
from lahar.scheduler.fit import FitError, PredicateError, StatusCode
from lahar.scheduler.framework.config import Arguments, PluginOption, SchedulerConf, Tier
from lahar.scheduler.pqueue import KeyedQueue, PriorityQueue, pop_order

__all__ = ["Session", "Decision", "EventHandler", "JobFacts", "PERMIT", "ABSTAIN", "REJECT"]

PERMIT, ABSTAIN, REJECT = 1, 0, -1

# up to this many nodes, ``Session.scores_for_rows`` scores node by node: numpy's fixed cost
# per operation (a score takes about twenty) is then more than the loop's
FEW_ROWS: Final = 64

# callback kind -> the plugin flag that enables it (None: always consulted)
_BY_TIER: Final = "@tiers"  # ``Session._enabled_cache``: a kind's callbacks grouped by tier

CALLBACK_FLAGS: dict[str, str | None] = {
    "job_order": "job_order",
    "job_order_key": "job_order",
    "queue_order": "queue_order",
    "victim_queue_order": None,
    "task_order": "task_order",
    "preemptable": "preemptable",
    "reclaimable": "reclaimable",
    "overused": "overused",
    "allocatable": "allocatable",
    "preemptive": "preemptive",
    "job_ready": "job_ready",
    "job_pipelined": "job_pipelined",
    "job_valid": None,
    "job_enqueueable": "job_enqueued",
    "job_enqueued": "job_enqueued",
    "job_starving": "job_starving",
    "predicate": "predicate",
    "pre_predicate": "predicate",
    "node_order": "node_order",
    "batch_node_order": "node_order",
    "best_node": "best_node",
    "deserved": None,
    "vector_predicate": "predicate",
    "preemptable_key": "preemptable",
    "preemptable_per_task": "preemptable",
    "vector_node_order": "node_order",
}


@dataclass(init=False)  # its own __init__: compiled, the generated one is plain Python (cycle.JobOutcome)
class Decision:
    """One effect of a cycle: ``bind``, ``pipeline`` or ``evict`` of a task."""

    type: str
    task: str
    node: str | None
    reason: str | None
    queue: str | None
    job: str | None

    def __init__(self, type: str = "", task: str = "", node: str | None = None, reason: str | None = None, queue: str | None = None, job: str | None = None) -> None:
        self.type, self.task, self.node, self.reason, self.queue, self.job = type, task, node, reason, queue, job

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "task": self.task}
        if self.node is not None:
            out["node"] = self.node
        if self.reason is not None:
            out["reason"] = self.reason
        return out


class JobFacts:
    """What the session's plugins answer about a job from its tasks alone: validity (gang),
    starving (gang, priority), its pending tasks in task order. Every action asks again for
    every waiting job; the answers stand while the job's tasks do (``JobInfo.changes``) under
    the same configuration, so a job copy keeps them, across cycles too when the next snapshot
    takes the copy back. Sound because every plugin registering these callbacks reads only the
    job's own tasks and fields fixed with its podgroup (``tests/property/test_job_facts.py``)."""

    __slots__ = ("changes", "conf", "valid", "valid_message", "starving", "_pending", "_requesting", "kept", "scheduled", "kind", "kind_generation")

    def __init__(self, ssn: "Session", job: JobInfo) -> None:
        self.changes, self.conf = job.changes, ssn.conf
        self.valid, self.valid_message = ssn.job_valid(job)
        self.starving = ssn.job_starving(job)
        self._pending: list[TaskInfo] | None = None
        self._requesting: list[TaskInfo] | None = None
        # anything else worked out from the job's tasks alone, kept as long as these facts, by
        # whoever works it out (session close: the gang message, the request)
        self.kept: dict[str, Any] = {}
        # the close's counts of the job's tasks for its podgroup (``cycle.scheduled_counts``):
        # a field, not one more entry in ``kept``, as the close asks for every job
        self.scheduled: tuple[int, int, int, int, int] | None = None
        # the job's kind of look-alike waiting job (``lahar.scheduler.lookalikes``), None when it is
        # none, from that table's generation; -1 while not described. The job's own description
        # outlives facts made stale by its tasks' moves (``JobInfo.described``), and is its kind
        # again once every task waits again (put back): a job holding a task placed or reserved
        # in this session is no look-alike of one that holds none
        self.kind: Any = None
        self.kind_generation = -1
        described = job.described
        if described is not None:
            pending = job.status_index.get(PENDING)
            if pending is not None and len(pending) == len(job.tasks):
                self.kind, self.kind_generation = described

    def described_kind(self) -> Any:
        """The job's kind of look-alike waiting job when a cycle described it, else None. Jobs of
        one kind have the same queue, priority and tasks but for their names: every task pending
        and nominated nowhere, with the same priorities, preemption policy and requests. Kinds
        are told apart by identity, so a kind from an older table is still only its own
        look-alikes'."""
        return self.kind if self.kind_generation >= 0 else None

    def pending(self, ssn: "Session", job: JobInfo) -> list[TaskInfo]:
        """The job's pending tasks in task order (as a heap of them pops them)."""
        if self._pending is None:
            self._pending = pop_order(ssn.task_order_fn, job.tasks_in(PENDING))
        return self._pending

    def requesting(self, job: JobInfo) -> list[TaskInfo]:
        """The pending tasks that request something, in the job's index order (allocate's worksheet)."""
        if self._requesting is None:
            self._requesting = [task for task in job.tasks_in(PENDING) if not task.resreq.is_empty()]
        return self._requesting

    def __reduce__(self) -> tuple:
        """A pickled job leaves its facts behind (they are worked out again when asked)."""
        return (type(None), ())


@dataclass
class EventHandler:
    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


_LISTINGS_KEPT: Final = 4  # the maps of jobs a session keeps a list of (``Session.listed_jobs``)


@dataclass
class Session:
    uid: str
    jobs: dict[str, JobInfo]
    nodes: dict[str, NodeInfo]
    queues: dict[str, QueueInfo]
    conf: SchedulerConf
    now: float = 0.0
    node_list: list[NodeInfo] = field(default_factory=list)
    total_resource: Resource = field(default_factory=Resource)
    priority_classes: dict[str, tuple[int, str]] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    plugins: dict[str, Any] = field(default_factory=dict)
    event_handlers: list[EventHandler] = field(default_factory=list)
    fns: dict[str, dict[str, Any]] = field(default_factory=dict)
    enqueue_enabled: bool = False
    # Lahar: why each queue or job could not get more this cycle, filled by actions and plugins
    notes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    queue_attrs: dict[str, Any] = field(default_factory=dict)
    node_index: Any = None
    memo: dict[str, Any] = field(default_factory=dict)  # per-session caches of actions
    evictions: int = 0  # evictions and un-evictions so far: caches depending on victims read it
    pipelines: int = 0  # tasks pipelined so far (some may have been put back): none, none to report
    # look-alike waiting jobs left out of ``jobs`` before the plugins opened, counted per first
    # job of each kind (``lahar.scheduler.lookalikes.group``), and whether counting them so lost
    # exactness (the cycle then runs again in full)
    hidden_counts: dict[str, int] = field(default_factory=dict)
    hidden_inexact: bool = False
    # the look-alike waiting jobs set aside from ``jobs`` for this session's actions (a
    # ``lookalikes.Hidden``), None when none are
    lookalikes: Any = None
    # the run of snapshots this session's came from (a ``cache.JobOrder``), how many keys that
    # run had taken out of its kept map by then, and the map of jobs the snapshot handed over
    # (``cycle._outcomes_start``)
    job_order: Any = None
    job_order_at: int = 0
    job_order_map: Any = None
    _enabled_cache: dict[str, list] = field(default_factory=dict)
    # the last maps of jobs listed, each with its list (one entry a map), the latest made first
    # (``listed_jobs``)
    _listings: list[tuple[dict[str, JobInfo], list[JobInfo]]] = field(default_factory=list)

    def listed_jobs(self) -> list[JobInfo]:
        """The session's jobs (the values of ``jobs``, in the same order) as a list, for the
        passes of the actions and plugins over every job: compiled, a pass over a map's values
        costs about a hundred instructions a job for the walk alone, over a list a few. Kept
        while ``jobs`` is the same map with as many keys: in a session a job is only ever added
        to it (a look-alike shown, under a key new to the map, so at its end), never taken out
        or put under a key it has; a changed set of jobs is a new map. The lists of the last
        maps listed are kept too, one for each map: a session that sets look-alikes aside lists
        every job, then those shown to the actions (twice: ``lookalikes.group``, then ``hide``),
        then every job again at its close. Else made anew (a new list: one a caller is going
        over is never changed), in the place of the map's older list if it has one."""
        jobs = self.jobs
        listings = self._listings
        for at, (of, kept) in enumerate(listings):
            if of is jobs:
                if len(kept) == len(jobs):
                    return kept
                fresh = listings[at] = (jobs, list(jobs.values()))  # jobs were added since
                return fresh[1]
        made = list(jobs.values())
        self._listings = [(jobs, made)] + listings[: _LISTINGS_KEPT - 1]
        return made

    def release(self) -> None:
        """Drop what only the actions needed: plugins, their callbacks and the per-action
        caches. Callbacks close over the session, so without this every session would be a
        reference cycle left for the garbage collector; after it, the session (its jobs, nodes,
        queue attributes and decisions, which stay readable) is freed as soon as nothing holds
        it. Called once the cycle's result is built; no callback may be asked afterwards."""
        self.plugins = {}
        self.event_handlers = []
        self.fns = {}
        self._enabled_cache = {}
        self.memo = {}
        self.lookalikes = None  # the actions' view of the hidden jobs (the close has read it)
        self._listings = []
        if self.node_index is not None:
            self.node_index.views = {}  # allocate's per-request views score through the session
            for node in self.node_index.nodes:
                node.index = None  # the index and its nodes point at each other
            self.node_index = None

    # ----------------------------------------------------------------- registration

    @property
    def tiers(self) -> list[Tier]:
        return self.conf.tiers

    def add(self, kind: str, plugin: str, fn: Callable | bool) -> None:
        """Register a plugin's callback of one kind (a flag, for ``preemptable_per_task``)."""
        self.fns.setdefault(kind, {})[plugin] = fn
        self._enabled_cache.pop(kind, None)
        self._enabled_cache.pop(kind + _BY_TIER, None)
        self.memo.pop("preemptable-keys", None)
        self.memo.pop("facts-kept", None)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def action_arguments(self, action: str) -> Arguments:
        return self.conf.action_arguments(action)

    def _enabled(self, kind: str) -> list[tuple[Tier, PluginOption, Callable]]:
        """The enabled callbacks of one kind, in tier order (computed once per kind)."""
        cached = self._enabled_cache.get(kind)
        if cached is not None:
            return cached
        flag = CALLBACK_FLAGS[kind]
        registry = self.fns.get(kind, {})
        found = []
        for tier in self.tiers:
            for option in tier.plugins:
                if flag is not None and not option.enabled(flag):
                    continue
                fn = registry.get(option.name)
                if fn is not None:
                    found.append((tier, option, fn))
        self._enabled_cache[kind] = found
        return found

    def _enabled_by_tier(self, kind: str) -> list[list[Callable]]:
        """``_enabled(kind)``'s callbacks, one list per tier that has any, in tier order (computed
        once per kind: reclaim and preempt vote on each node they look at)."""
        key = kind + _BY_TIER
        cached = self._enabled_cache.get(key)
        if cached is not None:
            return cached
        found: list[list[Callable]] = []
        last: Tier | None = None
        for tier, _, fn in self._enabled(kind):
            if tier is not last:
                found.append([])
                last = tier
            found[-1].append(fn)
        self._enabled_cache[key] = found
        return found

    def _companions(self, kind: str, companion: str) -> list[Callable] | None:
        """The ``companion`` callback of every enabled ``kind`` callback, in the same order (a
        key beside a comparator or a vote: see ``Plugin``); None when one of them has none."""
        registered = {option.name: fn for _, option, fn in self._enabled(companion)}
        found = []
        for _, option, _ in self._enabled(kind):
            fn = registered.get(option.name)
            if fn is None:
                return None
            found.append(fn)
        return found

    def note(self, key: str, **entry: Any) -> None:
        """Record a reason why ``key`` (a job uid or ``queue/<name>``) did not progress."""
        self.notes.setdefault(key, []).append(entry)

    def note_tasks(self, key: str, template: dict[str, Any], tasks: list[TaskInfo]) -> None:
        """One note per task, in that order: a copy of ``template`` (``{"kind": ..., "queue":
        ..., "task": ""}``, made once per pass over a queue: a small dict copies faster than it
        is built) with the task's key, as ``note(key, kind=..., queue=..., task=...)`` writes it."""
        written = self.notes.get(key)
        if written is None:
            written = self.notes[key] = []
        for task in tasks:
            note = template.copy()
            note["task"] = task.key
            written.append(note)

    # ----------------------------------------------------------------- ordering

    def _first_nonzero(self, kind: str, *args: Any) -> int:
        for _, _, fn in self._enabled(kind):
            result = fn(*args)
            if result != 0:
                return result
        return 0

    def job_order_compare(self, left: JobInfo, right: JobInfo) -> int:
        return self._first_nonzero("job_order", left, right)

    def job_order_fn(self, left: JobInfo, right: JobInfo) -> bool:
        result = self.job_order_compare(left, right)
        if result != 0:
            return result < 0
        if left.creation == right.creation:
            return left.uid < right.uid
        return left.creation < right.creation

    def job_order_key(self) -> Callable[[JobInfo], tuple] | None:
        """A sort key that orders jobs as ``job_order_fn`` does, or None.

        A plugin may register, beside its ``job_order`` comparator, a ``job_order_key`` whose
        values compare as the comparator does (``compare(l, r) < 0`` exactly when
        ``key(l) < key(r)``, 0 exactly when they are equal). When every enabled comparator has
        one, the tuple of their keys, then creation and uid (``job_order_fn``'s tie-break),
        orders jobs the same way, and a heap of such tuples pops in the same order as a heap of
        comparisons while no job in it changes (the uid makes the order total)."""
        if "job-order-key" in self.memo:
            return self.memo["job-order-key"]
        parts = self._companions("job_order", "job_order_key")
        key = None if parts is None else _tuple_key(parts)
        self.memo["job-order-key"] = key
        return key

    def job_heap(self, jobs: Iterable[JobInfo] = ()) -> "PriorityQueue[JobInfo] | KeyedQueue[JobInfo]":
        """Jobs in job order, popped as ``PriorityQueue(job_order_fn)`` pops them. For actions
        in which no job changes while it waits in the heap (allocate, enqueue): with keys
        (``job_order_key``) each job's place is worked out once, not at every comparison."""
        key = self.job_order_key()
        if key is None:
            return PriorityQueue(self.job_order_fn, jobs)
        return KeyedQueue(key, jobs)

    def queue_order_fn(self, left: QueueInfo, right: QueueInfo) -> bool:
        result = self._first_nonzero("queue_order", left, right)
        if result != 0:
            return result < 0
        if left.creation == right.creation:
            return left.uid < right.uid
        return left.creation < right.creation

    def victim_queue_order_fn(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> bool:
        result = self._first_nonzero("victim_queue_order", left, right, preemptor)
        if result != 0:
            return result < 0
        return not self.queue_order_fn(left, right)

    def task_order_fn(self, left: TaskInfo, right: TaskInfo) -> bool:
        result = self._first_nonzero("task_order", left, right)
        if result != 0:
            return result < 0
        return compare_task(left, right)

    # ----------------------------------------------------------------- queue gates

    # The predicates below are asked for every waiting job and task of a backlog, several times
    # a cycle: plain loops (no generator per call), the same short-circuit as any() and all().

    def overused(self, queue: QueueInfo) -> bool:
        for _, _, fn in self._enabled("overused"):
            if fn(queue):
                return True
        return False

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        for _, _, fn in self._enabled("allocatable"):
            if not fn(queue, task):
                return False
        return True

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        for _, _, fn in self._enabled("preemptive"):
            if not fn(queue, tasks):
                return False
        return True

    # ----------------------------------------------------------------- job predicates

    def job_facts(self, job: JobInfo) -> JobFacts:
        """The job's ``JobFacts``, worked out again only when its tasks changed; worked out at
        every call when some enabled plugin may read more than the job's tasks to answer."""
        facts = job.facts
        if facts is not None and facts.changes == job.changes and facts.conf is self.conf:
            return facts
        facts = JobFacts(self, job)
        kept = self.memo.get("facts-kept")
        if kept is None:
            kept = self.memo["facts-kept"] = self.declared(("job_valid", "job_starving", "task_order"), "job_answers_read_tasks")
        if kept:
            job.facts = facts
        return facts

    def declared(self, kinds: tuple[str, ...], flag: str) -> bool:
        """Whether every plugin with an enabled callback of these kinds sets ``flag`` (see
        ``Plugin``); a callback added without a plugin object declares nothing."""
        for kind in kinds:
            for _, option, _ in self._enabled(kind):
                plugin = self.plugins.get(option.name)
                if plugin is None or not getattr(plugin, flag, False):
                    return False
        return True

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for _, _, fn in self._enabled("job_ready"))

    def job_valid(self, job: JobInfo) -> tuple[bool, str]:
        for _, _, fn in self._enabled("job_valid"):
            ok, message = fn(job)
            if not ok:
                return False, message
        return True, ""

    def _votes(self, kind: str, job: JobInfo) -> bool:
        current_tier: Tier | None = None
        permitted = False
        for tier, _, fn in self._enabled(kind):
            if tier is not current_tier:
                if permitted:
                    return True
                current_tier = tier
            vote = fn(job)
            if vote < 0:
                return False
            if vote > 0:
                permitted = True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._votes("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._votes("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        for _, _, fn in self._enabled("job_enqueued"):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        found_tier: Tier | None = None
        for tier, _, fn in self._enabled("job_starving"):
            if found_tier is not None and tier is not found_tier:
                return True
            found_tier = tier
            if not fn(job):
                return False
        return found_tier is not None

    # ----------------------------------------------------------------- victims

    def _victims(self, kind: str, actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Volcano's victim vote: in tier order, the victims every voting plugin of a tier
        chooses (a plugin that chooses none ends the tier with none); the first tier with an
        answer decides. A tier without an enabled callback of this kind answers nothing."""
        for fns in self._enabled_by_tier(kind):
            victims: list[TaskInfo] | None = None
            for fn in fns:
                chosen, vote = fn(actor, candidates)
                if vote == ABSTAIN:
                    continue
                if not chosen:
                    victims = None
                    break
                if victims is None:
                    victims = list(chosen)
                else:
                    keep = {c.uid for c in chosen}
                    victims = [v for v in victims if v.uid in keep]
            if victims is not None:
                return victims
        return None

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo] | None:
        return self._victims("reclaimable", reclaimer, reclaimees)

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo] | None:
        return self._victims("preemptable", preemptor, preemptees)

    def preemptable_bound(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Every task that ``preemptable(preemptor, part)`` could answer, for any part of
        ``candidates``: per tier, what all its voting plugins choose from the whole list, joined
        over the tiers. Sound only when every enabled Preemptable plugin judges each candidate on
        its own with a vote that does not depend on the list (it registered
        ``preemptable_per_task``); None otherwise.

        Why it holds: for such plugins a tier's answer on a part is its answer on the whole list
        restricted to the part (or nothing, when a plugin chooses none of the part), and the
        answer on a part is one tier's answer."""
        per_task = self.fns.get("preemptable_per_task", {})
        enabled = self._enabled("preemptable")
        if any(option.name not in per_task for _, option, _ in enabled):
            return None
        bound: dict[str, TaskInfo] = {}
        for fns in self._enabled_by_tier("preemptable"):
            chosen_in_tier: dict[str, TaskInfo] | None = None
            for fn in fns:
                chosen, vote = fn(preemptor, candidates)
                if vote == ABSTAIN:
                    continue
                picked = {task.uid: task for task in chosen}
                chosen_in_tier = picked if chosen_in_tier is None else {u: t for u, t in chosen_in_tier.items() if u in picked}
                if not chosen_in_tier:
                    break
            bound.update(chosen_in_tier or {})
        return list(bound.values())

    def preemptable_key(self, preemptor: TaskInfo) -> tuple | None:
        """What every enabled Preemptable answer depends on, besides the candidates: equal keys
        and equal candidates give equal victims. None when some plugin declares no key."""
        keys = self.memo.get("preemptable-keys", False)
        if keys is False:  # the plugins registered at open: which keys to ask is known from then on
            keys = self.memo["preemptable-keys"] = self._companions("preemptable", "preemptable_key")
        return None if keys is None else tuple([key(preemptor) for key in keys])

    def build_victims_queue(self, victims: Iterable[TaskInfo], preemptor: TaskInfo) -> PriorityQueue[TaskInfo]:
        """Victims in eviction order: the least important first (Volcano's BuildVictimsPriorityQueue).

        Only one nested function, which calls no other: compiled, a nested function that calls
        another is a reference cycle through the function's environment, which holds the session."""

        def less(left: TaskInfo, right: TaskInfo) -> bool:
            if left.job == right.job:
                return not self.task_order_fn(left, right)
            lj, rj = self.jobs.get(left.job), self.jobs.get(right.job)
            pj = self.jobs.get(preemptor.job)
            if lj is None or rj is None:
                if lj is None and rj is None:
                    return not self.task_order_fn(left, right)
                return lj is None
            if pj is None or lj.queue == rj.queue:
                return self._job_then_task(lj, rj, left, right)
            return self.victim_queue_order_fn(self.queues[lj.queue], self.queues[rj.queue], self.queues[pj.queue])

        return PriorityQueue(less, victims)

    def _job_then_task(self, lj: JobInfo, rj: JobInfo, left: TaskInfo, right: TaskInfo) -> bool:
        cmp = self.job_order_compare(lj, rj)
        if cmp != 0:
            return cmp > 0
        return not self.task_order_fn(left, right)

    # ----------------------------------------------------------------- nodes

    def pre_predicate(self, task: TaskInfo) -> str | None:
        for _, _, fn in self._enabled("pre_predicate"):
            error = fn(task)
            if error:
                return error
        return None

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        for _, _, fn in self._enabled("predicate"):
            try:
                fn(task, node)
            except PredicateError as exc:
                return exc.fit
        return None

    def predicate_for_allocate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        fit = self.predicate(task, node)
        if fit is None:
            return None
        codes = (StatusCode.UNSCHEDULABLE, StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, StatusCode.ERROR, StatusCode.SKIP, StatusCode.WAIT)
        return fit if fit.has(*codes) else None

    def predicate_for_preempt(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        fit = self.predicate(task, node)
        if fit is None:
            return None
        codes = (StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, StatusCode.ERROR, StatusCode.SKIP, StatusCode.WAIT)
        return fit if fit.has(*codes) else None

    def vector_predicate_parts(self, task: TaskInfo) -> tuple[np.ndarray, bool] | None:
        """(static mask, pod limit) over the node index: nodes that pass every predicate plugin
        apart from the pod count, and whether the pod count applies. None when some enabled
        predicate has no vector form (callers then test node by node)."""
        scalar = self._enabled("predicate")
        vector = {option.name: fn for _, option, fn in self._enabled("vector_predicate")}
        if self.node_index is None or any(option.name not in vector for _, option, _ in scalar):
            return None
        mask: np.ndarray = np.ones(len(self.node_index.nodes), dtype=bool)
        pod_limit = False
        for fn in vector.values():
            static, limit = fn(task, self.node_index)
            mask &= static
            pod_limit = pod_limit or limit
        return mask, pod_limit

    def vector_predicate(self, task: TaskInfo) -> np.ndarray | None:
        """A boolean array over the node index of nodes passing every predicate plugin, or None."""
        parts = self.vector_predicate_parts(task)
        if parts is None:
            return None
        static, pod_limit = parts
        index = self.node_index
        return static & (index.max_pods > index.pods) if pod_limit else static

    def scores_for_rows(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """Summed node-order scores for the given rows of the node index: up to ``FEW_ROWS``
        rows node by node (``scores_each``), more with each plugin's vector form."""
        index = self.node_index
        if len(rows) <= FEW_ROWS:
            return np.array(self.scores_each(task, [index.nodes[r] for r in rows.tolist()]), dtype=float)
        total = np.zeros(len(rows))
        vector = {option.name: fn for _, option, fn in self._enabled("vector_node_order")}
        for _, option, fn in self._enabled("node_order"):
            if option.name in vector:
                total += vector[option.name](task, index, rows)
            else:
                total += np.array([fn(task, index.nodes[r]) for r in rows], dtype=float)
        for _, _, fn in self._enabled("batch_node_order"):
            by_name = fn(task, [index.nodes[r] for r in rows])
            total += np.array([by_name.get(index.nodes[r].name, 0.0) for r in rows])
        return total

    def scores_each(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """``scores_for_rows`` node by node, in its order of sums (each node-order plugin, then
        each batch of them over all the nodes): the same floats, as each plugin's vector form
        gives each node the float its scalar form does (``tests/property/test_node_scores.py``).
        Below a hundred nodes or so this costs less than numpy's fixed cost per operation; it is
        also the way without a node index."""
        order = [fn for _, _, fn in self._enabled("node_order")]
        totals: list[float] = []
        for node in nodes:
            total = 0.0
            for fn in order:
                total += fn(task, node)
            totals.append(total)
        for _, _, batch in self._enabled("batch_node_order"):
            by_name = batch(task, nodes)
            for at, node in enumerate(nodes):
                totals[at] += by_name.get(node.name, 0.0)
        return totals

    def score_node(self, task: TaskInfo, node: NodeInfo) -> float:
        """The summed node-order score of one node (same values as ``scores_for_rows``)."""
        total = 0.0
        for _, _, fn in self._enabled("node_order"):
            total += fn(task, node)
        for _, _, fn in self._enabled("batch_node_order"):
            total += fn(task, [node]).get(node.name, 0.0)
        return total

    def node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """Sum of every enabled node-order and batch-node-order score, per node name: node by
        node (``scores_each``) without a node index or up to ``FEW_ROWS`` nodes, else with
        each plugin's vector form (the same floats)."""
        if self.node_index is None or len(nodes) <= FEW_ROWS:
            return dict(zip((n.name for n in nodes), self.scores_each(task, nodes)))
        rows = np.array([self.node_index.row[n.name] for n in nodes], dtype=int)
        return dict(zip((n.name for n in nodes), self.scores_for_rows(task, rows).tolist()))

    def best_node(self, task: TaskInfo, nodes: list[NodeInfo]) -> NodeInfo | None:
        """The highest-scoring node; ties go to the earliest in node-list order (Volcano picks at random)."""
        if len(nodes) == 1:
            return nodes[0]
        scores = self.node_scores(task, nodes)
        best = nodes[0]
        for node in nodes[1:]:
            if scores[node.name] > scores[best.name]:
                best = node
        return best

    def filter_unresolvable(self, task: TaskInfo) -> list[NodeInfo]:
        """All nodes except those where this task is UnschedulableAndUnresolvable (from allocate)."""
        job = self.jobs.get(task.job)
        errors = job.fit_errors.get(task.uid) if job else None
        if errors is None:
            return self.node_list
        skip = errors.unresolvable_nodes()
        return [n for n in self.node_list if n.name not in skip] if skip else self.node_list

    # ----------------------------------------------------------------- events

    def fire_allocate(self, task: TaskInfo) -> None:
        for handler in self.event_handlers:
            if handler.allocate is not None:
                handler.allocate(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for handler in self.event_handlers:
            if handler.deallocate is not None:
                handler.deallocate(task)

    def record(self, decision: Decision) -> None:
        self.decisions.append(decision)

    def dispatch(self, task: TaskInfo) -> None:
        """Bind an allocated task: it becomes Binding and a ``bind`` decision is recorded."""
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, BINDING)
        self.record(Decision("bind", task.key, task.node_name, None, job.queue if job else None, task.job))

    def queue_deserved(self, queue: QueueInfo) -> Resource | None:
        """The queue's deserved share from the first plugin that computes one (proportion, capacity)."""
        for _, _, fn in self._enabled("deserved"):
            deserved = fn(queue)
            if deserved is not None:
                return deserved
        return None

    def suspended(self, queue: QueueInfo) -> bool:
        """Lahar: a Suspended queue's jobs get nothing new from any action."""
        return queue.state == "Suspended"


def compare_task(left: TaskInfo, right: TaskInfo) -> bool:
    """Volcano's fallback task order: replica index, then creation time, then uid."""
    if left.index is None or right.index is None or left.index == right.index:
        if left.creation == right.creation:
            return left.uid < right.uid
        return left.creation < right.creation
    return left.index < right.index


def _tuple_key(parts: list[Callable[[JobInfo], Any]]) -> Callable[[JobInfo], tuple]:
    """The plugins' keys, then creation and uid, as one tuple (asked for every waiting job of a
    backlog when its queue first comes up: the usual three plugins' keys without a list)."""
    if len(parts) == 3:
        first, second, third = parts
        return lambda job: (first(job), second(job), third(job), job.creation, job.uid)
    return lambda job: (*[part(job) for part in parts], job.creation, job.uid)
