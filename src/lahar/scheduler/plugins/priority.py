"""priority: order jobs and tasks by priority; within a queue, lower-priority work is preemptable.

Reference section 4.5. Registers no Reclaimable: priority never gates cross-queue reclaim.
"""

from __future__ import annotations

from lahar.scheduler.api import JobInfo, TaskInfo
from lahar.scheduler.framework.session import PERMIT, Session
from lahar.scheduler.plugins.base import Plugin


def _descending(left: int, right: int) -> int:
    if left == right:
        return 0
    return -1 if left > right else 1


# module functions with typed arguments (compiled, a lambda's untyped arguments are read by name)
def _task_order(left: TaskInfo, right: TaskInfo) -> int:
    return _descending(left.priority, right.priority)


def _job_order(left: JobInfo, right: JobInfo) -> int:
    return _descending(left.priority, right.priority)


def _job_order_key(job: JobInfo) -> int:
    return -job.priority


class PriorityPlugin(Plugin):
    name = "priority"
    reads_clock = False
    job_answers_read_tasks = True

    def on_session_open(self, ssn: Session) -> None:
        ssn.add("task_order", self.name, _task_order)
        ssn.add("job_order", self.name, _job_order)
        ssn.add("job_order_key", self.name, _job_order_key)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]):
            preemptor_job = ssn.jobs.get(preemptor.job)
            if preemptor_job is None:
                return [], PERMIT
            victims = []
            for preemptee in preemptees:
                job = ssn.jobs.get(preemptee.job)
                if job is None:
                    continue
                if job.uid != preemptor_job.uid:
                    if job.priority < preemptor_job.priority:
                        victims.append(preemptee)
                elif preemptee.priority < preemptor.priority:
                    victims.append(preemptee)
            return victims, PERMIT

        ssn.add("preemptable", self.name, preemptable)

        def preemptable_key(task: TaskInfo) -> tuple[int | None, int]:
            job = ssn.jobs.get(task.job)
            return (job.priority if job is not None else None, task.priority)

        ssn.add("preemptable_key", self.name, preemptable_key)
        ssn.add("preemptable_per_task", self.name, True)  # each candidate judged on its own

        def starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add("job_starving", self.name, starving)
