"""Scheduler actions, one module each: enqueue, allocate, backfill, preempt, reclaim."""

from typing import Callable

from lahar.scheduler.actions import allocate, backfill, enqueue, preempt, reclaim
from lahar.scheduler.framework.session import Session

ACTIONS: dict[str, Callable[[Session], None]] = {
    "enqueue": enqueue.execute,
    "allocate": allocate.execute,
    "backfill": backfill.execute,
    "preempt": preempt.execute,
    "reclaim": reclaim.execute,
}

__all__ = ["ACTIONS"]
