"""Choosing which victims to evict on one node, Volcano's way or Lahar's.

Volcano evicts victims in victim order until the task fits (``evict_in_order``). That can evict
more than needed: an early small victim stays evicted even when a later large one alone would
have made room. Lahar's ``choose_minimal`` (action argument ``minimalVictims: true``) picks a set
where no victim can be spared, and with ``protectDeserved: true`` never takes a victim whose queue
would fall below its deserved share.
"""

from __future__ import annotations

from typing import Callable

from lahar.resources import MIN_RESOURCE, Dim, Resource
from lahar.scheduler.api import TaskInfo
from lahar.scheduler.framework.session import Session
from lahar.scheduler.pqueue import PriorityQueue

__all__ = ["choose_minimal", "keeps_deserved"]


def choose_minimal(
    ordered: PriorityQueue[TaskInfo],
    available: Resource,
    request: Resource,
    allowed: Callable[[TaskInfo, dict[str, Resource]], bool],
) -> list[TaskInfo] | None:
    """Victims to evict so that ``request`` fits in ``available``; None when no set works.

    Greedy in victim order (least important first), skipping victims ``allowed`` refuses, then
    drop every victim the others make unnecessary (most important first). If the greedy pass
    cannot make room, the first single victim that makes room alone is taken.
    """
    victims = []
    while not ordered.empty():
        victims.append(ordered.pop())
    if request.less_equal(available, Dim.ZERO):
        return []
    taken: list[TaskInfo] = []
    given: dict[str, Resource] = {}
    room = available.clone()
    for victim in victims:
        if request.less_equal(room, Dim.ZERO):
            break
        if allowed(victim, given):
            taken.append(victim)
            room.add(victim.resreq)
            given.setdefault(victim.job, Resource()).add(victim.resreq)
    if request.less_equal(room, Dim.ZERO):
        return _prune(taken, available, request)
    for victim in victims:
        if allowed(victim, {}) and request.less_equal(available.clone().add(victim.resreq), Dim.ZERO):
            return [victim]
    return None


def _prune(taken: list[TaskInfo], available: Resource, request: Resource) -> list[TaskInfo]:
    kept = list(taken)
    for victim in reversed(taken):
        trial = [v for v in kept if v is not victim]
        room = available.clone()
        for v in trial:
            room.add(v.resreq)
        if request.less_equal(room, Dim.ZERO):
            kept = trial
    return kept


def keeps_deserved(ssn: Session) -> Callable[[TaskInfo, dict[str, Resource]], bool]:
    """A victim is allowed only if its queue's share stays at or above 1 once the victim (and
    what the queue already gives up in this choice, ``given`` per job) is gone.

    The share is the largest ratio, over the resources the queue deserves (``pods`` aside), of
    allocated to deserved: a queue above its share in cpu may give cpu back even where its
    memory is exactly at its deserved amount.
    """

    def allowed(victim: TaskInfo, given: dict[str, Resource]) -> bool:
        job = ssn.jobs.get(victim.job)
        if job is None:
            return True
        queue = ssn.queues.get(job.queue)
        deserved = ssn.queue_deserved(queue) if queue else None
        attr = ssn.queue_attrs.get(job.queue)
        if deserved is None or attr is None:
            return True
        after = attr.allocated.clone().sub(victim.resreq)
        for other_job, amount in given.items():
            other = ssn.jobs.get(other_job)
            if other is not None and other.queue == job.queue:
                after.sub(amount)
        ratios = [after.get(name) / value for name, value in deserved.dims() if name != "pods" and value >= MIN_RESOURCE]
        return not ratios or max(ratios) >= 1.0 - 1e-9

    return allowed
