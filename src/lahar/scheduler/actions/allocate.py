"""allocate: give admitted jobs nodes, queue by queue in order of share, gang by gang.

Reference 6.2. The steps, as Volcano takes them:

1. Every admitted, valid job with pending tasks that request something gets a worksheet (its
   pending tasks in task order) and goes into its queue's job heap; queues go into a heap
   ordered by share. Without an ``enqueue`` action, pending podgroups are admitted here.
2. Pop the queue with the lowest share; drop it for this cycle if it is overused. Pop its first
   job and place tasks until the job is ready (its gang minimum is met); after that, one more
   task per turn. Push the queue back, so its share is compared again after every job.
3. A job's statement is committed (binds) only once the job is ready. A job that is only
   *pipelined* keeps its in-session reservations without binding; otherwise it is discarded.

Lahar: jobs of Suspended queues are skipped; ties between equally good nodes go to the first
node in node order (Volcano picks at random).
"""

from __future__ import annotations

import numpy as np

from lahar.resources import Dim
from lahar.scheduler.api import PENDING, JobInfo, NodeInfo, QueueInfo, TaskInfo
from lahar.scheduler.fit import FitError, FitErrors, StatusCode
from lahar.scheduler.columnar import ClassView, NodeIndex
from lahar.scheduler.framework.session import Session
from lahar.scheduler.framework.statement import Statement
from lahar.scheduler.lookalikes import plugins_known, show_next
from lahar.scheduler.pqueue import KeyedQueue, PriorityQueue, pop_order

JobHeap = PriorityQueue[JobInfo] | KeyedQueue[JobInfo]
# A job's pending tasks in allocate: the list it came with until the job first comes up, then a
# heap of them in task order (``_worksheet``)
Worksheet = PriorityQueue[TaskInfo] | list[TaskInfo]


def execute(ssn: Session) -> None:
    cache_errors = ssn.action_arguments("allocate").get_bool("predicateErrorCacheEnable", True)
    queues, waiting = _build_context(ssn)
    jobs_by_queue: dict[str, JobHeap] = {}
    worksheets: dict[str, Worksheet] = {}
    placed: set[str] = set()  # queues that placed or reserved tasks since their last turn
    # kinds of look-alike job one of which was tried and put back since anything was last
    # placed or reserved, with what its try wrote (``_PutBack``)
    put_back: dict[object, _PutBack] | None = {} if plugins_known(ssn) else None
    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            ssn.note(f"queue/{queue.name}", kind="overused")
            continue
        if queue.uid in waiting:  # the queue's first turn in this action
            entries = waiting.pop(queue.uid)
            if _refused_throughout(ssn, queue, entries):
                continue
            jobs_by_queue[queue.uid] = _job_heap(ssn, entries, worksheets)
        jobs = jobs_by_queue.get(queue.uid)
        if jobs is None or jobs.empty():
            if jobs is not None and ssn.lookalikes is not None:
                ssn.lookalikes.drained_at[queue.uid] = len(ssn.decisions)  # ``lookalikes.settled``
            continue
        if queue.uid in placed:  # it holds more now: it may refuse all that is left
            placed.discard(queue.uid)
            if _refuses_the_rest(ssn, queue, jobs, worksheets):
                continue
        job = jobs.pop()
        tasks = _worksheet(ssn, worksheets, job.uid)
        stmt = _try(ssn, job, tasks, cache_errors, put_back)
        if stmt is None and ssn.lookalikes is not None:
            ssn.lookalikes.refused_at[job.uid] = len(ssn.decisions)  # ``lookalikes.settled``
        if stmt is not None:
            if put_back:
                put_back.clear()
            placed.add(queue.uid)
            if ssn.job_ready(job):
                stmt.commit()
                if ssn.lookalikes is not None:
                    _show_next_lookalike(ssn, job, jobs, worksheets)
                if not tasks.empty():
                    jobs.push(job)
        queues.push(queue)


def _refused_throughout(ssn: Session, queue: QueueInfo, entries: list[tuple[JobInfo, list[TaskInfo]]]) -> bool:
    """True, with the notes written, when the queue refuses every pending task of every job it
    has waiting (``Allocatable``). Taking them in order would then only write those notes: a
    refused task changes nothing, so the queue's share stays the lowest and its jobs come one
    after the other until none is left (a deep backlog would pay for the heaps). When some task
    is allowed, nothing is written and the jobs are taken in order. Asked when the queue first
    comes up, and again at its next turn after each job of it that placed or reserved tasks (the
    queue holds more, so it may refuse what is left: a deep backlog's queue that places one job
    and then refuses the thousands behind it), for the jobs and tasks still waiting: a look at
    each of them until the first task allowed. A job's tasks are noted in task order, as the
    long way would note them.

    A look-alike waiting job (``JobFacts.described_kind``) whose kind was found refused in this
    pass is refused without asking: the same queue and tasks get the same answers, and nothing
    changes during the pass. Only a job whose every task is in its list counts (a worksheet
    that was taken from holds fewer)."""
    refused: set[object] = set()  # kinds found refused, job by job, in this pass
    for job, tasks in entries:
        kind = ssn.job_facts(job).described_kind() if len(tasks) == len(job.tasks) else None
        if kind is not None and kind in refused:
            continue
        for task in tasks:
            if ssn.allocatable(queue, task):
                return False
        if kind is not None:
            refused.add(kind)
    template = {"kind": "queue-allocatable", "queue": queue.name, "task": ""}
    order = ssn.task_order_fn
    for job, tasks in entries:
        ssn.note_tasks(job.uid, template, tasks if len(tasks) < 2 else pop_order(order, tasks))
    return True


def _refuses_the_rest(ssn: Session, queue: QueueInfo, jobs: JobHeap, worksheets: dict[str, Worksheet]) -> bool:
    """``_refused_throughout`` for the jobs and tasks the queue still has waiting, asked only when
    the next task to come up is refused (else the queue places it, or tries, as it is)."""
    if ssn.allocatable(queue, _worksheet(ssn, worksheets, jobs.peek().uid).peek()):
        return False
    return _refused_throughout(ssn, queue, [(job, _waiting_tasks(worksheets[job.uid])) for job in jobs.entries()])


def _build_context(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[str, list[tuple[JobInfo, list[TaskInfo]]]]]:
    """The queues with work, in a heap, and each one's waiting jobs with their pending tasks,
    in the order Volcano pushes them. The job and task heaps are built when a queue first comes
    up (``_job_heap``): the order functions read only each job's and task's own state, which
    nothing changes before its queue's turn, so the heaps come out as if built here; a queue
    that refuses everything never needs them."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    waiting: dict[str, list[tuple[JobInfo, list[TaskInfo]]]] = {}
    for job in ssn.listed_jobs():
        if job.is_pending():
            if ssn.enqueue_enabled:
                continue
            job.phase = "Inqueue"
        if PENDING not in job.status_index:
            continue  # nothing to place (most jobs of a busy cluster): the checks below are pure
        facts = ssn.job_facts(job)
        if not facts.valid:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if ssn.suspended(queue):
            ssn.note(job.uid, kind="queue-suspended", queue=queue.name)
            continue
        tasks = facts.requesting(job)
        if not tasks:
            continue
        if job.queue not in waiting:
            waiting[job.queue] = []
            queues.push(queue)
        waiting[job.queue].append((job, tasks))
    return queues, waiting


def _job_heap(ssn: Session, entries: list[tuple[JobInfo, list[TaskInfo]]], worksheets: dict[str, Worksheet]) -> JobHeap:
    jobs = ssn.job_heap(job for job, _ in entries)  # a job changes only while popped
    for job, tasks in entries:
        worksheets[job.uid] = tasks  # its heap made when the job first comes up (``_worksheet``)
    return jobs


def _worksheet(ssn: Session, worksheets: dict[str, Worksheet], uid: str) -> PriorityQueue[TaskInfo]:
    """The job's pending tasks as a heap in task order, made the first time the job comes up: a
    deep backlog's queue mostly places a job or two and then refuses the rest, whose heaps
    would never be used. Made then, it pops as one made when the action began: the tasks of a
    job that has not come up have not changed."""
    found = worksheets[uid]
    if isinstance(found, list):
        heap: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn, found)
        worksheets[uid] = heap
        return heap
    return found


def _waiting_tasks(worksheet: Worksheet) -> list[TaskInfo]:
    """The tasks still in a worksheet, in no particular order."""
    return worksheet if isinstance(worksheet, list) else worksheet.entries()


def _show_next_lookalike(ssn: Session, placed: JobInfo, jobs: JobHeap, worksheets: dict[str, Worksheet]) -> None:
    """With look-alikes hidden: the next job of the kind of ``placed`` (its statement just
    committed: bound, or ready with nothing placed, as a gang of minimum 0 is) waits in the
    queue's heap from now on, as it does in the long way (``lookalikes.show_next``)."""
    shown = show_next(ssn, placed)
    if shown is not None:
        worksheets[shown.uid] = ssn.job_facts(shown).requesting(shown)
        jobs.push(shown)


class _PutBack:
    """What a look-alike's try wrote before it was put back: the fit errors each task met, by
    its place in task order; ``told`` is False when it wrote anything else (a note, an error
    naming the task)."""

    __slots__ = ("errors", "told")

    def __init__(self) -> None:
        self.errors: list[tuple[int, FitErrors]] = []
        self.told = True


def _try(ssn: Session, job: JobInfo, tasks: PriorityQueue[TaskInfo], cache_errors: bool, put_back: dict[object, _PutBack] | None) -> Statement | None:
    """``allocate_tasks``, but for a look-alike waiting job (``JobFacts.described_kind``, every
    task in its worksheet) of a kind one of which was tried and put back since anything was
    last placed or reserved: it would meet the very same session (the same queue, priority and
    tasks but for their names, under plugins that read no more: ``lookalikes.plugins_known``),
    so it is put back alike, its tasks in task order meeting the same fit errors."""
    kind = ssn.job_facts(job).described_kind() if put_back is not None and len(tasks) == len(job.tasks) else None
    if kind is None or put_back is None:
        return allocate_tasks(ssn, job, tasks, cache_errors)
    known = put_back.get(kind)
    if known is not None:
        at = 0
        for place, errors in known.errors:
            while at <= place:
                task = tasks.pop()
                at += 1
            job.fit_errors[task.uid] = errors
        return None
    trace = _PutBack()
    stmt = allocate_tasks(ssn, job, tasks, cache_errors, trace)
    if stmt is None and trace.told:
        put_back[kind] = trace
    return stmt


def allocate_tasks(ssn: Session, job: JobInfo, tasks: PriorityQueue[TaskInfo], cache_errors: bool = True, trace: _PutBack | None = None) -> Statement | None:
    """Place the job's tasks until it is ready; return the statement, or None when discarded.
    ``trace``: what the try writes, noted for its look-alikes (``_try``)."""
    queue = ssn.queues[job.queue]
    stmt = Statement(ssn)
    role_errors: dict[str, dict[str, object]] = {}
    popped = -1
    while not tasks.empty():
        task = tasks.pop()
        popped += 1
        if not ssn.allocatable(queue, task):
            ssn.note(job.uid, kind="queue-allocatable", queue=queue.name, task=task.key)
            if trace is not None:
                trace.told = False
            continue
        if job.task_has_fit_errors(task):
            errors = FitErrors(err=f"Task {task.name} with role spec {task.role} has already predicated failed, skip")
            job.fit_errors[task.uid] = errors
            if trace is not None:
                trace.told = False
            continue
        pre_error = ssn.pre_predicate(task)
        if pre_error:
            if trace is not None:
                trace.told = False
            job.fit_errors[task.uid] = _all_nodes_error(ssn, pre_error)
            if job.need_continue_allocating():
                continue
            break
        node, why = _choose_node(ssn, task, role_errors if cache_errors else None)
        if node is None:
            assert why is not None  # no node comes with the reason
            job.fit_errors[task.uid] = why
            if trace is not None:
                trace.errors.append((popped, why))
            if job.need_continue_allocating():
                continue
            break
        _place(stmt, task, node)
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return stmt
    stmt.discard()
    return None


def _all_nodes_error(ssn: Session, message: str) -> FitErrors:
    errors = FitErrors()
    for node in ssn.node_list:
        errors.set_node_error(node.name, FitError(node.name, [(StatusCode.ERROR, message)]))
    return errors


def _choose_node(ssn: Session, task: TaskInfo, role_cache: dict | None) -> tuple[NodeInfo | None, FitErrors | None]:
    """The node for ``task`` (its nominated node if it still fits), or why there is none."""
    nominated = ssn.nodes.get(task.nominated_node) if task.nominated_node else None
    if nominated is not None and task.init_resreq.less_equal(nominated.future_idle(), Dim.ZERO):
        if _fit(ssn, task, nominated) is None:
            return nominated, None
    if ssn.node_index is not None:
        return _choose_node_vector(ssn, task)
    candidates, errors = _predicate_nodes(ssn, task, role_cache)
    if not candidates:
        return None, errors
    return _best_node(ssn, task, candidates), None


def _choose_node_vector(ssn: Session, task: TaskInfo) -> tuple[NodeInfo | None, FitErrors | None]:
    index: NodeIndex = ssn.node_index  # typed: compiled, its methods are native calls
    number, req = index.numbered_request(task.init_resreq)
    if req is None:
        return None, _predicate_nodes_vector(ssn, task)[1]
    key = (number, task_constraints(task))
    view = index.views.get(key)
    if view is None:
        parts = ssn.vector_predicate_parts(task)
        if parts is None:
            candidates, errors = _predicate_nodes_vector(ssn, task)
            return (_best_node(ssn, task, candidates), None) if candidates else (None, errors)
        view = index.views[key] = ClassView(
            index,
            req,
            *parts,
            lambda rows, task=task: ssn.scores_for_rows(task, rows),
            lambda node, task=task: ssn.score_node(task, node),
        )
    row = view.choose()
    if row is None:
        if view.errors is None or view.errors[0] != view.position:
            view.errors = (view.position, _vector_errors(ssn, task, req, index.fits_future(req)))
        return None, view.errors[1]
    return index.nodes[row], None


def task_constraints(task: TaskInfo) -> str:
    """What besides its request decides where a task may go: node selector and tolerations."""
    return task.placement().constraints()


def _predicate_nodes(ssn: Session, task: TaskInfo, role_cache: dict | None) -> tuple[list[NodeInfo], FitErrors]:
    """Nodes where the task fits (resources against FutureIdle, then the predicate plugins)."""
    if ssn.node_index is not None:
        return _predicate_nodes_vector(ssn, task)
    errors = FitErrors()
    cache = None
    if role_cache is not None and task.role:
        cache = role_cache.setdefault(f"{task.job}/{task.role}", {})
    found = []
    for node in ssn.node_list:
        fit = cache.get(node.name) if cache else None
        if fit is None:
            fit = _fit(ssn, task, node)
            if fit is not None and cache is not None:
                cache[node.name] = fit
        if fit is None:
            found.append(node)
        else:
            errors.set_node_error(node.name, fit)
    return found, errors


def _predicate_nodes_vector(ssn: Session, task: TaskInfo) -> tuple[list[NodeInfo], FitErrors]:
    """The same answer as the node-by-node loop, from the columnar index."""
    index = ssn.node_index
    req = index.request(task.init_resreq)
    total = len(index.nodes)
    if req is None:
        missing = [n for n in task.init_resreq.resource_names() if n not in index.dims and n != "pods"] or ["pods"]
        return [], FitErrors(counts={f"Insufficient {missing[0]}": total}, total=total)
    fits = index.fits_future(req)
    mask = ssn.vector_predicate(task)
    if mask is None:
        rows = np.flatnonzero(fits)
        found = [index.nodes[r] for r in rows if ssn.predicate_for_allocate(task, index.nodes[r]) is None]
    else:
        found = [index.nodes[r] for r in np.flatnonzero(fits & mask)]
    if found:
        return found, FitErrors()
    return [], _vector_errors(ssn, task, req, fits)


def _vector_errors(ssn: Session, task: TaskInfo, req, fits: np.ndarray) -> FitErrors:
    index = ssn.node_index
    errors = FitErrors(total=len(index.nodes))
    short = np.flatnonzero(~fits)
    if len(short):
        errors.counts = {f"Insufficient {name}": count for name, count in index.short_dimension_counts(req, short).items()}
    for row in np.flatnonzero(fits):
        node = index.nodes[row]
        fit = ssn.predicate_for_allocate(task, node)
        if fit is not None:
            errors.set_node_error(node.name, fit)
    return errors


def _fit(ssn: Session, task: TaskInfo, node: NodeInfo):
    ok, names = task.init_resreq.less_equal_with_resources_name(node.future_idle(), Dim.ZERO)
    if not ok:
        return FitError(node.name, [(StatusCode.UNSCHEDULABLE, f"Insufficient {names[0]}")])
    return ssn.predicate_for_allocate(task, node)


def _best_node(ssn: Session, task: TaskInfo, candidates: list[NodeInfo]) -> NodeInfo | None:
    """Nodes with idle room first, then nodes that will have room once evictions finish."""
    if ssn.node_index is not None and len(candidates) > 1:
        return _best_node_vector(ssn, task, candidates)
    idle = [n for n in candidates if task.init_resreq.less_equal(n.idle, Dim.ZERO)]
    future = [n for n in candidates if n not in idle and task.init_resreq.less_equal(n.future_idle(), Dim.ZERO)]
    for group in (idle, future):
        if group:
            return ssn.best_node(task, group)
    return None


def _best_node_vector(ssn: Session, task: TaskInfo, candidates: list[NodeInfo]) -> NodeInfo | None:
    index = ssn.node_index
    rows = np.array([index.row[n.name] for n in candidates], dtype=int)
    req = index.request(task.init_resreq)
    idle = index.fits_idle(req, rows)
    group = rows[idle] if idle.any() else rows
    if len(group) == 1:
        return index.nodes[group[0]]
    scores = ssn.scores_for_rows(task, group)
    return index.nodes[group[int(np.argmax(scores))]]


def _place(stmt: Statement, task: TaskInfo, node: NodeInfo) -> None:
    if task.init_resreq.less_equal(node.idle, Dim.ZERO):
        stmt.allocate(task, node.name)
    elif task.init_resreq.less_equal(node.future_idle(), Dim.ZERO):
        stmt.pipeline(task, node.name)
