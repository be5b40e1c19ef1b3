"""Admission rules for queues (SPEC section 4): defaults, field rules, hierarchy, lifecycle, deletion.

``mutate_queue`` fills defaults. ``validate_queue_create`` / ``_update`` / ``_delete`` return
every broken rule as a ``FieldError``; an empty list admits the request.

Where Lahar differs from Volcano's webhook (documented in docs/differences.md):
- ``spec.state`` is honoured on create (Volcano drops it) and may be Suspended;
- a parent that sets no value for a resource does not limit its children's sums for it
  (Volcano reads the missing value as zero);
- re-parenting a queue under its own descendant is rejected (Volcano misses it);
- only a Closed queue may be deleted (Volcano no longer checks).
"""

from __future__ import annotations

from fractions import Fraction

from lahar.admission.common import (
    INT32_MAX,
    check_int_range,
    check_metadata,
    check_resource_list,
    resource_values,
)
from lahar.admission.view import ClusterView
from lahar.controller.lifecycle import action_for_desired_state, transition
from lahar.errors import FieldError
from lahar.model.queue import DEFAULT, ROOT, SETTABLE_STATES, Queue, QueueState
from lahar.quantity import QuantityFormat, format_quantity

__all__ = ["mutate_queue", "validate_queue_create", "validate_queue_update", "validate_queue_delete"]

_CLOSED_STATES = (QueueState.CLOSED.value, QueueState.CLOSING.value)
_RESOURCE_FIELDS = ("capability", "deserved", "guarantee")


def mutate_queue(queue: Queue) -> Queue:
    """A copy with defaults: reclaimable true, parent root, status.state = the desired state."""
    out = queue.model_copy(deep=True)
    if out.spec.reclaimable is None:
        out.spec.reclaimable = True
    if not out.spec.parent and out.name != ROOT:
        out.spec.parent = ROOT
    if out.desired_state in SETTABLE_STATES:
        out.status.state = out.status.state or out.desired_state
        out.spec.state = out.spec.state or out.desired_state
    return out


def validate_queue_create(queue: Queue, view: ClusterView) -> list[FieldError]:
    errors = _field_errors(queue)
    if not errors:
        errors += _hierarchy_errors(queue, view, old=None)
        errors += _parent_state_errors(queue, view)
    return errors


def validate_queue_update(old: Queue, new: Queue, view: ClusterView) -> list[FieldError]:
    errors = _field_errors(new)
    if errors:
        return errors
    if old.name == ROOT and _resources(old) != _resources(new):
        errors.append(
            FieldError.forbidden("spec", "root queue's capability, deserved and guarantee follow the cluster and cannot be modified")
        )
    if (old.spec.parent or ROOT) != (new.spec.parent or ROOT) or _resources(old) != _resources(new):
        errors += _hierarchy_errors(new, view, old=old)
    if new.desired_state != old.desired_state or (new.spec.parent or ROOT) != (old.spec.parent or ROOT):
        errors += _state_change_errors(old, new, view)
    return errors


def validate_queue_delete(queue: Queue, view: ClusterView) -> list[FieldError]:
    if queue.name in (ROOT, DEFAULT):
        return [FieldError.forbidden("metadata.name", f"the {queue.name} queue can never be deleted")]
    errors = []
    if queue.state != QueueState.CLOSED.value:
        errors.append(
            FieldError.invalid(
                "status.state",
                queue.state,
                f"only a Closed queue can be deleted; close it first (lahar queue operate -n {queue.name} -a close)",
            )
        )
    for child in _descendants(queue.name, view):
        if child.state != QueueState.CLOSED.value:
            errors.append(FieldError.invalid("status.state", queue.state, f"descendant queue {child.name} is {child.state}, not Closed"))
    return errors


# ----------------------------------------------------------------------------- field rules


def _field_errors(queue: Queue) -> list[FieldError]:
    errors: list[FieldError] = []
    check_metadata(errors, queue.metadata, label_name=True, namespaced=False)
    spec = queue.spec
    check_int_range(errors, "spec.weight", spec.weight, 1, INT32_MAX)
    check_int_range(errors, "spec.priority", spec.priority, 0, INT32_MAX)
    if spec.state and spec.state not in SETTABLE_STATES:
        errors.append(FieldError.unsupported("spec.state", spec.state, SETTABLE_STATES))
    if queue.status.state and queue.status.state not in [s.value for s in QueueState]:
        errors.append(FieldError.unsupported("status.state", queue.status.state, [s.value for s in QueueState]))
    quantity_errors: list[FieldError] = []
    check_resource_list(quantity_errors, "spec.capability", spec.capability)
    check_resource_list(quantity_errors, "spec.deserved", spec.deserved)
    check_resource_list(quantity_errors, "spec.guarantee.resource", queue.guarantee_list)
    return errors + (quantity_errors or _ordering_errors(queue))


def _ordering_errors(queue: Queue) -> list[FieldError]:
    """guarantee <= deserved <= capability, per dimension named on both sides."""
    guarantee = resource_values(queue.guarantee_list)
    deserved = resource_values(queue.spec.deserved)
    capability = resource_values(queue.spec.capability)
    errors = []
    for name, value in guarantee.items():
        if name in deserved and deserved[name] < value:
            errors.append(_invalid(queue.spec.deserved, "spec.deserved", name, f"must be >= guarantee[{name}]={_q(name, value)}"))
        elif name not in deserved and name in capability and capability[name] < value:
            errors.append(_invalid(queue.guarantee_list, "spec.guarantee.resource", name, f"must be <= capability[{name}]={_q(name, capability[name])}"))
    for name, value in deserved.items():
        if name in capability and capability[name] < value:
            errors.append(_invalid(queue.spec.deserved, "spec.deserved", name, f"must be <= capability[{name}]={_q(name, capability[name])}"))
    return errors


# ----------------------------------------------------------------------------- hierarchy rules


def _hierarchy_errors(queue: Queue, view: ClusterView, old: Queue | None) -> list[FieldError]:
    if queue.name == ROOT:
        return []
    parent_name = queue.spec.parent or ROOT
    if parent_name == queue.name:
        return [FieldError.invalid("spec.parent", parent_name, "a queue cannot be its own parent")]
    parent = view.queue(parent_name)
    if parent is None:
        return [FieldError.not_found("spec.parent", parent_name, f"parent queue {parent_name} does not exist")]
    errors = _cycle_errors(queue, parent_name, view)
    if errors:
        return errors
    reparented = old is None or (old.spec.parent or ROOT) != parent_name
    if reparented and parent_name != ROOT and view.unfinished_podgroups(parent_name) > 0:
        count = view.unfinished_podgroups(parent_name)
        errors.append(
            FieldError.invalid("spec.parent", parent_name, f"queue {parent_name} holds jobs ({count} unfinished podgroups); only leaf queues hold jobs")
        )
    errors += _ancestor_capability_errors(queue, view)
    errors += _descendant_capability_errors(queue, view)
    if parent_name != ROOT:
        errors += _sibling_sum_errors(queue, parent, view)
    errors += _children_sum_errors(queue, view)
    return errors


def _cycle_errors(queue: Queue, parent_name: str, view: ClusterView) -> list[FieldError]:
    path, current = [queue.name, parent_name], view.queue(parent_name)
    while current is not None and current.name != ROOT:
        up = current.spec.parent or ROOT
        path.append(up)
        if up == queue.name:
            return [FieldError.invalid("spec.parent", parent_name, "would make a cycle: " + " -> ".join(path))]
        if len(path) > 1000:
            break
        current = view.queue(up)
    return []


def _ancestor_capability_errors(queue: Queue, view: ClusterView) -> list[FieldError]:
    errors = []
    for name, value in resource_values(queue.spec.capability).items():
        ancestor = _nearest_ancestor_setting(queue, name, view)
        if ancestor is None:
            continue
        limit = resource_values(ancestor.spec.capability)[name]
        if value > limit:
            errors.append(
                _invalid(queue.spec.capability, "spec.capability", name, f"must be <= capability[{name}]={_q(name, limit)} of ancestor queue {ancestor.name}")
            )
    return errors


def _nearest_ancestor_setting(queue: Queue, resource: str, view: ClusterView) -> Queue | None:
    current, seen = view.queue(queue.spec.parent or ROOT), set()
    while current is not None and current.name != ROOT and current.name not in seen:
        seen.add(current.name)
        if resource_values(current.spec.capability).get(resource, 0) > 0:
            return current
        current = view.queue(current.spec.parent or ROOT)
    return None


def _descendant_capability_errors(queue: Queue, view: ClusterView) -> list[FieldError]:
    errors = []
    for name, value in resource_values(queue.spec.capability).items():
        for child in _descendants(queue.name, view):
            child_value = resource_values(child.spec.capability).get(name)
            if child_value is not None and child_value > value:
                errors.append(
                    _invalid(queue.spec.capability, "spec.capability", name, f"must be >= capability[{name}]={_q(name, child_value)} of descendant queue {child.name}")
                )
                break
    return errors


def _sibling_sum_errors(queue: Queue, parent: Queue, view: ClusterView) -> list[FieldError]:
    siblings = [q for q in view.queues() if (q.spec.parent or ROOT) == parent.name and q.name != queue.name]
    errors = []
    for field, path in (("deserved", "spec.deserved"), ("guarantee", "spec.guarantee.resource")):
        limits = resource_values(_field(parent, field))
        own = _field(queue, field)
        for name, value in resource_values(own).items():
            if name not in limits:
                continue
            total = value + sum(resource_values(_field(s, field)).get(name, Fraction(0)) for s in siblings)
            if total > limits[name]:
                errors.append(
                    _invalid(own, path, name, f"children of {parent.name} would have {field} {_q(name, total)} in total, more than its {field} {_q(name, limits[name])}")
                )
    return errors


def _children_sum_errors(queue: Queue, view: ClusterView) -> list[FieldError]:
    children = [q for q in view.queues() if (q.spec.parent or ROOT) == queue.name and q.name != queue.name]
    if not children:
        return []
    errors = []
    for field, path in (("deserved", "spec.deserved"), ("guarantee", "spec.guarantee.resource")):
        own = _field(queue, field)
        for name, value in resource_values(own).items():
            total = sum(resource_values(_field(c, field)).get(name, Fraction(0)) for c in children)
            if total > value:
                errors.append(_invalid(own, path, name, f"must be >= the sum of its children's {field} ({_q(name, total)})"))
    return errors


# ----------------------------------------------------------------------------- lifecycle rules


def _state_change_errors(old: Queue, new: Queue, view: ClusterView) -> list[FieldError]:
    desired = new.desired_state
    if new.name == ROOT and desired != QueueState.OPEN.value:
        return [FieldError.invalid("spec.state", desired, "the root queue can never be closed or suspended")]
    errors = _parent_state_errors(new, view)
    if desired == old.desired_state:
        return errors
    step = transition(old.state, action_for_desired_state(desired).value, view.unfinished_podgroups(old.name) > 0)
    if step.ignored:
        errors.append(FieldError.invalid("spec.state", desired, f"queue {old.name} is {old.state}: {step.ignored}"))
    return errors


def _parent_state_errors(queue: Queue, view: ClusterView) -> list[FieldError]:
    """A queue under a Closed or Closing parent must be Closed too."""
    parent_name = queue.spec.parent or ROOT
    parent = view.queue(parent_name) if queue.name != ROOT else None
    if parent is None or parent.state not in _CLOSED_STATES:
        return []
    if queue.desired_state == QueueState.CLOSED.value:
        return []
    return [
        FieldError.invalid(
            "spec.state",
            queue.desired_state,
            f"parent queue {parent_name} is {parent.state}; open the parent first",
        )
    ]


# ----------------------------------------------------------------------------- helpers


def _descendants(name: str, view: ClusterView) -> list[Queue]:
    """Every queue below ``name``, depth first, children in name order."""
    out: list[Queue] = []
    stack = [name]
    seen = {name}
    while stack:
        current = stack.pop()
        for queue in view.queues():
            if (queue.spec.parent or ROOT) == current and queue.name not in seen and queue.name != ROOT:
                seen.add(queue.name)
                out.append(queue)
                stack.append(queue.name)
    return out


def _field(queue: Queue, field: str) -> dict[str, str] | None:
    if field == "guarantee":
        return queue.guarantee_list
    return getattr(queue.spec, field)


def _resources(queue: Queue) -> tuple:
    return tuple(resource_values(_field(queue, f)) for f in _RESOURCE_FIELDS)


def _invalid(values: dict[str, str] | None, path: str, name: str, detail: str) -> FieldError:
    return FieldError.invalid(f"{path}.{name}", (values or {}).get(name), detail)


def _q(name: str, value: Fraction) -> str:
    return format_quantity(value, QuantityFormat.BINARY if name == "memory" else QuantityFormat.DECIMAL)
