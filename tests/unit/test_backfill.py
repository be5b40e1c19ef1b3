"""backfill: pods that ask for nothing (best effort) are placed by backfill, not by allocate,
on a node whose predicates pass, even a node with no idle resources left."""

from __future__ import annotations

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import load_config

CONF = {"tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}, {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"}]}]}


def _pod(name: str, group: str, cpu: str | None, node: str | None = None) -> Pod:
    resources = {"requests": {"cpu": cpu}} if cpu else {}
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": {"containers": [{"name": "c", "resources": resources}], **({"nodeName": node} if node else {})},
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def _objects() -> list:
    return [
        Queue.model_validate({"metadata": {"name": "q"}, "spec": {"weight": 1}, "status": {"state": "Open"}}),
        Node.model_validate({"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}),
        PodGroup.model_validate({"metadata": {"name": "full", "namespace": "ns"}, "spec": {"queue": "q", "minMember": 1}, "status": {"phase": "Running"}}),
        _pod("full-0", "full", "2", node="n0"),
        PodGroup.model_validate({"metadata": {"name": "be", "namespace": "ns"}, "spec": {"queue": "q", "minMember": 1}, "status": {"phase": "Inqueue"}}),
        _pod("be-0", "be", None),
        _pod("be-1", "be", None),
    ]


def _binds(actions: str) -> dict[str, str]:
    result = run_cycle(ClusterState.from_objects(_objects()), load_config({"actions": actions, **CONF}), 0.0)
    return {d.task: d.node for d in result.decisions if d.type == "bind"}


def test_best_effort_pods_are_placed_by_backfill_on_a_full_node():
    assert _binds("enqueue, allocate, backfill") == {"ns/be-0": "n0", "ns/be-1": "n0"}


def test_allocate_alone_leaves_best_effort_pods_waiting():
    assert _binds("enqueue, allocate") == {}
