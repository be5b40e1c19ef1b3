"""enqueue: admit pending podgroups into their queues (Pending -> Inqueue).

Reference 6.1. Queues take turns in queue order, one job per turn in job order. A job without
``minResources`` is admitted without asking any plugin (as in Volcano); otherwise every enabled
``JobEnqueueable`` vote must allow it. A rejected job does not block the jobs behind it.
Lahar: jobs of Suspended queues stay Pending.
"""

from __future__ import annotations

from lahar.scheduler.api import JobInfo, QueueInfo
from lahar.scheduler.framework.session import Session
from lahar.scheduler.pqueue import PriorityQueue


def execute(ssn: Session) -> None:
    queues, waiting = _waiting(ssn)
    # admitting a job changes nothing its order reads (``Session.job_heap``)
    jobs_by_queue = {name: ssn.job_heap(jobs) for name, jobs in waiting.items()}
    while not queues.empty():
        queue = queues.pop()
        jobs = jobs_by_queue.get(queue.uid)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        if job.min_resources is None or ssn.job_enqueueable(job):
            ssn.job_enqueued(job)
            job.phase = "Inqueue"
        queues.push(queue)


def _waiting(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[str, list[JobInfo]]]:
    """Every queue with a job in a heap, pushed in the order of its first job, as Volcano pushes
    them, and each queue's pending jobs (those of Suspended queues noted and left out). A job
    that is not pending, in a queue already in the heap, is passed over before its queue is
    looked up (a queue's uid is its name): most jobs of a busy cluster run."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    waiting: dict[str, list[JobInfo]] = {}
    seen: set[str] = set()
    for job in ssn.listed_jobs():
        if job.queue in seen and not job.is_pending():
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.uid not in seen:
            seen.add(queue.uid)
            queues.push(queue)
        if job.is_pending():
            if ssn.suspended(queue):
                ssn.note(job.uid, kind="queue-suspended", queue=queue.name)
                continue
            waiting.setdefault(job.queue, []).append(job)
    return queues, waiting
