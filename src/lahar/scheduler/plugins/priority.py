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


class PriorityPlugin(Plugin):
    name = "priority"
    reads_clock = False
    job_answers_read_tasks = True

    def on_session_open(self, ssn: Session) -> None:
        ssn.add("task_order", self.name, lambda l, r: _descending(l.priority, r.priority))
        ssn.add("job_order", self.name, lambda l, r: _descending(l.priority, r.priority))
        ssn.add("job_order_key", self.name, lambda job: -job.priority)

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
        ssn.add("preemptable_key", self.name, lambda t: (ssn.jobs[t.job].priority if t.job in ssn.jobs else None, t.priority))
        ssn.add("preemptable_per_task", self.name, True)  # each candidate judged on its own

        def starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add("job_starving", self.name, starving)
