"""preempt with nothing to evict: a starving job's task still goes where it fits without victims
(phase B pipelines and keeps it), unless its queue refuses it (``Allocatable``): then preempt
gives up before scoring nodes, since no eviction could change the queue's answer."""

from __future__ import annotations

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config


def _pod(name: str, group: str, node: str | None = None) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **({"nodeName": node} if node else {})},
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def _group(name: str, queue: str, members: int, phase: str) -> PodGroup:
    return PodGroup.model_validate({"metadata": {"name": name, "namespace": "ns"}, "spec": {"queue": queue, "minMember": members}, "status": {"phase": phase}})


def _pipelined(capability: dict | None) -> list[str]:
    """Node n0 has 2 cpu, one taken by a running job of the same priority (no victim); a gang of
    two one-cpu tasks waits in the same queue, so allocate cannot start it."""
    spec = {"weight": 1, **({"capability": capability} if capability else {})}
    objects = [
        Queue.model_validate({"metadata": {"name": "q"}, "spec": spec, "status": {"state": "Open"}}),
        Node.model_validate({"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}),
        _group("run", "q", 1, "Running"),
        _pod("run-0", "run", node="n0"),
        _group("gang", "q", 2, "Inqueue"),
        _pod("gang-0", "gang"),
        _pod("gang-1", "gang"),
    ]
    result = run_cycle(ClusterState.from_objects(objects), load_config(default_config_text()), 0.0)
    assert not result.of_type("evict") and not result.of_type("bind")
    return sorted(d.task for d in result.of_type("pipeline"))


def test_a_task_is_pipelined_where_it_fits_without_victims():
    assert len(_pipelined(None)) == 1


def test_nothing_is_pipelined_when_the_queue_refuses_the_task():
    assert _pipelined({"cpu": "1"}) == []  # the queue already holds its one cpu


def _reasons(objects: list) -> dict:
    result = run_cycle(ClusterState.from_objects(objects), load_config(default_config_text()), 0.0)
    return {uid: outcome.reason for uid, outcome in result.jobs.items() if outcome.reason}


def _queue(name: str) -> Queue:
    return Queue.model_validate({"metadata": {"name": name}, "spec": {"weight": 1}, "status": {"state": "Open"}})


def _node() -> Node:
    return Node.model_validate({"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}})


def test_a_gang_reserved_where_it_fits_says_the_rest_does_not_fit_not_that_it_waits_for_evictions():
    """Nothing was evicted and nothing is terminating on n0: the reservation waits for the
    gang's other task to fit, not for a reclaim."""
    reason = _reasons([_queue("q"), _node(), _group("run", "q", 1, "Running"), _pod("run-0", "run", node="n0"), _group("gang", "q", 2, "Inqueue"), _pod("gang-0", "gang"), _pod("gang-1", "gang")])["ns/gang"]
    assert reason["kind"] == "gang-unsatisfied"
    assert reason["message"] == "1 task(s) reserved on n0, where they fit; 1 more task(s) must fit at the same time to start the job (minAvailable 2)"


def test_a_task_reserved_behind_a_reclaim_waits_for_the_evicted_task():
    objects = [
        _queue("lender"), _queue("owner"), _node(),
        _group("borrow", "lender", 1, "Running"), _pod("borrow-0", "borrow", node="n0"),
        _group("borrow2", "lender", 1, "Running"), _pod("borrow2-0", "borrow2", node="n0"),
        _group("own", "owner", 1, "Inqueue"), _pod("own-0", "own"),
    ]  # fmt: skip
    reason = _reasons(objects)["ns/own"]
    assert reason["kind"] == "waiting-for-reclaim"
    assert reason["message"] == "1 task(s) reserved on n0: waiting for evicted tasks to release resources"
