"""preempt: inside one queue, a starving higher-priority job evicts lower-priority tasks.

Reference 6.5. Two phases per queue. Phase A: starving jobs, in job order, preempt tasks of
*other* jobs of the same queue (``Preemptable`` decides who may be a victim: lower job priority,
preemptable, not critical...). Phase B: inside each starving job, higher-priority pending tasks
preempt the job's own lower-priority tasks. A preemptor fits a node when its queue allows it
(``Allocatable``), it fits ``FutureIdle`` and the predicates pass; victims are evicted in victim
order until it fits, and it is pipelined there.

Lahar: jobs of Suspended queues preempt nothing.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from lahar.resources import Dim
from lahar.scheduler.api import PENDING, JobInfo, NodeInfo, QueueInfo, TaskInfo, preemptable_status
from lahar.scheduler.columnar import NodeIndex
from lahar.scheduler.framework.session import Session
from lahar.scheduler.framework.statement import Statement
from lahar.scheduler.lookalikes import plugins_known
from lahar.scheduler.pqueue import PriorityQueue


def execute(ssn: Session) -> None:
    starving: dict[str, list[JobInfo]] = {}
    for job in ssn.listed_jobs():  # pure checks, the cheap ones first
        if job.is_pending():
            continue
        facts = ssn.job_facts(job)
        if not facts.starving:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None or ssn.suspended(queue) or not facts.valid:
            continue
        starving.setdefault(job.queue, []).append(job)
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn, [ssn.queues[q] for q in starving])
    alike = _queue_reads_requests(ssn)  # the plugins' declarations: the same for every queue
    while not queues.empty():
        queue = queues.pop()
        _between_jobs(ssn, starving[queue.uid], alike)
        gave_up: dict[object, bool] | None = {} if alike else None
        for job in starving[queue.uid]:
            _inside_job(ssn, job, gave_up)


def _between_jobs(ssn: Session, starving: list[JobInfo], reads_requests: bool) -> None:
    """Phase A for one queue. Its job heap and the jobs' task heaps are built at the queue's
    turn, not when the action starts as Volcano builds them: the order functions read only each
    job's and task's own state, and phase A and B of other queues change nothing in this one, so
    the heaps come out the same; a queue with nothing to do never needs them."""
    # nothing changes while the jobs are looked at: tasks that ask alike give up alike
    alike = reads_requests and not ssn._enabled("pre_predicate")
    answers: dict[object, bool] | None = {} if alike else None
    if all(_nothing_to_do(ssn, job, answers) for job in starving):
        return  # taking the jobs in order would change nothing (a deep backlog pays for the heap)
    jobs, tasks = _heaps(ssn, starving)
    # kinds of look-alike job (``_kind_of``) one of which was tried and put back since anything
    # was last committed: each other job of the kind would be tried on the very same session and
    # put back alike (the same queue, priority and tasks but for their names, and plugins that
    # read no more: ``lookalikes.plugins_known``), changing nothing, so it is not tried again
    put_back: set[object] | None = set() if plugins_known(ssn) else None
    while not jobs.empty():
        job = jobs.pop()
        kind = _kind_of(ssn, job) if put_back is not None else None
        if kind is not None and put_back is not None and kind in put_back:
            continue
        stmt = Statement(ssn)
        while ssn.job_starving(job) and not tasks[job.uid].empty():
            preemptor = tasks[job.uid].pop()

            def other_jobs(task: TaskInfo, preemptor: TaskInfo = preemptor, job: JobInfo = job) -> bool:
                owner = ssn.jobs.get(task.job)
                return _eligible(task, preemptor) and owner is not None and owner.queue == job.queue and task.job != preemptor.job

            preempt(ssn, stmt, preemptor, other_jobs)
        if ssn.job_pipelined(job):
            stmt.commit()
            if put_back:
                put_back.clear()
        else:
            stmt.discard()
            if kind is not None and put_back is not None:
                put_back.add(kind)


def _heaps(ssn: Session, starving: list[JobInfo]) -> tuple[PriorityQueue[JobInfo], dict[str, PriorityQueue[TaskInfo]]]:
    """A queue's starving jobs in job order, and each one's pending tasks in task order."""
    tasks = {job.uid: PriorityQueue(ssn.task_order_fn, job.tasks_in(PENDING)) for job in starving}
    return PriorityQueue(ssn.job_order_fn, starving), tasks


def _inside_job(ssn: Session, job: JobInfo, gave_up: dict[object, bool] | None = None) -> None:
    """Phase B for ``job``. ``gave_up`` (when the queue's answers read requests alone): the kinds
    of look-alike job found to give up since anything last changed (see ``_gives_up_inside``)."""
    if _gives_up_inside(ssn, job, gave_up):
        return
    waiting = job.tasks_in(PENDING)
    if gave_up is not None:
        gave_up.clear()  # this job may change the session: what was found no longer stands
    pending = PriorityQueue(ssn.task_order_fn, waiting)
    while not pending.empty():
        preemptor = pending.pop()
        stmt = Statement(ssn)

        def same_job(task: TaskInfo, preemptor: TaskInfo = preemptor) -> bool:
            return _eligible(task, preemptor) and task.job == preemptor.job

        if not preempt(ssn, stmt, preemptor, same_job, phase="B"):
            stmt.discard()
            break
        stmt.commit()


def _gives_up_inside(ssn: Session, job: JobInfo, gave_up: dict[object, bool] | None = None) -> bool:
    """Phase B for ``job`` would give up on its first task, changing nothing: none of the job's
    own tasks runs preemptable (no victim anywhere, as of the action's victims' table, which
    only shrinks), so ``preempt`` could only pipeline a task where it fits as it is, and the
    queue refuses every waiting task (``Allocatable``), so it gives up (``_prospects``) on the
    first one and phase B stops there. Without a node index ``preempt`` takes the long way.

    ``gave_up``: the answer for each kind of look-alike job (``_kind_of``) since the session last
    changed; a job of a kind found there is refused alike (the same queue and requests)."""
    if ssn.node_index is None or job.uid in _held_tasks(ssn, "B"):
        return False
    kind = _kind_of(ssn, job) if gave_up is not None else None
    if gave_up is not None and kind is not None:
        known = gave_up.get(kind)
        if known is not None:
            return known
    queue = ssn.queues[job.queue]
    answer = not any(ssn.allocatable(queue, task) for task in job.tasks_in(PENDING))
    if gave_up is not None and kind is not None:
        gave_up[kind] = answer
    return answer


def _queue_reads_requests(ssn: Session) -> bool:
    """Whether every enabled ``Allocatable`` answers from the queue and the task's request alone."""
    return ssn.declared(("allocatable",), "queue_answers_read_requests")


def _kind_of(ssn: Session, job: JobInfo) -> object | None:
    """The job's kind of look-alike waiting job when a cycle described it (``lahar.scheduler.
    lookalikes``; kept with its facts while its tasks stand), else None (``JobFacts.described_kind``)."""
    return ssn.job_facts(job).described_kind()


def _eligible(task: TaskInfo, preemptor: TaskInfo) -> bool:
    if not preemptable_status(task.status) or not task.preemptable:
        return False
    return not (preemptor.best_effort and not task.best_effort)


def preempt(ssn: Session, stmt: Statement, preemptor: TaskInfo, keep: Callable[[TaskInfo], bool], phase: str = "A") -> bool:
    """Find a node where evicting victims lets ``preemptor`` fit; pipeline it there.

    Only nodes where the task fits FutureIdle plus its allowed victims are scored: the others
    would be passed over whatever their score, so scoring them changes nothing but the time.

    Nodes where a task of the same job with the same request and priority could not fit even
    with every allowed victim gone are skipped until they change (their version moves): the
    victims allowed there can only shrink during the action, and gangs of identical tasks would
    otherwise scan the whole cluster once per task.

    When no node holds a task it may take, nothing can be evicted, so the task can only be
    pipelined where it fits as it is, and only if its queue allows it (``Allocatable``): a queue
    that refuses it gives up before any node is looked at (a deep backlog of waiting jobs in a
    queue at its deserved share would otherwise test every node for every one of them).
    """
    job = ssn.jobs[preemptor.job]
    queue = ssn.queues[job.queue]
    key = ssn.preemptable_key(preemptor)
    possible = _prospects(ssn, preemptor, job, queue, key, phase)
    if possible is not None and not possible:
        return False
    memo = ssn.memo.setdefault("preempt-failed", {}).setdefault(
        (phase, preemptor.job, preemptor.priority, preemptor.best_effort, preemptor.init_resreq.milli_cpu, preemptor.init_resreq.memory, tuple(sorted((preemptor.init_resreq.scalars or {}).items()))),
        {},
    )
    candidates: list[tuple[NodeInfo, list[TaskInfo]]] = []
    for node in ssn.filter_unresolvable(preemptor):
        if (possible is not None and node.name not in possible) or memo.get(node.name) == node.version:
            continue
        if ssn.predicate_for_preempt(preemptor, node) is not None:
            continue
        victims = _victims_on(ssn, preemptor, node, keep, key, phase)
        room = node.future_idle()
        for victim in victims:
            room.add(victim.resreq)
        if not preemptor.init_resreq.less_equal(room, Dim.ZERO):
            memo[node.name] = node.version
            continue
        candidates.append((node, victims))
    if candidates and not any(victims for _, victims in candidates) and not ssn.allocatable(queue, preemptor):
        return False  # nothing to evict anywhere, so the queue stays as it is and refuses on every node
    victims_at = {node.name: victims for node, victims in candidates}
    for node in _by_score(ssn, preemptor, [node for node, _ in candidates]):
        victims = victims_at[node.name]
        ordered = ssn.build_victims_queue(victims, preemptor)
        node_stmt = Statement(ssn)
        evicted = False
        fits = _fits(ssn, queue, preemptor, node)
        while not fits and not ordered.empty():
            node_stmt.evict(ordered.pop(), "preempt")
            evicted = True
            fits = _fits(ssn, queue, preemptor, node)
        if fits:
            node_stmt.pipeline(preemptor, node.name, evicted)
            stmt.merge(node_stmt)
            return True
        node_stmt.discard()
    return False


def _prospects(ssn: Session, preemptor: TaskInfo, job: JobInfo, queue: QueueInfo, key: tuple | None, phase: str) -> frozenset[str] | None:
    """The nodes where preempting for ``preemptor`` could succeed (None: any node); empty when
    ``preempt`` gives up before looking at a node, changing nothing."""
    if preemptor.preemption_policy == "Never" or not _nomination_allows(ssn, preemptor):
        return frozenset()
    if ssn.pre_predicate(preemptor):
        return frozenset()
    if ssn.node_index is None:
        return None
    held = _held(ssn, preemptor, job.queue if phase == "A" else job.uid, phase, key)
    if held is None and not ssn.allocatable(queue, preemptor):
        return frozenset()  # no victim on any node: the queue refuses the task everywhere, as preempt would
    return _possible_nodes(ssn, preemptor, held)


def _nothing_to_do(ssn: Session, job: JobInfo, answers: dict[object, bool] | None = None) -> bool:
    """Phase A for ``job``, a starving job of the queue whose turn it is, would change nothing:
    preempt gives up at once for each of its pending tasks (a task that gives up changes
    nothing, so the next one meets the same session, and so does the next job). The job is
    still starving: whether it is depends on its own tasks only, and before its queue's turn
    only its queue's own preemptors (phase A) or its own tasks (phase B) could have moved them.

    ``answers`` (when given) keeps the answer for each kind of task while nothing changes (see
    ``_tasks_give_up``), and for each kind of look-alike job (``_kind_of``): the same queue and
    tasks give the same answer."""
    kind = _kind_of(ssn, job) if answers is not None else None
    if answers is None or kind is None:
        return _tasks_give_up(ssn, job, answers)
    known = answers.get(kind)
    if known is None:
        known = answers[kind] = _tasks_give_up(ssn, job, answers)
    return known


def _tasks_give_up(ssn: Session, job: JobInfo, answers: dict[object, bool] | None) -> bool:
    """Whether preempt gives up at once for each of the job's pending tasks (``_prospects``).
    ``answers``: a task that is nominated nowhere gives up or not by its preemptable key, its
    preemption policy and its request alone (``_prospects`` reads nothing else of it when no
    pre-predicate is enabled: its queue's victims and refusal, and the nodes where that request
    could fit)."""
    queue = ssn.queues[job.queue]
    for task in ssn.job_facts(job).pending(ssn, job):  # any order would do: nothing changes meanwhile
        key = ssn.preemptable_key(task)
        if answers is None or task.nominated_node:
            if _prospects(ssn, task, job, queue, key, "A") != frozenset():
                return False
            continue
        shape = (key, task.preemption_policy, task.request_id())
        answer = answers.get(shape)
        if answer is None:
            answer = answers[shape] = _prospects(ssn, task, job, queue, key, "A") == frozenset()
        if not answer:
            return False
    return True


def _victims_on(ssn: Session, preemptor: TaskInfo, node: NodeInfo, keep: Callable[[TaskInfo], bool], key: tuple | None, phase: str) -> list[TaskInfo]:
    """The tasks on ``node`` that ``Preemptable`` lets ``preemptor`` evict (cached per node version
    and preemptable key: equal keys and candidates give equal victims)."""
    own = any(t.job == preemptor.job for t in node.tasks.values())
    cache_key = (node.name, node.version, phase, key, preemptor.job if own or phase == "B" else None) if key is not None else None
    cache = ssn.memo.setdefault("preemptable", {})
    victims = cache.get(cache_key) if cache_key is not None else None
    if victims is None:
        victims = ssn.preemptable(preemptor, [t for t in node.tasks.values() if keep(t)]) or []
        if cache_key is not None:
            cache[cache_key] = victims
    return victims


def _possible_nodes(ssn: Session, preemptor: TaskInfo, held: np.ndarray | None) -> frozenset[str]:
    """Nodes where the task could fit even if every candidate victim were evicted: FutureIdle
    plus ``held``, the requests of the running, preemptable tasks it may take (its queue's other
    jobs in phase A, its own job in phase B). A cheap upper bound: nodes outside it cannot succeed.
    Only with a node index (``_prospects`` asks it only then)."""
    index = ssn.node_index
    req = index.request(preemptor.init_resreq)
    if req is None:
        return frozenset()
    # The same request against the same victims' table, while no node changed, has the same
    # answer (many waiting jobs ask alike, and most may take no victim at all).
    memo = ssn.memo.setdefault("possible-nodes", {})
    memo_key = (id(req), id(held) if held is not None else None, len(index.changes))
    found = memo.get(memo_key)
    if found is None:
        cols, values = req
        room = index.idle[:, cols] + index.releasing[:, cols] - index.pipelined[:, cols]
        if held is not None:
            room += held[:, cols]
        found = memo[memo_key] = frozenset(index.nodes[r].name for r in np.flatnonzero(index._fits(values, room)))
    return found


def _held(ssn: Session, preemptor: TaskInfo, owner: str, phase: str, key: tuple | None) -> np.ndarray | None:
    """Per node, the requests of the running preemptable tasks of a queue (phase A) or job
    (phase B) that Preemptable could let ``preemptor`` take (all of them when the plugins allow
    no bound), as of the first call in this action for its preemptable key (evictions only make
    the true amount smaller). None when there are none."""
    tables = ssn.memo.setdefault("held-" + phase, {})
    if (owner, key) not in tables:
        held = _held_tasks(ssn, phase).get(owner, [])
        tasks = [task for _, task in held]
        bound = ssn.preemptable_bound(preemptor, tasks) if key is not None and tasks else None
        if bound is not None:
            allowed = {task.uid for task in bound}
            held = [(row, task) for row, task in held if task.uid in allowed]
        table = None
        if held:
            index = ssn.node_index
            table = np.zeros(index.idle.shape)
            for row, task in held:
                table[row] += index._values(task.resreq)
        tables[(owner, key)] = table
    return tables[(owner, key)]


def _held_tasks(ssn: Session, phase: str) -> dict[str, list[tuple[int, TaskInfo]]]:
    """The running, preemptable tasks by queue (phase A) or job (phase B), with their node's row."""
    key = _HELD_A if phase == "A" else _HELD_B  # a constant's hash is kept: phase B asks once per starving job
    found = ssn.memo.get(key)
    if found is None:
        found = {}
        index: NodeIndex = ssn.node_index  # typed: compiled, each task's fields are read natively
        for row, node in enumerate(index.nodes):
            for task in node.tasks.values():
                if not preemptable_status(task.status) or not task.preemptable:
                    continue
                owner_job = ssn.jobs.get(task.job)
                if owner_job is not None:
                    found.setdefault(owner_job.queue if phase == "A" else owner_job.uid, []).append((row, task))
        ssn.memo[key] = found
    return found


_HELD_A, _HELD_B = "held-tasks-A", "held-tasks-B"


def _fits(ssn: Session, queue: QueueInfo, task: TaskInfo, node: NodeInfo) -> bool:
    return (
        ssn.allocatable(queue, task)
        and task.init_resreq.less_equal(node.future_idle(), Dim.ZERO)
        and ssn.predicate(task, node) is None
    )


def _by_score(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
    """Nodes by descending score; equal scores keep node order."""
    if len(nodes) < 2:
        return nodes
    scores = ssn.node_scores(task, nodes)
    return sorted(nodes, key=lambda n: -scores[n.name])


def _nomination_allows(ssn: Session, task: TaskInfo) -> bool:
    """A task nominated to a node where it now fits needs no preemption (Volcano's eligibility rule)."""
    if not task.nominated_node:
        return True
    node = ssn.nodes.get(task.nominated_node)
    if node is None:
        return False
    fit = ssn.predicate(task, node)
    return fit is not None
