"""The queue controller: commands and status refresh as pure functions (events in, changes out).

``apply_action`` carries out one OpenQueue / CloseQueue / SuspendQueue / ResumeQueue on a queue
and, for a parent, on its descendants first (SPEC section 3). ``refresh`` keeps each queue's
status current: podgroup counts per phase, Closing -> Closed once nothing unfinished remains,
and a queue whose desired state changed (an API update of ``spec.state``) moved accordingly.

Nothing here reads a clock or a store: callers pass the queues and a function that counts a
queue's unfinished podgroups, and apply the returned queue copies and events themselves.

Hierarchy rules:
- Close, Suspend and Resume on a parent act on every descendant first, deepest first.
- A queue closed because its parent closed is marked ``lahar.dev/closed-by-parent: "true"``;
  opening the parent reopens exactly those, and only those.
- Opening a queue whose parent is Closed or Closing is refused, with an event saying why.
- ``root`` is never closed or suspended; such a command is refused with an event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Mapping

from lahar.controller.lifecycle import transition
from lahar.model.queue import ROOT, Queue, QueueAction, QueueState, QueueStatus
from lahar.model.workload import PodGroup

__all__ = ["QueueEvent", "Changes", "apply_action", "refresh", "descendants", "CLOSED_BY_PARENT", "count_phases"]

CLOSED_BY_PARENT = "lahar.dev/closed-by-parent"
_DESIRED = {
    QueueState.OPEN: QueueState.OPEN.value,
    QueueState.SUSPENDED: QueueState.SUSPENDED.value,
    QueueState.CLOSING: QueueState.CLOSED.value,
    QueueState.CLOSED: QueueState.CLOSED.value,
}
_DESIRED_BY_NAME = {state.value: desired for state, desired in _DESIRED.items()}  # refresh asks per queue, twice a cycle
_MOVE_TO = {"Open": "OpenQueue", "Closed": "CloseQueue", "Suspended": "SuspendQueue"}
# the enum members' values, read once (an enum member's ``value`` is a descriptor call)
_UNKNOWN, _CLOSING, _CLOSED = QueueState.UNKNOWN.value, QueueState.CLOSING.value, QueueState.CLOSED.value
_SYNC = QueueAction.SYNC.value
# each podgroup phase and the queue status field that counts it
_PHASE_FIELDS = {"Pending": "pending", "Inqueue": "inqueue", "Running": "running", "Unknown": "unknown", "Completed": "completed"}


@dataclass(frozen=True)
class QueueEvent:
    """Something a person should see on a queue: a state change, or a command refused or ignored."""

    queue: str
    reason: str
    message: str
    type: str = "Normal"

    def to_json(self) -> dict[str, str]:
        return {"queue": self.queue, "type": self.type, "reason": self.reason, "message": self.message}


@dataclass
class Changes:
    queues: dict[str, Queue] = field(default_factory=dict)
    events: list[QueueEvent] = field(default_factory=list)
    # ``refresh``: the queues it looked at and found up to date (no action to carry out, the
    # counts as written), in name order
    settled: list[str] = field(default_factory=list)

    def merge(self, other: "Changes") -> None:
        self.queues.update(other.queues)
        self.events.extend(other.events)


def descendants(queues: Mapping[str, Queue], name: str) -> list[Queue]:
    """Every queue below ``name``, deepest first (children in name order)."""
    children = sorted((q for q in queues.values() if q.parent_name == name and q.name != name), key=lambda q: q.name)
    out: list[Queue] = []
    for child in children:
        out.extend(descendants(queues, child.name))
        out.append(child)
    return out


def apply_action(
    queues: Mapping[str, Queue], name: str, action: str, unfinished: Callable[[str], int]
) -> Changes:
    """Carry out ``action`` on queue ``name`` (and its descendants). Unknown queue: an event only."""
    current = dict(queues)
    changes = Changes()
    queue = current.get(name)
    if queue is None:
        changes.events.append(QueueEvent(name, action, f"queue {name} does not exist", "Warning"))
        return changes
    if name == ROOT and action in (QueueAction.CLOSE.value, QueueAction.SUSPEND.value):
        changes.events.append(QueueEvent(name, action, "the root queue can never be closed or suspended", "Warning"))
        return changes
    if action == QueueAction.OPEN.value:
        return _open(current, queue, unfinished)
    if action in (QueueAction.CLOSE.value, QueueAction.SUSPEND.value, QueueAction.RESUME.value):
        for child in descendants(current, name):
            step = _move(current[child.name], action, unfinished, by_parent=True)
            current.update(step.queues)
            changes.merge(step)
    step = _move(current[name], action, unfinished, by_parent=False)
    changes.merge(step)
    return changes


def _open(current: dict[str, Queue], queue: Queue, unfinished: Callable[[str], int]) -> Changes:
    changes = Changes()
    parent = current.get(queue.parent_name or "") if queue.parent_name else None
    if parent is not None and parent.name != ROOT and parent.state in (QueueState.CLOSED.value, QueueState.CLOSING.value):
        message = f"cannot open queue {queue.name}: its parent queue {parent.name} is {parent.state}; open the parent first"
        changes.events.append(QueueEvent(queue.name, QueueAction.OPEN.value, message, "Warning"))
        return changes
    step = _move(queue, QueueAction.OPEN.value, unfinished, by_parent=False)
    changes.merge(step)
    current.update(step.queues)
    for child in sorted(current.values(), key=lambda q: q.name):
        if child.parent_name == queue.name and child.name != queue.name and child.annotations.get(CLOSED_BY_PARENT) == "true":
            changes.merge(_open(current, child, unfinished))
    return changes


def _move(queue: Queue, action: str, unfinished: Callable[[str], int], by_parent: bool) -> Changes:
    changes = Changes()
    step = transition(queue.state, action, unfinished(queue.name) > 0)
    if step.ignored:
        changes.events.append(QueueEvent(queue.name, action, f"ignored: queue {queue.name} is {queue.state}: {step.ignored}"))
        return changes
    updated = queue.model_copy(deep=True)
    updated.status.state = step.target.value
    updated.spec.state = _DESIRED.get(step.target, updated.spec.state)
    if action == QueueAction.CLOSE.value:
        if by_parent and step.changes:
            updated.metadata.annotations[CLOSED_BY_PARENT] = "true"
    elif action == QueueAction.OPEN.value:
        updated.metadata.annotations.pop(CLOSED_BY_PARENT, None)
    if updated.dump() != queue.dump():
        changes.queues[queue.name] = updated
    if step.changes:
        why = " because its parent was acted on" if by_parent else ""
        changes.events.append(QueueEvent(queue.name, action, f"queue {queue.name}: {queue.state} -> {step.target.value}{why}"))
    return changes


def count_phases(podgroups: list[PodGroup]) -> dict[str, int]:
    """Podgroups per phase, in the shape ``refresh`` takes."""
    counts = {phase: 0 for phase in ("Pending", "Inqueue", "Running", "Unknown", "Completed")}
    for group in podgroups:
        phase = group.status.phase or "Pending"
        if phase in counts:
            counts[phase] += 1
    return counts


def refresh(
    queues: Mapping[str, Queue], phase_counts: Callable[[str], Mapping[str, int]], only: Collection[str] | None = None
) -> Changes:
    """Bring every queue's status up to date with its podgroups and its desired state.

    ``phase_counts(queue)`` gives the queue's podgroups per phase (Pending, Inqueue, Running,
    Unknown, Completed). ``only``: the queues to look at, every one when None. The caller
    vouches that each queue left out was found up to date (``Changes.settled``) and that
    neither it nor its counts moved since: nothing would change it but another queue's action,
    so when a queue looked at has an action to carry out, every queue is looked at.
    """
    changes = Changes()
    current = dict(queues)

    def unfinished(name: str) -> int:
        return sum(n for phase, n in phase_counts(name).items() if phase != "Completed")

    for name in sorted(current):
        if only is not None and name not in only:
            continue
        queue = current[name]
        action = _pending_action(queue)
        if action is not None:
            if only is not None:
                return refresh(queues, phase_counts)  # the action may move queues left out
            step = apply_action(current, name, action, unfinished)
            current.update(step.queues)
            changes.merge(step)
            queue = current[name]
        counts = _moved_counts(queue.status, phase_counts(name))
        if counts is not None:
            # a new status over the same spec and metadata: objects are replaced, never changed
            # in place (a deep copy of each queue written was most of what this cost a replay)
            base = changes.queues.get(name, queue)
            updated = base.model_copy(update={"status": base.status.model_copy(update=counts)})
            changes.queues[name] = updated
            current[name] = updated
        elif action is None:
            changes.settled.append(name)
    return changes


def _moved_counts(status: QueueStatus, counts: Mapping[str, int]) -> dict[str, int] | None:
    """The status fields of ``counts`` (podgroups per phase), when one differs from ``status``;
    None when every one reads the same. Refresh asks this of every queue, twice a replay step:
    the five fields read at once, not one ``getattr`` and one lowered name per phase."""
    known = (status.pending, status.inqueue, status.running, status.unknown, status.completed)
    get = counts.get
    if len(counts) == len(_PHASE_FIELDS) and (get("Pending"), get("Inqueue"), get("Running"), get("Unknown"), get("Completed")) == known:
        return None
    moved = {_PHASE_FIELDS.get(phase) or phase.lower(): n for phase, n in counts.items()}
    if all(getattr(status, field) == n for field, n in moved.items()):
        return None
    return moved


def _pending_action(queue: Queue) -> str | None:
    """The action that brings the observed state in line with the desired one, if any."""
    observed, desired = queue.status.state or "", queue.desired_state
    if not observed:
        return _MOVE_TO.get(desired)
    if observed == _UNKNOWN:
        return None
    if observed == _CLOSING and desired == _CLOSED:
        return _SYNC
    settled = _DESIRED_BY_NAME.get(observed)
    if settled is None:
        raise ValueError(f"{observed!r} is not a valid {QueueState.__name__}")
    if settled == desired:
        return None
    return _MOVE_TO[desired]
