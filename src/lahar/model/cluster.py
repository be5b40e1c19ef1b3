"""Nodes, priority classes and commands: the cluster around the queues.

A ``Command`` (``bus.volcano.sh/v1alpha1``) asks the queue controller to act on a queue
(OpenQueue, CloseQueue, SuspendQueue, ResumeQueue, SyncQueue). Like Volcano's it has no
spec/status split: ``action`` and ``target`` sit at the top level.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from lahar.model.base import ApiObject, K8sModel, OwnerReference, ResourceList, StrictBool, StrictInt

__all__ = ["Node", "NodeSpec", "NodeStatus", "PriorityClass", "Command", "SchedulerConfiguration"]


class NodeSpec(K8sModel):
    unschedulable: StrictBool | None = None
    taints: list[dict] | None = None


class NodeStatus(K8sModel):
    allocatable: ResourceList | None = None
    capacity: ResourceList | None = None
    conditions: list[dict] = Field(default_factory=list)

    def ready(self) -> bool:
        """False only when a ``Ready`` condition says so; a node without conditions is ready."""
        for condition in self.conditions:
            if condition.get("type") == "Ready":
                return str(condition.get("status", "True")) == "True"
        return True


class Node(ApiObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Node"
    NAMESPACED: ClassVar[bool] = False

    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def allocatable(self) -> dict[str, str]:
        """``status.allocatable``, falling back to ``status.capacity``."""
        return dict(self.status.allocatable or self.status.capacity or {})


class PriorityClass(ApiObject):
    API_VERSION: ClassVar[str] = "scheduling.k8s.io/v1"
    KIND: ClassVar[str] = "PriorityClass"
    NAMESPACED: ClassVar[bool] = False

    value: StrictInt = 0
    global_default: StrictBool | None = None
    preemption_policy: str | None = None
    description: str | None = None


class Command(ApiObject):
    API_VERSION: ClassVar[str] = "bus.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "Command"

    action: str = ""
    target: OwnerReference | None = None
    reason: str | None = None
    message: str | None = None

    @property
    def is_for_queue(self) -> bool:
        """True when the target is a Queue (Volcano's ``IsQueueReference``)."""
        return self.target is not None and self.target.kind == "Queue"


class SchedulerConfiguration(ApiObject):
    """Volcano's scheduler configuration carried as a manifest (``lahar.dev/v1alpha1``).

    Same fields as Volcano's ``volcano-scheduler.conf``: ``actions`` (comma-separated),
    ``tiers`` (lists of plugins with ``enable*`` flags and ``arguments``) and per-action
    ``configurations``. Read by ``lahar.scheduler.framework.config``.
    """

    API_VERSION: ClassVar[str] = "lahar.dev/v1alpha1"
    KIND: ClassVar[str] = "SchedulerConfiguration"
    NAMESPACED: ClassVar[bool] = False

    actions: str = ""
    tiers: list[dict] = Field(default_factory=list)
    configurations: list[dict] = Field(default_factory=list)
