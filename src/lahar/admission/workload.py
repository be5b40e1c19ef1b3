"""Admission rules for jobs, podgroups and pods (SPEC section 4).

Work may enter a queue only if the queue exists, is a leaf (not ``root``, no child queues) and
is Open or Suspended. Closed, Closing and Unknown refuse new work with a message naming the
queue and its state.
"""

from __future__ import annotations

from lahar.admission.common import (
    INT32_MAX,
    check_int_range,
    check_label_name,
    check_metadata,
    check_resource_list,
)
from lahar.admission.view import ClusterView
from lahar.duration import DurationError, parse_duration
from lahar.errors import FieldError
from lahar.model.base import LAHAR_AT, LAHAR_DURATION, ObjectMeta
from lahar.model.job import Job
from lahar.model.queue import DEFAULT, ROOT, QueueState
from lahar.model.workload import Pod, PodGroup, PodGroupPhase, PodPhase, PodSpec

__all__ = [
    "mutate_job",
    "mutate_podgroup",
    "validate_job",
    "validate_podgroup",
    "validate_pod",
    "check_queue_accepts",
]

_ACCEPTING = (QueueState.OPEN.value, QueueState.SUSPENDED.value)
MAX_TASKS = 100
MAX_CONTAINERS = 32
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def mutate_job(job: Job) -> Job:
    """``job`` with its queue defaulted and, when it has no state yet, the first status the job
    controller gives it: Pending, with every pod not yet running pending (what the control loop
    would write once the job is admitted to its queue, so it writes the job next when a pod of
    it runs). The job itself when there is nothing to fill in, else a copy that shares the parts
    it does not change (objects are never changed in place)."""
    changes: dict = {}
    if not job.spec.queue:
        changes["spec"] = job.spec.model_copy(update={"queue": DEFAULT})
    status = job.status
    if not status.state:
        pending = max(0, job.total_replicas - status.running - status.succeeded - status.failed)
        changes["status"] = status.model_copy(update={"state": {"phase": "Pending"}, "pending": pending})
    return job.model_copy(update=changes) if changes else job


def mutate_podgroup(group: PodGroup) -> PodGroup:
    out = group.model_copy(deep=True)
    out.spec.queue = out.spec.queue or DEFAULT
    if not out.status.phase:
        out.status.phase = PodGroupPhase.PENDING.value
    return out


def check_queue_accepts(errors: list[FieldError], path: str, queue_name: str, view: ClusterView) -> None:
    """The queue exists, is a leaf, and is Open or Suspended."""
    queue = view.queue(queue_name)
    if queue is None:
        errors.append(FieldError.not_found(path, queue_name, f"queue {queue_name} does not exist"))
        return
    if queue_name == ROOT:
        errors.append(FieldError.invalid(path, queue_name, "jobs cannot be submitted to the root queue"))
        return
    children = [q.name for q in view.queues() if q.spec.parent == queue_name and q.name != ROOT]
    if children:
        errors.append(
            FieldError.invalid(path, queue_name, f"queue {queue_name} has child queues ({', '.join(children)}); only leaf queues take jobs")
        )
    if queue.state not in _ACCEPTING:
        errors.append(FieldError.invalid(path, queue_name, f"queue {queue_name} is {queue.state} and accepts no new jobs"))


def validate_job(job: Job, view: ClusterView, *, check_queue: bool = True) -> list[FieldError]:
    errors: list[FieldError] = []
    check_metadata(errors, job.metadata, label_name=True, namespaced=True)
    _check_lahar_annotations(errors, job.metadata)
    if check_queue:
        check_queue_accepts(errors, "spec.queue", job.queue, view)
    if not job.spec.tasks:
        errors.append(FieldError.required("spec.tasks", "a job needs at least one task"))
    elif len(job.spec.tasks) > MAX_TASKS:
        errors.append(FieldError.invalid("spec.tasks", len(job.spec.tasks), f"a job has at most {MAX_TASKS} tasks"))
    seen: set[str] = set()
    for i, task in enumerate(job.spec.tasks):
        path = f"spec.tasks[{i}]"
        check_label_name(errors, f"{path}.name", task.name)
        if task.name in seen:
            errors.append(FieldError.duplicate(f"{path}.name", task.name))
        seen.add(task.name)
        check_int_range(errors, f"{path}.replicas", task.replicas, 0, 100_000)
        if task.min_available is not None:
            check_int_range(errors, f"{path}.minAvailable", task.min_available, 0, task.replicas)
        _check_pod_spec(errors, f"{path}.template.spec", task.template.spec)
    total = job.total_replicas
    if job.spec.min_available is not None:
        if job.spec.min_available < 0:
            errors.append(FieldError.invalid("spec.minAvailable", job.spec.min_available, "must be greater than or equal to 0"))
        elif job.spec.min_available > total:
            errors.append(
                FieldError.invalid("spec.minAvailable", job.spec.min_available, f"must be <= the total number of replicas ({total})")
            )
    return errors


JOB_UPDATE_FIELDS = "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec` and `PriorityClassName`"


def validate_job_update(old: Job, new: Job) -> list[FieldError]:
    """Volcano's rule for a job's update (its ``validateJobUpdate``): the tasks stay as many,
    and the spec stays as it was but for ``minAvailable``, each task's ``replicas`` and
    ``minAvailable``, and ``priorityClassName``. So a job stays in its queue."""
    if len(old.spec.tasks) != len(new.spec.tasks):
        return [FieldError.forbidden("spec.tasks", "job updates may not add or remove tasks")]
    if _fixed_part(old) != _fixed_part(new):
        return [FieldError.forbidden("spec", JOB_UPDATE_FIELDS)]
    return []


def _fixed_part(job: Job) -> dict:
    """The spec without what an update may change."""
    spec = job.spec.model_dump(by_alias=True, exclude_none=True)
    spec.pop("minAvailable", None)
    spec.pop("priorityClassName", None)
    for task in spec.get("tasks", []):
        task.pop("replicas", None)
        task.pop("minAvailable", None)
    return spec


def validate_podgroup(group: PodGroup, view: ClusterView, *, check_queue: bool = True) -> list[FieldError]:
    errors: list[FieldError] = []
    check_metadata(errors, group.metadata, label_name=False, namespaced=True)
    _check_lahar_annotations(errors, group.metadata)
    if check_queue:
        check_queue_accepts(errors, "spec.queue", group.queue, view)
    check_int_range(errors, "spec.minMember", group.spec.min_member, 0, INT32_MAX)
    for role, count in (group.spec.min_task_member or {}).items():
        check_int_range(errors, f"spec.minTaskMember.{role}", count, 0, INT32_MAX)
    check_resource_list(errors, "spec.minResources", group.spec.min_resources)
    phases = [p.value for p in PodGroupPhase]
    if group.status.phase and group.status.phase not in phases:
        errors.append(FieldError.unsupported("status.phase", group.status.phase, phases))
    return errors


def validate_pod(pod: Pod, view: ClusterView) -> list[FieldError]:
    errors: list[FieldError] = []
    check_metadata(errors, pod.metadata, label_name=False, namespaced=True)
    _check_lahar_annotations(errors, pod.metadata)
    _check_pod_spec(errors, "spec", pod.spec)
    phases = [p.value for p in PodPhase]
    if pod.status.phase and pod.status.phase not in phases:
        errors.append(FieldError.unsupported("status.phase", pod.status.phase, phases))
    return errors


def _check_pod_spec(errors: list[FieldError], path: str, spec: PodSpec) -> None:
    for field, containers in (("containers", spec.containers), ("initContainers", spec.init_containers)):
        if len(containers) > MAX_CONTAINERS:
            errors.append(FieldError.invalid(f"{path}.{field}", len(containers), f"a pod has at most {MAX_CONTAINERS} {field}"))
            continue
        for i, container in enumerate(containers):
            where = f"{path}.{field}[{i}].resources"
            check_resource_list(errors, f"{where}.requests", container.resources.requests)
            check_resource_list(errors, f"{where}.limits", container.resources.limits)
    if spec.preemption_policy and spec.preemption_policy not in _PREEMPTION_POLICIES:
        errors.append(FieldError.unsupported(f"{path}.preemptionPolicy", spec.preemption_policy, _PREEMPTION_POLICIES))


def _check_lahar_annotations(errors: list[FieldError], meta: ObjectMeta) -> None:
    for key in (LAHAR_AT, LAHAR_DURATION):
        value = meta.annotations.get(key)
        if value is None:
            continue
        try:
            parse_duration(value)
        except DurationError as exc:
            errors.append(FieldError.invalid(f"metadata.annotations[{key}]", value, str(exc)))
