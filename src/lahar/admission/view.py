"""What admission may know about the cluster: a read-only view of queues and their jobs.

Admission rules are pure functions of (object, view). The API server passes a view over its
store; the simulator and the tests pass ``ObjectsView`` over a plain list of objects.
"""

from __future__ import annotations

from typing import Iterable, Protocol

from lahar.model.base import ApiObject
from lahar.model.queue import DEFAULT, ROOT, Queue
from lahar.model.workload import PodGroup, PodGroupPhase

__all__ = ["ClusterView", "ObjectsView", "LiveView", "builtin_queue"]

_FINISHED = {PodGroupPhase.COMPLETED.value}
_PHASES = tuple(phase.value for phase in PodGroupPhase)  # read twice a cycle per queue: no enum walked each time


class ClusterView(Protocol):
    def queue(self, name: str) -> Queue | None:
        """The queue named ``name`` (``root`` and ``default`` always exist)."""

    def queues(self) -> list[Queue]:
        """Every queue, sorted by name."""

    def unfinished_podgroups(self, queue: str) -> int:
        """How many podgroups of ``queue`` are not Completed."""


def builtin_queue(name: str) -> Queue:
    """The ``root`` or ``default`` queue as Lahar creates it when it is missing."""
    queue = Queue.model_validate({"metadata": {"name": name}, "spec": {"weight": 1}})
    queue.spec.reclaimable = name != ROOT
    if name != ROOT:
        queue.spec.parent = ROOT
    queue.status.state = "Open"
    return queue


class ObjectsView:
    """A view over a list of objects; ``root`` and ``default`` are added when absent."""

    def __init__(self, objects: Iterable[ApiObject] = (), *, implicit_queues: bool = True) -> None:
        self._queues: dict[str, Queue] = {}
        self._podgroups: dict[str, list[PodGroup]] = {}
        if implicit_queues:
            for name in (ROOT, DEFAULT):
                self._queues[name] = builtin_queue(name)
        for obj in objects:
            self.add(obj)

    def add(self, obj: ApiObject) -> None:
        if isinstance(obj, Queue):
            self._queues[obj.name] = obj
        elif isinstance(obj, PodGroup):
            self._podgroups.setdefault(obj.queue, []).append(obj)

    def queue(self, name: str) -> Queue | None:
        return self._queues.get(name)

    def queues(self) -> list[Queue]:
        return [self._queues[name] for name in sorted(self._queues)]

    def unfinished_podgroups(self, queue: str) -> int:
        return sum(1 for pg in self._podgroups.get(queue, []) if pg.status.phase not in _FINISHED)


class LiveView:
    """A ``ClusterView`` kept up to date object by object (``put`` / ``remove``): queues by name and
    a running count of unfinished podgroups per queue, so that admission reads in O(1).

    ``generation`` moves whenever what the view holds may read differently: a queue put or removed,
    a podgroup come, gone, or moved to another queue or phase (a podgroup put again as it was,
    and any other object, leave it). The same generation means the same queues and counts.
    ``queue_mark`` tells the same of one queue: its object and its counts."""

    generation = 0  # a class default: a view pickled before it had one reads 0
    _marks: dict[str, int] | None = None  # a class default too: a view pickled before has none

    def __init__(self) -> None:
        self._queues: dict[str, Queue] = {}
        self._groups: dict[str, tuple[str, str]] = {}  # key -> (queue, phase)
        self._phases: dict[str, dict[str, int]] = {}  # queue -> phase -> count
        self._marks = {}  # queue name -> the generation its queue or its counts last moved at

    def queue_mark(self, name: str) -> int:
        """The generation at which queue ``name`` or its podgroup counts last moved (-1: not
        since this view was made or loaded). The same mark means the same queue and counts."""
        marks = self._marks
        return marks.get(name, -1) if marks is not None else -1

    def _moved(self, queue: str) -> None:
        self.generation += 1
        marks = self._marks
        if marks is None:
            marks = self._marks = {}
        marks[queue] = self.generation

    def put(self, obj: ApiObject) -> None:
        if isinstance(obj, Queue):
            self._queues[obj.name] = obj
            self._moved(obj.name)
        elif isinstance(obj, PodGroup):
            self.put_group(obj.key, obj.queue, obj.status.phase)

    def put_group(self, key: str, queue: str, phase: str | None) -> None:
        """A podgroup as it now is, by what the view keeps of it: its queue and phase."""
        phase = phase or PodGroupPhase.PENDING.value
        if self._groups.get(key) == (queue, phase):
            return  # counted as it is
        self.remove_group(key)
        self._groups[key] = (queue, phase)
        counts = self._phases.get(queue)
        if counts is None:
            counts = self._phases[queue] = dict.fromkeys(_PHASES, 0)  # every phase, in order: ``phase_counts`` copies it
        counts[phase] = counts.get(phase, 0) + 1
        self._moved(queue)

    def remove(self, obj: ApiObject) -> None:
        if isinstance(obj, Queue):
            self._queues.pop(obj.name, None)
            self._moved(obj.name)
        elif isinstance(obj, PodGroup):
            self.remove_group(obj.key)

    def remove_group(self, key: str) -> None:
        old = self._groups.pop(key, None)
        if old is not None:
            self._phases[old[0]][old[1]] -= 1
            self._moved(old[0])

    def phase_counts(self, queue: str) -> dict[str, int]:
        """Podgroups of ``queue`` per phase (zero counts included)."""
        counts = self._phases.get(queue)
        if counts is None:
            return dict.fromkeys(_PHASES, 0)
        if tuple(counts) == _PHASES:  # the phases alone, in order (``put_group`` makes them so)
            return dict(counts)
        return {phase: counts.get(phase, 0) for phase in _PHASES}

    def queue(self, name: str) -> Queue | None:
        return self._queues.get(name)

    def queues(self) -> list[Queue]:
        return [self._queues[name] for name in sorted(self._queues)]

    def unfinished_podgroups(self, queue: str) -> int:
        return sum(n for phase, n in self._phases.get(queue, {}).items() if phase not in _FINISHED)
