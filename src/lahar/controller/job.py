"""Job lifecycle pieces shared by the simulator and the server.

- A bare pod that names no podgroup gets one of its own (as Volcano's podgroup controller does
  for pods it schedules): ``podgroup-<pod name>``, minMember 1, in the queue named by the pod's
  ``scheduling.volcano.sh/queue-name`` annotation or ``default``.
- A podgroup's phase and conditions come from the scheduler at the end of each cycle.
- An evicted pod returns to Pending with no node (Volcano's default restart), to run again.
"""

from __future__ import annotations

from lahar.model.base import GROUP_NAME_ANNOTATIONS, LAHAR_AT, LAHAR_DURATION, ObjectMeta
from lahar.model.workload import Pod, PodGroup, PodGroupSpec

__all__ = ["podgroup_for_bare_pod", "restart_pod", "QUEUE_NAME_ANNOTATION"]

QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"


def podgroup_for_bare_pod(pod: Pod) -> tuple[PodGroup, Pod]:
    """The podgroup a bare pod gets, and the pod annotated to join it."""
    name = f"podgroup-{pod.name}"
    queue = pod.metadata.annotations.get(QUEUE_NAME_ANNOTATION, "default")
    inherited = {k: v for k, v in pod.metadata.annotations.items() if k in (LAHAR_AT, LAHAR_DURATION)}
    group = PodGroup(
        metadata=ObjectMeta(name=name, namespace=pod.metadata.namespace, annotations=inherited, creation_timestamp=pod.metadata.creation_timestamp),
        spec=PodGroupSpec(min_member=1, queue=queue, priority_class_name=pod.spec.priority_class_name),
    )
    joined = pod.model_copy(deep=True)
    joined.metadata.annotations[GROUP_NAME_ANNOTATIONS[0]] = name
    return group, joined


def restart_pod(pod: Pod) -> Pod:
    """An evicted pod, recreated Pending and unbound."""
    fresh = pod.model_copy(deep=True)
    fresh.spec.node_name = None
    fresh.status.phase = "Pending"
    fresh.status.start_time = None
    fresh.status.nominated_node_name = None
    fresh.metadata.deletion_timestamp = None
    return fresh
