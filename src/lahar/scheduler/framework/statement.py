"""Statement: tentative allocate / pipeline / evict operations, committed or discarded together.

Each operation changes the session at once (task status, node accounting, and the plugins' event
handlers keep queue shares live), and is remembered. ``commit`` turns allocations into binds and
evictions into real evictions (both recorded as decisions); ``discard`` undoes every operation
in reverse order. Pipelined tasks never bind: they hold their place for the next cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

from lahar.scheduler.api import ALLOCATED, PENDING, PIPELINED, RELEASING, RUNNING, TaskInfo
from lahar.scheduler.framework.session import Decision, Session

__all__ = ["Statement"]

EVICT, PIPELINE, ALLOCATE = "evict", "pipeline", "allocate"


@dataclass(init=False)  # its own __init__: compiled, the generated one is plain Python (cycle.JobOutcome)
class _Op:
    kind: str
    task: TaskInfo
    reason: str

    def __init__(self, kind: str, task: TaskInfo, reason: str = "") -> None:
        self.kind, self.task, self.reason = kind, task, reason


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[_Op] = []

    def has_evictions(self) -> bool:
        return any(op.kind == EVICT for op in self.operations)

    # ----------------------------------------------------------------- operations

    def evict(self, task: TaskInfo, reason: str) -> None:
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, RELEASING)
        node = ssn.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)
        ssn.fire_deallocate(task)
        ssn.evictions += 1
        self.operations.append(_Op(EVICT, task, reason))

    def pipeline(self, task: TaskInfo, node_name: str, eviction_occurred: bool = False) -> None:
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, PIPELINED)
        task.node_name = node_name
        task.eviction_occurred = eviction_occurred
        node = ssn.nodes.get(node_name)
        if node is not None:
            node.add_task(task)
        ssn.fire_allocate(task)
        ssn.pipelines += 1
        self.operations.append(_Op(PIPELINE, task))

    def allocate(self, task: TaskInfo, node_name: str) -> None:
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, ALLOCATED)
        task.node_name = node_name
        node = ssn.nodes.get(node_name)
        if node is not None:
            node.add_task(task)
        ssn.fire_allocate(task)
        self.operations.append(_Op(ALLOCATE, task))

    # ----------------------------------------------------------------- undo

    def _unevict(self, task: TaskInfo) -> None:
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, RUNNING)
        node = ssn.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)
        ssn.fire_allocate(task)
        ssn.evictions += 1

    def _unplace(self, task: TaskInfo) -> None:
        """Undo a pipeline or an allocation: back to Pending, off the node."""
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, PENDING)
        node = ssn.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        ssn.fire_deallocate(task)
        task.node_name = ""

    def unpipeline(self, task: TaskInfo) -> None:
        self._unplace(task)

    def discard(self) -> None:
        for op in reversed(self.operations):
            if op.kind == EVICT:
                self._unevict(op.task)
            else:
                self._unplace(op.task)
        self.operations = []

    # ----------------------------------------------------------------- commit

    def commit(self) -> None:
        ssn = self.ssn
        for op in self.operations:
            task = op.task
            job = ssn.jobs.get(task.job)
            queue = job.queue if job else None
            if op.kind == EVICT:
                ssn.record(Decision("evict", task.key, task.node_name, op.reason or None, queue, task.job))
            elif op.kind == PIPELINE:
                ssn.record(Decision("pipeline", task.key, task.node_name, None, queue, task.job))
            else:
                ssn.dispatch(task)
        self.operations = []

    def merge(self, *others: "Statement") -> None:
        for other in others:
            self.operations.extend(other.operations)
            other.operations = []
