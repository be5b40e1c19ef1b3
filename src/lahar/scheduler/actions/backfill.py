"""backfill: place best-effort tasks (no resource requests) wherever the predicates allow.

Reference 6.3. No queue gate: Volcano backfills into any queue. Lahar: not into Suspended queues.
"""

from __future__ import annotations

from lahar.scheduler.api import ALLOCATED, PENDING, PIPELINED, JobInfo, QueueInfo, TaskInfo
from lahar.scheduler.fit import FitErrors
from lahar.scheduler.framework.session import Session
from lahar.scheduler.framework.statement import Statement
from lahar.scheduler.pqueue import PriorityQueue


def execute(ssn: Session) -> None:
    for task in _pending_best_effort(ssn):
        job = ssn.jobs[task.job]
        error = ssn.pre_predicate(task)
        if error:
            continue
        errors = FitErrors()
        nodes = []
        for node in ssn.node_list:
            fit = ssn.predicate_for_allocate(task, node)
            if fit is None:
                nodes.append(node)
            else:
                errors.set_node_error(node.name, fit)
        if not nodes:
            job.fit_errors[task.uid] = errors
            continue
        best = ssn.best_node(task, nodes)
        assert best is not None  # there are nodes to choose from
        allocate_and_dispatch(ssn, task, best.name)


def allocate_and_dispatch(ssn: Session, task: TaskInfo, node_name: str) -> None:
    """Volcano's ``Session.Allocate``: allocate one task, bind all of the job's once it is ready."""
    Statement(ssn).allocate(task, node_name)
    job = ssn.jobs[task.job]
    if ssn.job_ready(job):
        for ready in job.tasks_in(ALLOCATED):
            ssn.dispatch(ready)


def _pending_best_effort(ssn: Session) -> list[TaskInfo]:
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    jobs: dict[str, PriorityQueue[JobInfo]] = {}
    tasks: dict[str, PriorityQueue[TaskInfo]] = {}
    for job in ssn.listed_jobs():
        if not job.best_effort_tasks:  # no task of it asks for nothing: none to backfill
            continue
        if job.is_pending() or not ssn.job_facts(job).valid:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None or ssn.suspended(queue):
            continue
        for task in job.tasks_in(PENDING):
            if task.best_effort:
                tasks.setdefault(job.uid, PriorityQueue(ssn.task_order_fn)).push(task)
        for task in job.tasks_in(PIPELINED):
            if task.best_effort:
                Statement(ssn).unpipeline(task)
                tasks.setdefault(job.uid, PriorityQueue(ssn.task_order_fn)).push(task)
        if job.uid not in tasks:
            continue
        if queue.uid not in jobs:
            queues.push(queue)
            jobs[queue.uid] = PriorityQueue(ssn.job_order_fn)
        jobs[queue.uid].push(job)
    ordered: list[TaskInfo] = []
    while not queues.empty():
        queue = queues.pop()
        while not jobs[queue.uid].empty():
            job = jobs[queue.uid].pop()
            while not tasks[job.uid].empty():
                ordered.append(tasks[job.uid].pop())
    return ordered
