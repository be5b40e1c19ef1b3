"""reclaim: a queue below its deserved share takes back resources lent to other queues.

Reference 6.4. Queues in order; a queue that is overused reclaims nothing. For each starving job
(fewer than minAvailable tasks placed), each pending task that the queue may reclaim for
(``Preemptive``) looks for a node where evicting *Running*, preemptable tasks of *other*,
reclaimable queues (filtered by the plugins' ``Reclaimable``) makes room; the task is then
pipelined there. The job's statement is committed when the job is pipelined, else discarded.
Evictions are kept only for the node that worked.

Lahar arguments (``configurations: [{name: reclaim, arguments: {...}}]``):
- ``minimalVictims``: evict a set of victims where none could be spared (see ``victims``);
- ``protectDeserved``: never take a victim whose queue would fall below its deserved share.
Lahar also skips reclaimers in Suspended queues.
"""

from __future__ import annotations

from lahar.resources import Dim
from lahar.scheduler.api import PENDING, RUNNING, JobInfo, NodeInfo, QueueInfo, TaskInfo
from lahar.scheduler.actions.allocate import task_constraints
from lahar.scheduler.actions.victims import choose_minimal, keeps_deserved
from lahar.scheduler.framework.session import Session
from lahar.scheduler.framework.statement import Statement
from lahar.scheduler.pqueue import PriorityQueue


def execute(ssn: Session) -> None:
    args = ssn.action_arguments("reclaim")
    minimal = args.get_bool("minimalVictims", False)
    protect = args.get_bool("protectDeserved", False)
    queues, starving = _starving(ssn)
    heaps = _Heaps(ssn, starving)
    failed: dict[tuple, dict[str, int]] = {}
    walked: dict[tuple, int] = {}
    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        waiting = starving.get(queue.uid)
        if waiting is None or _refused_throughout(ssn, queue, waiting):
            continue
        by_queue, tasks = heaps.built()
        jobs = by_queue[queue.uid]
        while not jobs.empty():
            job = jobs.pop()
            stmt = Statement(ssn)
            pending = tasks[job.uid]
            while ssn.job_starving(job) and not pending.empty():
                task = pending.pop()
                if task.preemption_policy == "Never":
                    continue
                if not ssn.preemptive(queue, [task]):
                    ssn.note(job.uid, kind="cannot-reclaim", queue=queue.name, task=task.key)
                    continue
                if ssn.pre_predicate(task):
                    continue
                _reclaim_for_task(ssn, stmt, task, job, minimal, protect, failed, walked)
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()


class _Heaps:
    """The starving jobs' heaps by queue and each one's pending tasks in a heap, as Volcano builds
    them when the action starts, built instead when a queue first has a job to take in order.
    Nothing changes a job before that (a queue refused throughout changes nothing), so they come
    out the same; reclaim may then evict tasks of queues yet to come, so every heap is built at
    that moment, not at each queue's turn. A deep backlog refused throughout never needs them."""

    def __init__(self, ssn: Session, starving: dict[str, list[JobInfo]]) -> None:
        self.ssn, self.starving = ssn, starving
        self.jobs: dict[str, PriorityQueue[JobInfo]] | None = None
        self.tasks: dict[str, PriorityQueue[TaskInfo]] = {}

    def built(self) -> tuple[dict[str, PriorityQueue[JobInfo]], dict[str, PriorityQueue[TaskInfo]]]:
        if self.jobs is None:
            ssn = self.ssn
            self.jobs = {}
            for uid, jobs in self.starving.items():
                self.jobs[uid] = PriorityQueue(ssn.job_order_fn, jobs)
                for job in jobs:
                    self.tasks[job.uid] = PriorityQueue(ssn.task_order_fn, job.tasks_in(PENDING))
        return self.jobs, self.tasks


def _refused_throughout(ssn: Session, queue: QueueInfo, jobs: list[JobInfo]) -> bool:
    """True, with the notes written, when reclaim would only pass over every pending task of the
    queue's starving jobs: the queue may not reclaim for it (``Preemptive``: noted), it never
    preempts, or it fails its pre-predicates. Nothing then changes from one job to the next,
    so taking the jobs in order (a heap of a deep backlog) would end the same way; when some
    task would look for victims, nothing is written and the jobs are taken in order. A job's
    tasks are noted in task order, as the long way would note them.

    A look-alike waiting job (``JobFacts.described_kind``) whose kind was found refused for
    every task in this pass is noted without asking: the same queue and tasks get the same
    answers, and nothing changes during the pass."""
    notes: list[tuple[str, list[TaskInfo]]] = []  # each job's tasks to note
    refused: set[object] = set()  # kinds whose every task the queue may not reclaim for
    for job in jobs:
        facts = ssn.job_facts(job)
        if not facts.starving:
            continue
        kind = facts.described_kind()
        known = kind is not None and kind in refused
        every = True
        noted: list[TaskInfo] = []
        for task in facts.pending(ssn, job):
            if task.preemption_policy == "Never":
                continue
            if known or not ssn.preemptive(queue, [task]):
                noted.append(task)
                continue
            every = False
            if not ssn.pre_predicate(task):
                return False
        if kind is not None and every:
            refused.add(kind)
        if noted:
            notes.append((job.uid, noted))
    template = {"kind": "cannot-reclaim", "queue": queue.name, "task": ""}
    for uid, tasks in notes:
        ssn.note_tasks(uid, template, tasks)
    return True


def _starving(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[str, list[JobInfo]]]:
    """The valid, admitted, starving jobs of each queue not Suspended, and every queue with a
    valid admitted job in a heap, pushed in the order of its first such job, as Volcano pushes
    them (a queue's share may change while it waits in the heap, so which queues it holds, in
    which order, can decide the order they come out). The checks are pure, so validity, the
    dearest, is asked only where it decides something: for a starving job, or a job whose queue
    is not in the heap yet (most jobs of a busy cluster are running in a queue already there:
    such a job, not starving, is passed over before its queue is looked up)."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    starving: dict[str, list[JobInfo]] = {}
    seen: set[str] = set()
    for job in ssn.listed_jobs():
        if job.is_pending():
            continue
        facts = ssn.job_facts(job)
        hungry = facts.starving
        if not hungry and job.queue in seen:
            continue  # its queue is in the heap already (a queue's uid is its name): nothing to do
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if (hungry or queue.uid not in seen) and not facts.valid:
            continue
        if queue.uid not in seen:
            seen.add(queue.uid)
            queues.push(queue)
        if hungry and not ssn.suspended(queue):
            starving.setdefault(job.queue, []).append(job)
    return queues, starving


def _reclaimees(ssn: Session, node: NodeInfo, job: JobInfo) -> list[TaskInfo]:
    """The node's running, preemptable tasks of other queues that are reclaimable (the node typed:
    compiled, each task's fields are then read natively, not looked up by name)."""
    out = []
    for task in node.tasks.values():
        if task.status is not RUNNING or not task.preemptable:
            continue
        owner = ssn.jobs.get(task.job)
        if owner is None or owner.queue == job.queue:
            continue
        if ssn.queues[owner.queue].reclaimable():
            out.append(task)
    return out


def _reclaim_for_task(
    ssn: Session,
    stmt: Statement,
    task: TaskInfo,
    job: JobInfo,
    minimal: bool,
    protect: bool,
    failed: dict[tuple, dict[str, int]],
    walked: dict[tuple, int],
) -> None:
    """Find the first node where evicting victims makes room for ``task``; pipeline it there.

    ``failed`` remembers (node, queue, request, placement constraints) combinations that found no
    room, with the node's version at the time: during reclaim, victim queues only shrink, so such
    a node can only work again once its own tasks change. Skipping it saves rescanning a full
    cluster per task. Tasks that may go to different nodes (node selector, tolerations) do not
    ask alike, even for the same request: a node one of them may not use can suit the other.

    ``walked`` remembers, for such a combination, how many node changes the session's node
    index had counted (``NodeIndex.changes``: one for every task added to or taken from a node,
    each with the node's version moved) when a walk over every node found no room. While that
    count stands, no node moved since, so a task that asks alike over the same nodes would pass
    over each of them again (each is in ``failed`` at its version): the walk is left out.
    """
    request_key = (job.queue, task.request_id(), task_constraints(task))
    seen = failed.setdefault(request_key, {})
    nodes = ssn.filter_unresolvable(task)
    index = ssn.node_index
    moves = len(index.changes) if index is not None and nodes is ssn.node_list else -1
    if moves < 0 or walked.get(request_key) != moves:
        if _reclaim_on_nodes(ssn, stmt, task, job, nodes, seen, minimal, protect):
            return
        if moves >= 0:
            walked[request_key] = moves  # a walk that found no room moved no node
    if not any(n.get("kind") == "reclaim-failed" for n in ssn.notes.get(job.uid, [])):
        blocked = sorted(q for q in _unreclaimable(ssn) if q != job.queue)
        ssn.note(job.uid, kind="reclaim-failed", task=task.key, unreclaimable=blocked)


def _reclaim_on_nodes(
    ssn: Session, stmt: Statement, task: TaskInfo, job: JobInfo, nodes: list[NodeInfo], seen: dict[str, int], minimal: bool, protect: bool
) -> bool:
    """The first of ``nodes`` where evicting victims makes room for ``task``: the evictions and
    the pipeline merged into ``stmt``, True; False, each node found without room in ``seen``
    at its version, when there is none."""
    for node in nodes:
        key = node.name
        if seen.get(key) == node.version:
            continue
        if ssn.predicate_for_preempt(task, node) is not None:
            seen[key] = node.version
            continue
        reclaimees = _reclaimees(ssn, node, job)
        if not reclaimees:
            seen[key] = node.version
            continue
        victims = ssn.reclaimable(task, reclaimees) or []
        room = node.future_idle()
        for victim in victims:
            room.add(victim.resreq)
        if not task.init_resreq.less_equal(room, Dim.ZERO):
            seen[key] = node.version
            continue
        ordered = ssn.build_victims_queue(victims, task)
        chosen = _choose(ssn, ordered, node.future_idle(), task, minimal, protect)
        if chosen is None:
            seen[key] = node.version
            continue
        node_stmt = Statement(ssn)
        for victim in chosen:
            node_stmt.evict(victim, "reclaim")
        node_stmt.pipeline(task, node.name, bool(chosen))
        stmt.merge(node_stmt)
        return True
    return False


def _unreclaimable(ssn: Session) -> set[str]:
    """Queues holding running tasks that reclaim may not touch (reclaimable: false), once per session."""
    cached = ssn.memo.get("unreclaimable")
    if cached is None:
        # the queues first (a few), the jobs only when one of them is not reclaimable
        locked = {name for name, queue in ssn.queues.items() if not queue.reclaimable()}
        cached = {job.queue for job in ssn.listed_jobs() if job.queue in locked and job.count(RUNNING)} if locked else set()
        ssn.memo["unreclaimable"] = cached
    return cached


def _choose(ssn: Session, ordered, available, task: TaskInfo, minimal: bool, protect: bool) -> list[TaskInfo] | None:
    if minimal or protect:
        allowed = keeps_deserved(ssn) if protect else (lambda victim, given: True)
        if not minimal:
            return _in_order(ordered, available, task, allowed)
        return choose_minimal(ordered, available, task.init_resreq, allowed)
    return _in_order(ordered, available, task, lambda victim, given: True)


def _in_order(ordered, available, task: TaskInfo, allowed) -> list[TaskInfo] | None:
    """Volcano: evict in victim order, checking before each eviction whether the task fits."""
    chosen: list[TaskInfo] = []
    room = available.clone()
    given: dict = {}
    while not ordered.empty() and not task.init_resreq.less_equal(room, Dim.ZERO):
        victim = ordered.pop()
        if not allowed(victim, given):
            continue
        chosen.append(victim)
        room.add(victim.resreq)
        from lahar.resources import Resource

        given.setdefault(victim.job, Resource()).add(victim.resreq)
    return chosen if task.init_resreq.less_equal(room, Dim.ZERO) else None
