"""``JobInfo`` keeps its ready-task count with its status index: after any sequence of adds,
status changes, deletes and clones it (and the valid-task count) equals a count of the tasks themselves."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.resources import Resource
from lahar.scheduler.api import JobInfo, TaskInfo, TaskStatus

ALLOCATED = {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
READY = {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED, TaskStatus.SUCCEEDED}
VALID = {*READY, TaskStatus.PIPELINED, TaskStatus.PENDING}  # gang: every status but Releasing, Failed, Unknown
STATUSES = list(TaskStatus)
operations = st.lists(st.tuples(st.sampled_from(["add", "status", "delete", "clone"]), st.integers(0, 5), st.sampled_from(STATUSES)), max_size=40)


def _apply(job: JobInfo, op: str, index: int, status: TaskStatus, request: Resource) -> JobInfo:
    """One operation on ``job`` (a clone replaces it): the job to go on with."""
    uid = f"t{index}"
    if op == "add" and uid not in job.tasks:
        job.add_task(TaskInfo(uid, uid, "ns", "ns/j", request, status=status))
    elif op == "status" and uid in job.tasks:
        job.update_task_status(job.tasks[uid], status)
    elif op == "delete" and uid in job.tasks:
        job.delete_task(job.tasks[uid])
    elif op == "clone":
        job = job.clone()
    return job


@settings(max_examples=200, deadline=None)
@given(operations)
def test_ready_count_matches_the_tasks(ops):
    job = JobInfo("ns/j", "j", "ns", "q", min_available=2)
    for op, index, status in ops:
        job = _apply(job, op, index, status, Resource(1000.0, 0.0))
        assert job.ready_task_num() == sum(1 for t in job.tasks.values() if t.status in READY)
        assert job.valid_task_num() == sum(1 for t in job.tasks.values() if t.status in VALID)


def _values(resource: Resource) -> dict[str, float]:
    """cpu, memory and every scalar with a value other than zero."""
    out = {"cpu": resource.milli_cpu, "memory": resource.memory}
    out.update({name: value for name, value in (resource.scalars or {}).items() if value})
    return out


@settings(max_examples=200, deadline=None)
@given(operations, st.lists(st.integers(0, 8), min_size=6, max_size=6))
def test_allocated_is_the_sum_of_the_allocated_tasks(ops, gpus):
    """proportion and capacity add ``job.allocated`` to their queue's allocation in one step."""
    job = JobInfo("ns/j", "j", "ns", "q", min_available=2)
    for op, index, status in ops:
        scalars = {"nvidia.com/gpu": gpus[index] * 1000.0} if gpus[index] else None
        job = _apply(job, op, index, status, Resource(500.0 * (index + 1), 2.0**30 * index, scalars))
        expected = Resource()
        for task in job.tasks.values():
            if task.status in ALLOCATED:
                expected.add(task.resreq)
        assert _values(job.allocated) == _values(expected)
