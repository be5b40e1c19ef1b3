"""A finished cycle's session is freed by reference counting alone.

Plugin callbacks close over the session; ``close_session`` drops them (``Session.release``).
Without that every session was a reference cycle: the simulator, which pauses the garbage
collector during a replay and keeps the last result, leaked one session graph per collection
(about 2 GB over the Philly trace)."""

from __future__ import annotations

import gc
import weakref

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config


def _objects() -> list:
    objects = [Queue.model_validate({"metadata": {"name": q}, "spec": {"weight": 1}, "status": {"state": "Open"}}) for q in ("a", "b")]
    objects += [Node.model_validate({"metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}) for i in range(2)]
    for job, queue, phase, tasks in (("run", "a", "Running", 4), ("wait", "b", "Inqueue", 2)):
        objects.append(PodGroup.model_validate({"metadata": {"name": job, "namespace": "ns"}, "spec": {"queue": queue, "minMember": 1}, "status": {"phase": phase}}))
        for t in range(tasks):
            running = {"nodeName": f"n{t % 2}"} if phase == "Running" else {}
            objects.append(
                Pod.model_validate(
                    {
                        "metadata": {"name": f"{job}-t-{t}", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": job}},
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **running},
                        "status": {"phase": "Running" if running else "Pending"},
                    }
                )
            )
    return objects


def test_a_finished_session_is_freed_without_the_garbage_collector():
    state = ClusterState.from_objects(_objects())
    gc.collect()
    gc.disable()
    try:
        result = run_cycle(state, load_config(default_config_text()), 0.0)
        assert result.of_type("evict"), "queue b reclaims from a: every action and plugin took part"
        assert set(result.session.queue_attrs) == {"a", "b"}  # what callers read stays readable
        session = weakref.ref(result.session)
        del result
        assert session() is None
    finally:
        gc.enable()
