"""gang: a job runs only when ``minAvailable`` of its tasks can run together (reference 4.4).

Registers job validity, readiness and pipelining, starving, a job order that puts jobs not yet
ready first, and a victim filter that never takes a running job below its ``minAvailable``. At
session close every job that is not ready gets an ``Unschedulable`` condition saying why.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from lahar.scheduler.api import PENDING, PIPELINED, RELEASING, JobInfo, TaskInfo, TaskStatus, scheduled_status
from lahar.scheduler.framework.session import PERMIT, REJECT, Session
from lahar.scheduler.plugins.base import Plugin

UNSCHEDULABLE: Final = "Unschedulable"
SCHEDULED: Final = "Scheduled"


class GangPlugin(Plugin):
    name = "gang"
    reads_clock = False
    job_answers_read_tasks = True

    def on_session_open(self, ssn: Session) -> None:
        ssn.add("job_valid", self.name, _valid)

        def victims(actor: TaskInfo, candidates: list[TaskInfo]):
            occupied: dict[str, int] = {}
            chosen = []
            for task in candidates:
                job = ssn.jobs.get(task.job)
                if job is None:
                    continue
                occupied.setdefault(job.uid, job.ready_task_num())
                if occupied[job.uid] > job.min_available:
                    occupied[job.uid] -= 1
                    chosen.append(task)
            return chosen, PERMIT

        ssn.add("reclaimable", self.name, victims)
        ssn.add("preemptable", self.name, victims)
        # gang's answer depends on the victims' jobs, which change only through evictions
        ssn.add("preemptable_key", self.name, lambda t: ssn.evictions)
        ssn.add("job_order", self.name, _not_ready_first)
        ssn.add("job_order_key", self.name, JobInfo.is_ready)  # False (not ready) first
        ssn.add("job_ready", self.name, lambda job: job.check_task_ready() and job.is_ready())
        ssn.add(
            "job_pipelined",
            self.name,
            lambda job: PERMIT if job.check_task_pipelined() and job.is_pipelined() else REJECT,
        )
        ssn.add("job_starving", self.name, lambda job: job.is_starving())

    def on_session_close(self, ssn: Session) -> None:
        # every ready job's Scheduled condition reads the same: one object for all of them (no
        # one changes a condition in place; a new one replaces it); so does each Unschedulable
        # message (a backlog's look-alikes read alike)
        scheduled = _condition(ssn, SCHEDULED, "tasks in gang are ready to be scheduled", "")
        # and every ready job with no other condition has the same list of it: no one changes
        # a list of conditions in place either (``JobInfo.set_condition`` makes a new one)
        scheduled_only = [scheduled]
        unschedulable: dict[str, dict[str, str]] = {}
        for job in ssn.listed_jobs():
            if not job.tasks:
                continue
            if job.is_ready():
                if job.conditions:
                    job.set_condition(scheduled)
                else:  # the usual case: a session copy starts with none
                    job.conditions = scheduled_only
                continue
            # the message up to the fit errors reads the tasks alone: kept with the job's facts
            kept = ssn.job_facts(job).kept
            head = kept.get("gang-unschedulable")
            if head is None:
                head = kept["gang-unschedulable"] = "" if skip_unschedulable_for_releasing(job) else _unschedulable_head(job)
            if head:
                message = head + _fit_error_tail(job)
                condition = unschedulable.get(message)
                if condition is None:
                    condition = unschedulable[message] = _condition(ssn, UNSCHEDULABLE, "NotEnoughResources", message)
                job.set_condition(condition)


def _valid(job: JobInfo) -> tuple[bool, str]:
    if not job.check_task_valid():
        return False, "Not enough valid pods of each task for gang-scheduling"
    valid = job.valid_task_num()
    if valid < job.min_available:
        return False, f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}"
    return True, ""


def _not_ready_first(left: JobInfo, right: JobInfo) -> int:
    l_ready, r_ready = left.is_ready(), right.is_ready()
    if l_ready and r_ready:
        return 0
    if l_ready:
        return 1
    if r_ready:
        return -1
    return 0


def _condition(ssn: Session, kind: str, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": "True", "transitionID": ssn.uid, "reason": reason, "message": message}


def _unschedulable_head(job: JobInfo) -> str:
    """The Unschedulable message of a job that is not ready, up to its fit errors: the unready
    count, then Volcano's ``JobInfo.FitError`` (task counts by status, then ``_fit_error_tail``)."""
    counts = tuple((status, len(tasks)) for status, tasks in job.status_index.items())
    unready = job.min_available - job.ready_task_num()
    return f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {_counts_message(counts, job.min_available, False)}"


def _fit_error_tail(job: JobInfo) -> str:
    """The end of Volcano's ``JobInfo.FitError``: the job's own fit error, else its first task's node errors."""
    if job.job_fit_errors:
        return ". Origin reason is: " + job.job_fit_errors
    if not job.fit_errors:
        return ""
    for task in job.tasks.values():
        errors = job.fit_errors.get(task.uid)
        if errors is not None:
            return origin(task.name) + errors.message()
    return ""


# What comes before the name of the task whose node errors end the Unschedulable message
ORIGIN: Final = ". Origin reason is "


def origin(task_name: str) -> str:
    """What names, in the Unschedulable message, the task whose node errors end it."""
    return f"{ORIGIN}{task_name}: "


@lru_cache(maxsize=4096)
def _counts_message(counts: tuple[tuple[TaskStatus, int], ...], min_available: int, ready: bool) -> str:
    """The first part of Volcano's ``JobInfo.FitError``: whether the group is ready and its tasks by status (the
    waiting jobs of a backlog mostly look alike, and every cycle writes each one's condition)."""
    labels = {status.label: count for status, count in counts}
    labels["minAvailable"] = min_available
    state = "pod group is ready" if ready else "pod group is not ready"
    return f"{state}, " + ", ".join(sorted(f"{v} {k}" for k, v in labels.items()))


def skip_unschedulable_for_releasing(job: JobInfo) -> bool:
    """A gang whose missing members are only terminating on their nodes is not unschedulable:
    some task is Releasing on a node, none is Pending or Pipelined, and the scheduled tasks plus
    those releasing ones reach minMember (Volcano's ``shouldSkipUnschedulableForReleasing``)."""
    releasing = sum(1 for task in job.tasks_in(RELEASING) if task.node_name)
    if releasing == 0 or job.count(PENDING) or job.count(PIPELINED):
        return False
    scheduled = sum(len(tasks) for status, tasks in job.status_index.items() if scheduled_status(status))
    minimum = job.min_member  # the podgroup's minMember (minAvailable without a podgroup)
    return scheduled + releasing >= minimum
