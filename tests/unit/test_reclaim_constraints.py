"""reclaim remembers the nodes where a task found no room, and skips them for the next task that
asks alike while they do not change. Two tasks alike in their request but not in where they may
go (a node selector) do not ask alike: a node that the first may not use at all can still make
room for the second."""

from __future__ import annotations

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config


def _queue(name: str) -> Queue:
    return Queue.model_validate({"metadata": {"name": name}, "spec": {"weight": 1}, "status": {"state": "Open"}})


def _job(name: str, queue: str, created: str, phase: str, node: str | None = None, selector: dict | None = None) -> list:
    group = PodGroup.model_validate(
        {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": created}, "spec": {"queue": queue, "minMember": 1}, "status": {"phase": phase}}
    )
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = selector
    pod = Pod.model_validate(
        {
            "metadata": {"name": f"{name}-0", "namespace": "ns", "creationTimestamp": created, "annotations": {"scheduling.k8s.io/group-name": name}},
            "spec": spec,
            "status": {"phase": "Running" if node else "Pending"},
        }
    )
    return [group, pod]


def test_a_node_the_first_task_may_not_use_still_makes_room_for_the_second():
    """n0 (2 cpu) runs two tasks of queue lender, which deserves one cpu; queue owner waits with
    two one-cpu jobs. The first in job order may only go to a node labelled zone=elsewhere
    (there is none): reclaim finds nothing for it on n0. The second may go anywhere: it takes
    back one cpu of n0 from lender."""
    objects = [
        _queue("lender"),
        _queue("owner"),
        Node.model_validate({"metadata": {"name": "n0", "labels": {"zone": "here"}}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}),
        *_job("lend-1", "lender", "2026-01-01T00:00:00Z", "Running", node="n0"),
        *_job("lend-2", "lender", "2026-01-01T00:00:00Z", "Running", node="n0"),
        *_job("picky", "owner", "2026-01-01T00:01:00Z", "Inqueue", selector={"zone": "elsewhere"}),
        *_job("easy", "owner", "2026-01-01T00:02:00Z", "Inqueue"),
    ]
    result = run_cycle(ClusterState.from_objects(objects), load_config(default_config_text()), 0.0)
    assert [d.task for d in result.of_type("pipeline")] == ["ns/easy-0"]
    assert len(result.of_type("evict")) == 1 and result.of_type("evict")[0].task.startswith("ns/lend-")
    assert result.jobs["ns/picky"].reason is not None
