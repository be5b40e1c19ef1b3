"""Queue: a share of the cluster for a team (``scheduling.volcano.sh/v1beta1``).

``spec.state`` is the state the admin asks for (Open, Closed, Suspended); ``status.state`` is the
state the queue is in (Open, Closing, Closed, Unknown, Suspended), kept by the queue controller.
Volcano has only the status field; a manifest that sets only ``status.state`` is read as asking
for that state (see ``Queue.desired_state``).
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

from pydantic import Field

from lahar.model.base import ApiObject, K8sModel, ResourceList, StrictBool, StrictInt

__all__ = ["Queue", "QueueSpec", "QueueStatus", "QueueState", "QueueAction", "Guarantee", "ROOT", "DEFAULT"]

ROOT = "root"
DEFAULT = "default"
MAX_WEIGHT = 2**31 - 1


class QueueState(str, Enum):
    OPEN = "Open"
    CLOSING = "Closing"
    CLOSED = "Closed"
    UNKNOWN = "Unknown"
    SUSPENDED = "Suspended"


# States a user may ask for in spec.state (the others are reached, not requested).
SETTABLE_STATES = (QueueState.OPEN.value, QueueState.CLOSED.value, QueueState.SUSPENDED.value)


class QueueAction(str, Enum):
    OPEN = "OpenQueue"
    CLOSE = "CloseQueue"
    SUSPEND = "SuspendQueue"
    RESUME = "ResumeQueue"
    SYNC = "SyncQueue"


class Guarantee(K8sModel):
    resource: ResourceList | None = None


class QueueSpec(K8sModel):
    weight: StrictInt = 1
    capability: ResourceList | None = None
    deserved: ResourceList | None = None
    guarantee: Guarantee | None = None
    reclaimable: StrictBool | None = None
    parent: str | None = None
    priority: StrictInt | None = None
    state: str | None = None


class QueueStatus(K8sModel):
    state: str | None = None
    pending: StrictInt = 0
    inqueue: StrictInt = 0
    running: StrictInt = 0
    unknown: StrictInt = 0
    completed: StrictInt = 0
    allocated: ResourceList | None = None


class Queue(ApiObject):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "Queue"
    NAMESPACED: ClassVar[bool] = False

    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus = Field(default_factory=QueueStatus)

    @property
    def reclaimable(self) -> bool:
        """``spec.reclaimable``; unset means true."""
        return self.spec.reclaimable is not False

    @property
    def parent_name(self) -> str | None:
        """The parent queue; unset means ``root`` (``None`` for root itself)."""
        if self.name == ROOT:
            return None
        return self.spec.parent or ROOT

    @property
    def guarantee_list(self) -> dict[str, str]:
        return dict((self.spec.guarantee.resource or {}) if self.spec.guarantee else {})

    @property
    def desired_state(self) -> str:
        """What the admin asked for: ``spec.state``, else a settable ``status.state``, else Open."""
        if self.spec.state:
            return self.spec.state
        if self.status.state in SETTABLE_STATES:
            return self.status.state
        if self.status.state == QueueState.CLOSING.value:
            return QueueState.CLOSED.value
        return QueueState.OPEN.value

    @property
    def state(self) -> str:
        """The state the queue is in: ``status.state``, else the desired state."""
        return self.status.state or self.desired_state
