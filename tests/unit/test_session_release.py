"""A finished cycle's session is freed by reference counting alone.

Plugin callbacks close over the session; ``close_session`` drops them (``Session.release``).
Without that every session was a reference cycle: the simulator, which pauses the garbage
collector during a replay and keeps the last result, leaked one session graph per collection
(about 2 GB over the Philly trace)."""

from __future__ import annotations

import gc
from pathlib import Path

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.scheduler.framework.session import Session
from lahar.sim.compare import Clock, replay_position
from lahar.sim.engine import Simulation
from lahar.sim.inputs import load_simulation_inputs
from lahar.sim.traces import build_workload, parse_cluster

ROOT = Path(__file__).resolve().parents[2]
SLICE = ROOT / "tests" / "data" / "traces" / "philly-head.csv"


def _sessions() -> int:
    """Sessions alive (the collector keeps track of them even while it does not run)."""
    return sum(1 for obj in gc.get_objects() if isinstance(obj, Session))


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
    before = _sessions()
    gc.disable()
    try:
        result = run_cycle(state, load_config(default_config_text()), 0.0)
        assert result.of_type("evict"), "queue b reclaims from a: every action and plugin took part"
        assert set(result.session.queue_attrs) == {"a", "b"}  # what callers read stays readable
        assert _sessions() == before + 1
        del result
        assert _sessions() == before
    finally:
        gc.enable()


def test_replays_with_evictions_leave_no_session_to_the_collector():
    """Every session of the seed scenarios (reclaim and preemption build victim queues, whose
    order functions close over the session) and of a backlogged trace slice is freed by
    reference counting: the collector finds nothing. Compiled, a nested function calling another
    is a reference cycle through their environment, which holds the session."""
    evictions: list = []
    runs = []
    for path in sorted((ROOT / "examples" / "seeds").glob("*.yaml")):
        objects, conf = load_simulation_inputs([str(path)], None)
        runs.append((objects, conf))
    workload = build_workload(f"philly:{SLICE}", limit=150)
    workload.nodes = parse_cluster(["3 x cpu=64,memory=512Gi,gpu=8"])  # too small: jobs wait, victims are weighed
    runs.append((workload.objects(None)[0], load_config(default_config_text())))
    gc.collect()
    gc.disable()
    try:
        for objects, conf in runs:
            sim = Simulation(objects, conf, period=1.0, observers=[lambda s, record: evictions.extend(record.result.of_type("evict"))])
            sim.keep_cycles = False
            position = replay_position(objects, Clock(1.0, None, None))  # the replay's steps, without its collections
            while position.advance(sim, sim.step(position.now)):
                pass
        found = gc.collect()
    finally:
        gc.enable()
    assert evictions
    assert found == 0
