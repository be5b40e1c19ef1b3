"""Pods and PodGroups: the units the scheduler places and the gangs it admits.

A PodGroup (``scheduling.volcano.sh/v1beta1``) is one *job* for the scheduler: its tasks are the
Pods that name it in the ``scheduling.k8s.io/group-name`` (or ``scheduling.volcano.sh/group-name``)
annotation. ``Pod.requests()`` computes what a pod asks for the way Kubernetes does: the sum of
its containers' requests (a missing request defaults to the limit), raised per dimension to any
single init container's request.
"""

from __future__ import annotations

from enum import Enum
from fractions import Fraction
from typing import ClassVar

from pydantic import Field

from lahar.model.base import (
    GROUP_NAME_ANNOTATIONS,
    ApiObject,
    K8sModel,
    ObjectMeta,
    ResourceList,
    StrictInt,
)
from lahar.quantity import parse_quantity

__all__ = [
    "PodGroup",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodGroupCondition",
    "PodGroupPhase",
    "Pod",
    "PodSpec",
    "PodStatus",
    "PodPhase",
    "Container",
    "ResourceRequirements",
    "PodTemplateSpec",
]


class PodGroupPhase(str, Enum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class PodPhase(str, Enum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class PodGroupSpec(K8sModel):
    min_member: StrictInt = 0
    min_task_member: dict[str, StrictInt] | None = None
    queue: str = "default"
    priority_class_name: str | None = None
    min_resources: ResourceList | None = None


class PodGroupCondition(K8sModel):
    type: str = ""
    status: str = "True"
    transition_id: str | None = None
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class PodGroupStatus(K8sModel):
    phase: str | None = None
    conditions: list[PodGroupCondition] = Field(default_factory=list)
    running: StrictInt = 0
    succeeded: StrictInt = 0
    failed: StrictInt = 0


class PodGroup(ApiObject):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "PodGroup"

    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)

    @property
    def queue(self) -> str:
        return self.spec.queue or "default"


class ResourceRequirements(K8sModel):
    requests: ResourceList | None = None
    limits: ResourceList | None = None

    def effective_requests(self) -> dict[str, str]:
        """Requests, each missing one defaulted to its limit (Kubernetes API defaulting)."""
        out = dict(self.limits or {})
        out.update(self.requests or {})
        return out


class Container(K8sModel):
    name: str = ""
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    restart_policy: str | None = None


class PodSpec(K8sModel):
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    node_name: str | None = None
    node_selector: dict[str, str] | None = None
    priority: StrictInt | None = None
    priority_class_name: str | None = None
    preemption_policy: str | None = None
    scheduler_name: str | None = None
    restart_policy: str | None = None
    tolerations: list[dict] | None = None


class PodStatus(K8sModel):
    phase: str | None = None
    nominated_node_name: str | None = None
    conditions: list[dict] = Field(default_factory=list)
    start_time: str | None = None


class PodTemplateSpec(K8sModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


class Pod(ApiObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Pod"

    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    @property
    def group_name(self) -> str | None:
        """The podgroup this pod belongs to, from its annotations (or labels)."""
        for key in GROUP_NAME_ANNOTATIONS:
            value = self.metadata.annotations.get(key) or self.metadata.labels.get(key)
            if value:
                return value
        return None

    @property
    def phase(self) -> str:
        return self.status.phase or PodPhase.PENDING.value

    def requests(self) -> dict[str, Fraction]:
        """Total requests as exact numbers per resource name (see module docstring).

        Sidecar init containers (``restartPolicy: Always``) run beside the main containers, so
        their requests are added; other init containers run one at a time before them, so each
        only raises the total to its own request.
        """
        total: dict[str, Fraction] = {}
        sidecars = [c for c in self.spec.init_containers if c.restart_policy == "Always"]
        for container in [*self.spec.containers, *sidecars]:
            for name, qty in container.resources.effective_requests().items():
                exact = parse_quantity(qty)
                total[name] = total[name] + exact if name in total else exact  # no Fraction(0) added first
        for container in self.spec.init_containers:
            if container.restart_policy == "Always":
                continue
            for name, qty in container.resources.effective_requests().items():
                total[name] = max(total.get(name, Fraction(0)), parse_quantity(qty))
        return total
