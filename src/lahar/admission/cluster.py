"""Admission rules for nodes, priority classes and commands."""

from __future__ import annotations

from lahar.admission.common import check_metadata, check_resource_list
from lahar.admission.view import ClusterView
from lahar.errors import FieldError
from lahar.model.cluster import Command, Node, PriorityClass
from lahar.model.queue import QueueAction

__all__ = ["validate_node", "validate_priority_class", "validate_command", "QUEUE_ACTIONS"]

QUEUE_ACTIONS = tuple(a.value for a in QueueAction)
_PRIORITY_LIMIT = 2_000_000_000  # Kubernetes' highest user-defined priority value is 1e9; system classes reach 2e9


def validate_node(node: Node, view: ClusterView) -> list[FieldError]:
    errors: list[FieldError] = []
    check_metadata(errors, node.metadata, label_name=False, namespaced=False)
    check_resource_list(errors, "status.allocatable", node.status.allocatable)
    check_resource_list(errors, "status.capacity", node.status.capacity)
    return errors


def validate_priority_class(pc: PriorityClass, view: ClusterView) -> list[FieldError]:
    errors: list[FieldError] = []
    check_metadata(errors, pc.metadata, label_name=False, namespaced=False)
    if not -_PRIORITY_LIMIT <= pc.value <= _PRIORITY_LIMIT:
        errors.append(FieldError.invalid("value", pc.value, f"must be in {-_PRIORITY_LIMIT}..{_PRIORITY_LIMIT}"))
    if pc.preemption_policy and pc.preemption_policy not in ("PreemptLowerPriority", "Never"):
        errors.append(FieldError.unsupported("preemptionPolicy", pc.preemption_policy, ("PreemptLowerPriority", "Never")))
    return errors


def validate_command(command: Command, view: ClusterView) -> list[FieldError]:
    """A queue command names a known action and an existing queue."""
    errors: list[FieldError] = []
    check_metadata(errors, command.metadata, label_name=False, namespaced=True)
    if command.target is None:
        errors.append(FieldError.required("target", "a command names its target (kind Queue and the queue's name)"))
        return errors
    if command.target.kind != "Queue":
        errors.append(FieldError.unsupported("target.kind", command.target.kind, ("Queue",)))
        return errors
    if command.action not in QUEUE_ACTIONS:
        errors.append(FieldError.unsupported("action", command.action, QUEUE_ACTIONS))
    if not command.target.name:
        errors.append(FieldError.required("target.name", "the queue to act on"))
    elif view.queue(command.target.name) is None:
        errors.append(FieldError.not_found("target.name", command.target.name, f"queue {command.target.name} does not exist"))
    return errors
