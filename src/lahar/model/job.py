"""Job (vcjob, ``batch.volcano.sh/v1alpha1``): tasks x replicas, expanded into one PodGroup and Pods.

``expand_job`` is what Volcano's job controller does when a job is created: a PodGroup named
after the job (minMember = ``spec.minAvailable``, default every replica; minResources = the
requests of the first ``minAvailable`` pods, task by task), and one Pod per replica named
``<job>-<task>-<index>``, annotated with the podgroup and task names. Lahar's own annotations
(``lahar.dev/at``, ``lahar.dev/duration``) on the job are copied to what it creates unless a task
template sets its own.
"""

from __future__ import annotations

from fractions import Fraction
from typing import ClassVar

from pydantic import Field

from lahar.model.base import (
    GROUP_NAME_ANNOTATIONS,
    LAHAR_AT,
    LAHAR_DURATION,
    ApiObject,
    K8sModel,
    ObjectMeta,
    StrictInt,
)
from lahar.model.workload import Pod, PodGroup, PodGroupSpec, PodTemplateSpec
from lahar.quantity import QuantityFormat, format_quantity

__all__ = ["Job", "JobSpec", "TaskSpec", "expand_job", "TASK_SPEC", "JOB_NAME"]

TASK_SPEC = "volcano.sh/task-spec"
JOB_NAME = "volcano.sh/job-name"
_INHERITED = (LAHAR_AT, LAHAR_DURATION)


class TaskSpec(K8sModel):
    name: str = ""
    replicas: StrictInt = 1
    min_available: StrictInt | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class JobSpec(K8sModel):
    scheduler_name: str | None = None
    min_available: StrictInt | None = None
    queue: str = "default"
    priority_class_name: str | None = None
    max_retry: StrictInt | None = None
    tasks: list[TaskSpec] = Field(default_factory=list)


class JobStatus(K8sModel):
    state: dict | None = None
    pending: StrictInt = 0
    running: StrictInt = 0
    succeeded: StrictInt = 0
    failed: StrictInt = 0


class Job(ApiObject):
    API_VERSION: ClassVar[str] = "batch.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "Job"

    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus = Field(default_factory=JobStatus)

    @property
    def total_replicas(self) -> int:
        return sum(task.replicas for task in self.spec.tasks)

    @property
    def queue(self) -> str:
        return self.spec.queue or "default"


def expand_job(job: Job) -> tuple[PodGroup, list[Pod]]:
    """The PodGroup and Pods a job creates. Pure: the same job gives the same objects."""
    pods = [pod for index, task in enumerate(job.spec.tasks) for pod in _task_pods(job, task, index)]
    min_member = job.spec.min_available if job.spec.min_available is not None else job.total_replicas
    meta = ObjectMeta(
        name=job.name,
        namespace=job.metadata.namespace,
        annotations=_inherited(job.metadata.annotations, {}),
        labels={JOB_NAME: job.name},
        creation_timestamp=job.metadata.creation_timestamp,  # made with the job (a store stamps its own)
    )
    group = PodGroup(
        metadata=meta,
        spec=PodGroupSpec(
            min_member=min_member,
            min_task_member=_task_minimums(job),
            queue=job.queue,
            priority_class_name=job.spec.priority_class_name,
            min_resources=_min_resources(pods, min_member) or None,
        ),
    )
    return group, pods


def _task_pods(job: Job, task: TaskSpec, index: int) -> list[Pod]:
    task_name = task.name or f"task{index}"
    template = task.template
    pods = []
    for replica in range(task.replicas):
        annotations = _inherited(job.metadata.annotations, template.metadata.annotations)
        annotations[GROUP_NAME_ANNOTATIONS[0]] = job.name
        annotations[TASK_SPEC] = task_name
        # a pod's spec shares the template's parts (containers, volumes): objects are replaced,
        # never changed in place, so only what differs is copied
        spec = template.spec
        if spec.priority_class_name is None:
            spec = spec.model_copy(update={"priority_class_name": job.spec.priority_class_name})
        meta = ObjectMeta(
            name=f"{job.name}-{task_name}-{replica}",
            namespace=job.metadata.namespace,
            labels={**template.metadata.labels, JOB_NAME: job.name, TASK_SPEC: task_name},
            annotations=annotations,
            creation_timestamp=job.metadata.creation_timestamp,
        )
        pods.append(Pod(metadata=meta, spec=spec))
    return pods


def _inherited(job_annotations: dict[str, str], own: dict[str, str]) -> dict[str, str]:
    out = {k: v for k, v in job_annotations.items() if k in _INHERITED}
    out.update(own)
    return out


def _task_minimums(job: Job) -> dict[str, int] | None:
    minimums = {
        (task.name or f"task{i}"): task.min_available
        for i, task in enumerate(job.spec.tasks)
        if task.min_available is not None
    }
    return minimums or None


def _min_resources(pods: list[Pod], min_member: int) -> dict[str, str]:
    total: dict[str, Fraction] = {}
    for pod in pods[:min_member]:
        for name, value in pod.requests().items():
            total[name] = total.get(name, Fraction(0)) + value
    return {
        name: format_quantity(value, QuantityFormat.BINARY if name == "memory" else QuantityFormat.DECIMAL)
        for name, value in total.items()
    }
