"""Fluent builders for test objects: ``queue("a").weight(3).capability(cpu="2").build()``.

Each builder returns a typed model; ``.manifest()`` gives the plain dict instead.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from lahar.model import Job, Node, Pod, PodGroup, PriorityClass, Queue
from lahar.model.cluster import Command
from lahar.scheduler.plugins import Plugin


def _step(method):
    """Builder steps work on a copy, so a shared builder can be extended without being changed."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        clone = copy.copy(self)
        clone.data = copy.deepcopy(self.data)
        return method(clone, *args, **kwargs)

    return wrapper


class _Builder:
    cls: type = object

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def _spec(self) -> dict[str, Any]:
        return self.data.setdefault("spec", {})

    @_step
    def annotate(self, **annotations: str) -> "_Builder":
        meta = self.data.setdefault("metadata", {})
        meta.setdefault("annotations", {}).update({k.replace("__", "/").replace("_", "-"): v for k, v in annotations.items()})
        return self

    @_step
    def annotation(self, key: str, value: str) -> "_Builder":
        self.data.setdefault("metadata", {}).setdefault("annotations", {})[key] = value
        return self

    def manifest(self) -> dict[str, Any]:
        return self.data

    def build(self):
        return self.cls.model_validate(self.data)


def _res(**values: Any) -> dict[str, str]:
    return {("nvidia.com/gpu" if k == "gpu" else k): str(v) for k, v in values.items()}


class QueueBuilder(_Builder):
    cls = Queue

    @_step
    def weight(self, value: Any) -> "QueueBuilder":
        self._spec()["weight"] = value
        return self

    @_step
    def capability(self, **values: Any) -> "QueueBuilder":
        self._spec()["capability"] = _res(**values)
        return self

    @_step
    def deserved(self, **values: Any) -> "QueueBuilder":
        self._spec()["deserved"] = _res(**values)
        return self

    @_step
    def guarantee(self, **values: Any) -> "QueueBuilder":
        self._spec()["guarantee"] = {"resource": _res(**values)}
        return self

    @_step
    def parent(self, name: str) -> "QueueBuilder":
        self._spec()["parent"] = name
        return self

    @_step
    def state(self, value: str) -> "QueueBuilder":
        self._spec()["state"] = value
        return self

    @_step
    def status(self, value: str) -> "QueueBuilder":
        self.data.setdefault("status", {})["state"] = value
        return self

    @_step
    def reclaimable(self, value: Any) -> "QueueBuilder":
        self._spec()["reclaimable"] = value
        return self

    @_step
    def priority(self, value: int) -> "QueueBuilder":
        self._spec()["priority"] = value
        return self


def queue(name: str) -> QueueBuilder:
    return QueueBuilder({"apiVersion": Queue.API_VERSION, "kind": "Queue", "metadata": {"name": name}, "spec": {}})


class JobBuilder(_Builder):
    cls = Job

    @_step
    def queue(self, name: str) -> "JobBuilder":
        self._spec()["queue"] = name
        return self

    @_step
    def min_available(self, value: int) -> "JobBuilder":
        self._spec()["minAvailable"] = value
        return self

    @_step
    def priority_class(self, name: str) -> "JobBuilder":
        self._spec()["priorityClassName"] = name
        return self

    @_step
    def tasks(self, replicas: int, name: str = "worker", **requests: Any) -> "JobBuilder":
        task = {
            "name": name,
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "main", "resources": {"requests": _res(**requests)}}]}},
        }
        self._spec().setdefault("tasks", []).append(task)
        return self


def job(name: str, namespace: str = "default") -> JobBuilder:
    return JobBuilder({"apiVersion": Job.API_VERSION, "kind": "Job", "metadata": {"name": name, "namespace": namespace}, "spec": {}})


class PodGroupBuilder(_Builder):
    cls = PodGroup

    @_step
    def queue(self, name: str) -> "PodGroupBuilder":
        self._spec()["queue"] = name
        return self

    @_step
    def min_member(self, value: int) -> "PodGroupBuilder":
        self._spec()["minMember"] = value
        return self

    @_step
    def min_resources(self, **values: Any) -> "PodGroupBuilder":
        self._spec()["minResources"] = _res(**values)
        return self

    @_step
    def phase(self, value: str) -> "PodGroupBuilder":
        self.data.setdefault("status", {})["phase"] = value
        return self


def podgroup(name: str, namespace: str = "default") -> PodGroupBuilder:
    return PodGroupBuilder(
        {"apiVersion": PodGroup.API_VERSION, "kind": "PodGroup", "metadata": {"name": name, "namespace": namespace}, "spec": {}}
    )


class PodBuilder(_Builder):
    cls = Pod

    @_step
    def requests(self, **values: Any) -> "PodBuilder":
        self._spec()["containers"] = [{"name": "main", "resources": {"requests": _res(**values)}}]
        return self

    @_step
    def group(self, name: str) -> "PodBuilder":
        return self.annotation("scheduling.k8s.io/group-name", name)  # type: ignore[return-value]

    @_step
    def on(self, node: str, phase: str = "Running") -> "PodBuilder":
        self._spec()["nodeName"] = node
        self.data.setdefault("status", {})["phase"] = phase
        return self


def pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": {}})


def node(name: str, **allocatable: Any) -> Node:
    return Node.model_validate({"metadata": {"name": name}, "status": {"allocatable": _res(**allocatable)}})


def priority_class(name: str, value: int) -> PriorityClass:
    return PriorityClass.model_validate({"metadata": {"name": name}, "value": value})


def command(queue_name: str, action: str, name: str = "cmd") -> Command:
    return Command.model_validate(
        {"metadata": {"name": name}, "action": action, "target": {"apiVersion": Queue.API_VERSION, "kind": "Queue", "name": queue_name}}
    )


def timed(name: str, queue_name: str, at: str, duration: str, cpu: str = "1") -> Job:
    """A one-task vcjob (task ``main``) that arrives at ``at`` and runs ``duration`` in a replay."""
    return job(name).queue(queue_name).tasks(1, name="main", cpu=cpu).annotation("lahar.dev/at", at).annotation("lahar.dev/duration", duration).build()


def sla_config(waiting_time: str | None = "30s") -> str:
    """A scheduler configuration with sla first (its ``sla-waiting-time`` argument), then
    priority, gang, proportion and predicates; without sla when ``waiting_time`` is None."""
    sla = f"  - name: sla\n    arguments:\n      sla-waiting-time: {waiting_time}\n" if waiting_time is not None else ""
    return f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
{sla}  - name: priority
  - name: gang
- plugins:
  - name: proportion
  - name: predicates
"""


class ClockWatcher(Plugin):
    """A plugin that reads the clock and cannot tell until when its answers hold (``register``
    it, then name ``clock-watcher`` in a configuration)."""

    name = "clock-watcher"

    def on_session_open(self, ssn) -> None:
        return None
