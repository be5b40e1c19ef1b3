"""Admission: the rules every write must pass (SPEC section 4), as pure functions.

``admit_create(obj, view)`` mutates (fills defaults) then validates and returns the object to
store, or raises ``Invalid`` listing every broken rule with its field path. ``admit_update`` and
``admit_delete`` do the same for updates and deletions. ``view`` is what admission may know of
the cluster (``lahar.admission.view``).
"""

from __future__ import annotations

from typing import Callable

from lahar.admission.cluster import validate_command, validate_node, validate_priority_class
from lahar.admission.queue import mutate_queue, validate_queue_create, validate_queue_delete, validate_queue_update
from lahar.admission.view import ClusterView, ObjectsView, builtin_queue
from lahar.admission.workload import (
    mutate_job,
    mutate_podgroup,
    validate_job,
    validate_job_update,
    validate_pod,
    validate_podgroup,
)
from lahar.errors import FieldError, Invalid
from lahar.model.base import ApiObject
from lahar.model.cluster import Command, Node, PriorityClass, SchedulerConfiguration
from lahar.model.job import Job
from lahar.model.queue import Queue
from lahar.model.workload import Pod, PodGroup

__all__ = [
    "admit_create",
    "admit_update",
    "admit_delete",
    "mutate",
    "validate_create",
    "ClusterView",
    "ObjectsView",
    "builtin_queue",
]

def mutate_node(node: Node) -> Node:
    """A node that reports no ``pods`` allocatable gets Kubernetes' default of 110 (kubelet's
    ``maxPods``): without it, no pod would ever fit, since every pod counts as one."""
    if "pods" in node.allocatable:
        return node
    out = node.model_copy(deep=True)
    out.status.allocatable = {**node.allocatable, "pods": "110"}
    return out


_MUTATORS: dict[type, Callable] = {Queue: mutate_queue, Job: mutate_job, PodGroup: mutate_podgroup, Node: mutate_node}
_VALIDATORS: dict[type, Callable[[ApiObject, ClusterView], list[FieldError]]] = {
    Queue: validate_queue_create,
    Job: validate_job,
    PodGroup: validate_podgroup,
    Pod: validate_pod,
    Node: validate_node,
    PriorityClass: validate_priority_class,
    Command: validate_command,
    SchedulerConfiguration: lambda obj, view: [],
}


def mutate(obj: ApiObject) -> ApiObject:
    """A copy of ``obj`` with defaults filled in (the object itself if its kind has none)."""
    mutator = _MUTATORS.get(type(obj))
    return mutator(obj) if mutator else obj


def validate_create(obj: ApiObject, view: ClusterView) -> list[FieldError]:
    return _VALIDATORS[type(obj)](obj, view)


def admit_create(obj: ApiObject, view: ClusterView) -> ApiObject:
    """Mutate then validate a new object; raises ``Invalid`` with every error."""
    mutated = mutate(obj)
    errors = validate_create(mutated, view)
    if errors:
        raise Invalid(obj.kind, obj.name, errors)
    return mutated


def admit_update(old: ApiObject, new: ApiObject, view: ClusterView) -> ApiObject:
    """Validate an update. Queues check hierarchy and lifecycle rules against the old object."""
    if isinstance(old, Queue) and isinstance(new, Queue):
        new = mutate_queue(new)
        errors = validate_queue_update(old, new, view)
    else:
        new = mutate(new)
        errors = _validate_update_generic(new, view)
        if not errors and isinstance(old, Job) and isinstance(new, Job):
            errors = validate_job_update(old, new)
    if errors:
        raise Invalid(new.kind, new.name, errors)
    return new


def _validate_update_generic(obj: ApiObject, view: ClusterView) -> list[FieldError]:
    """Field rules only: a running job may stay in a queue that has since closed."""
    if isinstance(obj, Job):
        return validate_job(obj, view, check_queue=False)
    if isinstance(obj, PodGroup):
        return validate_podgroup(obj, view, check_queue=False)
    return validate_create(obj, view)


def admit_delete(obj: ApiObject, view: ClusterView) -> None:
    """Raises ``Invalid`` when the object may not be deleted (queues only have such rules)."""
    if isinstance(obj, Queue):
        errors = validate_queue_delete(obj, view)
        if errors:
            raise Invalid(obj.kind, obj.name, errors)
