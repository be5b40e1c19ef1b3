"""allocate passes over a queue that refuses everything it still has waiting, also at a later
turn: once a job of the queue placed its tasks, the queue holds more and may refuse the rest
(``_refuses_the_rest``). It must ask every waiting task, not only the next one: a smaller job
further back may still fit in what the queue has left of its share, and the long way places it."""

from __future__ import annotations

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config


def _job(name: str, queue: str, cpu: int, created: str, pods: int = 1) -> list:
    """A podgroup of minMember 1 and ``pods`` pods of ``cpu`` each."""
    meta = {"name": name, "namespace": "ns", "creationTimestamp": created}
    group = PodGroup.model_validate({"metadata": meta, "spec": {"queue": queue, "minMember": 1}, "status": {"phase": "Inqueue"}})
    return [group] + [
        Pod.model_validate(
            {
                "metadata": {**meta, "name": f"{name}-{i}", "annotations": {"scheduling.k8s.io/group-name": name}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]},
            }
        )
        for i in range(pods)
    ]


def _cycle(jobs: list[tuple[str, str, int]], pods: dict[str, int] | None = None):
    """Two queues of weight 1 on one 8-cpu node (each deserves 4 cpu while both ask for more);
    ``jobs``: name, queue and cpu, created in that order; ``pods``: how many pods a job has
    when more than one."""
    objects: list = [
        Queue.model_validate({"metadata": {"name": name}, "spec": {"weight": 1}, "status": {"state": "Open"}}) for name in ("a", "b")
    ]
    objects.append(Node.model_validate({"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}))
    for n, (name, queue, cpu) in enumerate(jobs):
        objects += _job(name, queue, cpu, f"2026-01-01T00:00:{n:02d}Z", (pods or {}).get(name, 1))
    return run_cycle(ClusterState.from_objects(objects), load_config(default_config_text()), 100.0)


def test_a_smaller_job_behind_a_refused_one_is_placed():
    result = _cycle([("a1", "a", 3), ("a2", "a", 2), ("a3", "a", 1), ("b1", "b", 4), ("b2", "b", 4)])
    bound = sorted(d.task for d in result.of_type("bind"))
    assert bound == ["ns/a1-0", "ns/a3-0", "ns/b1-0"]  # a2 asks more than a has left of its 4
    assert result.jobs["ns/a2"].reason["kind"] == "deserved"
    assert result.jobs["ns/b2"].reason["kind"] == "deserved"


def test_a_queue_that_refuses_the_rest_notes_each_waiting_task():
    result = _cycle([("a1", "a", 4), ("a2", "a", 1), ("a3", "a", 2), ("b1", "b", 4)])
    assert sorted(d.task for d in result.of_type("bind")) == ["ns/a1-0", "ns/b1-0"]
    notes = result.session.notes
    for job in ("ns/a2", "ns/a3"):
        assert [n["task"] for n in notes[job] if n["kind"] == "queue-allocatable"] == [f"{job}-0"]
        assert result.jobs[job].reason["kind"] == "deserved"


def test_a_job_that_came_up_before_is_refused_for_each_task_it_has_left():
    """An elastic job (minMember 1) places one task a turn; once its queue holds its 4 cpu, the
    two tasks it has left are refused, each noted (a job that came up keeps its tasks in a heap:
    every one of them is asked, not only the next)."""
    result = _cycle([("a1", "a", 2), ("b1", "b", 4)], pods={"a1": 4})
    assert sorted(d.task for d in result.of_type("bind")) == ["ns/a1-0", "ns/a1-1", "ns/b1-0"]
    refused = [n["task"] for n in result.session.notes["ns/a1"] if n["kind"] == "queue-allocatable"]
    assert sorted(refused) == ["ns/a1-2", "ns/a1-3"]
