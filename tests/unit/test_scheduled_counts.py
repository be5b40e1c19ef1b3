"""``scheduled_counts``: what session close reads of a job's tasks, worked out once while its
tasks stand (kept with its ``JobFacts``): the scheduled tasks (a releasing task still on a node
counts), the completed ones, and the pods running, succeeded and failed that its podgroup shows."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.resources import Resource
from lahar.scheduler.api import SCHEDULED_STATUSES, JobInfo, TaskInfo, TaskStatus
from lahar.scheduler.cycle import scheduled_counts

tasks = st.lists(st.tuples(st.sampled_from(list(TaskStatus)), st.sampled_from(["", "n0"])), max_size=12)


@settings(max_examples=200, deadline=None)
@given(tasks)
def test_the_counts_are_those_of_the_jobs_tasks(drawn):
    job = JobInfo("ns/j", "j", "ns", "q")
    for n, (status, node) in enumerate(drawn):
        job.add_task(TaskInfo(f"t{n}", f"t{n}", "ns", "ns/j", Resource(1000.0, 1.0), node_name=node, status=status))
    statuses = [(task.status, task.node_name) for task in job.tasks.values()]
    scheduled = sum(1 for status, node in statuses if status in SCHEDULED_STATUSES or (status is TaskStatus.RELEASING and node))
    completed = sum(1 for status, _ in statuses if status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED))
    running, succeeded, failed = (sum(1 for status, _ in statuses if status is wanted) for wanted in (TaskStatus.RUNNING, TaskStatus.SUCCEEDED, TaskStatus.FAILED))
    assert scheduled_counts(job) == (scheduled, completed, running, succeeded, failed)
