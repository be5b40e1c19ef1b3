"""The queue lifecycle as one explicit table: (state, action) -> outcome.

This is SPEC section 3's table, the single source of truth for every place that moves a queue:
Command objects, the CLI's ``queue operate``, API updates of ``spec.state``, and hierarchy
propagation. Pure data plus two small functions; no I/O.

An outcome is a target state, ``CLOSE`` (Closing while the queue holds unfinished podgroups,
Closed otherwise), or ``IGNORED`` with the reason that goes into the event left on the queue.
"""

from __future__ import annotations

from dataclasses import dataclass

from lahar.model.queue import QueueAction, QueueState

__all__ = ["Transition", "transition", "TABLE", "action_for_desired_state"]

OPEN, CLOSING, CLOSED, UNKNOWN, SUSPENDED = (
    QueueState.OPEN,
    QueueState.CLOSING,
    QueueState.CLOSED,
    QueueState.UNKNOWN,
    QueueState.SUSPENDED,
)
A_OPEN, A_CLOSE, A_SUSPEND, A_RESUME = (
    QueueAction.OPEN,
    QueueAction.CLOSE,
    QueueAction.SUSPEND,
    QueueAction.RESUME,
)

_CLOSE = "close"  # resolves to Closing or Closed by the queue's podgroups
_CLOSED_IS_FINAL = "a Closed queue's life has ended: open it first"

# (from, action) -> target state, _CLOSE, or ("ignored", reason)
TABLE: dict[tuple[QueueState, QueueAction], object] = {
    (OPEN, A_OPEN): OPEN,
    (OPEN, A_CLOSE): _CLOSE,
    (OPEN, A_SUSPEND): SUSPENDED,
    (OPEN, A_RESUME): OPEN,
    (CLOSING, A_OPEN): OPEN,
    (CLOSING, A_CLOSE): _CLOSE,
    (CLOSING, A_SUSPEND): SUSPENDED,
    (CLOSING, A_RESUME): CLOSING,
    (CLOSED, A_OPEN): OPEN,
    (CLOSED, A_CLOSE): CLOSED,
    (CLOSED, A_SUSPEND): ("ignored", _CLOSED_IS_FINAL),
    (CLOSED, A_RESUME): ("ignored", _CLOSED_IS_FINAL),
    (SUSPENDED, A_OPEN): OPEN,
    (SUSPENDED, A_CLOSE): _CLOSE,
    (SUSPENDED, A_SUSPEND): SUSPENDED,
    (SUSPENDED, A_RESUME): OPEN,
    (UNKNOWN, A_OPEN): OPEN,
    (UNKNOWN, A_CLOSE): _CLOSE,
    (UNKNOWN, A_SUSPEND): SUSPENDED,
    (UNKNOWN, A_RESUME): UNKNOWN,
}


@dataclass(frozen=True)
class Transition:
    """Where an action takes a queue. ``ignored`` carries the reason when nothing changes by rule."""

    source: QueueState
    action: QueueAction
    target: QueueState
    ignored: str | None = None

    @property
    def changes(self) -> bool:
        return self.target != self.source


def transition(state: str, action: str, holds_unfinished_jobs: bool) -> Transition:
    """Apply the table. ``state`` and ``action`` are their string values.

    SyncQueue (and any other action string, as in Volcano) keeps the state, except that a Closing
    queue holding no unfinished podgroup becomes Closed. Raises ``ValueError`` for an unknown state.
    """
    source = QueueState(state or QueueState.OPEN.value)
    try:
        act = QueueAction(action)
    except ValueError:
        act = QueueAction.SYNC
    if act is QueueAction.SYNC:
        target = CLOSED if source is CLOSING and not holds_unfinished_jobs else source
        return Transition(source, act, target)
    outcome = TABLE[(source, act)]
    if outcome == _CLOSE:
        return Transition(source, act, CLOSING if holds_unfinished_jobs else CLOSED)
    if isinstance(outcome, tuple):
        return Transition(source, act, source, ignored=outcome[1])
    assert isinstance(outcome, QueueState)
    return Transition(source, act, outcome)


def action_for_desired_state(desired: str) -> QueueAction:
    """The action that an update of ``spec.state`` to ``desired`` stands for."""
    return {
        QueueState.OPEN.value: QueueAction.OPEN,
        QueueState.CLOSED.value: QueueAction.CLOSE,
        QueueState.SUSPENDED.value: QueueAction.SUSPEND,
    }[desired]
