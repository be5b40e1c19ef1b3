"""Pending reasons (``lahar.scheduler.reasons``): a job with nothing left waiting has none."""

from __future__ import annotations

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config


def _cluster(tasks: int) -> list:
    objects = [
        Node.model_validate({"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}),
        Queue.model_validate({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}}),
        PodGroup.model_validate({"metadata": {"name": "j", "namespace": "ns"}, "spec": {"queue": "default", "minMember": 1}, "status": {"phase": "Inqueue"}}),
    ]
    for t in range(tasks):
        objects.append(
            Pod.model_validate(
                {
                    "metadata": {"name": f"j-t-{t}", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": "j"}},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
                    "status": {"phase": "Pending"},
                }
            )
        )
    return objects


def test_a_job_bound_in_this_cycle_has_no_pending_reason():
    """Its phase moves to Running only in the next cycle; meanwhile it waits for nothing, even
    though its queue has now used all of its deserved share."""
    result = run_cycle(ClusterState.from_objects(_cluster(1)), load_config(default_config_text()), 0.0)
    assert [(d.type, d.task) for d in result.decisions] == [("bind", "ns/j-t-0")]
    assert result.jobs["ns/j"].reason is None


def test_a_task_left_behind_keeps_the_reason():
    result = run_cycle(ClusterState.from_objects(_cluster(2)), load_config(default_config_text()), 0.0)
    assert [d.type for d in result.decisions] == ["bind"]
    assert result.jobs["ns/j"].reason is not None


def test_a_podgroup_without_pods_yet_is_explained():
    result = run_cycle(ClusterState.from_objects(_cluster(0)), load_config(default_config_text()), 0.0)
    assert result.jobs["ns/j"].reason is not None
