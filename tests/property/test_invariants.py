"""Invariants that hold for any cluster and any workload (hypothesis).

Random nodes, queues (weights, capabilities, some Suspended) and gang jobs, run through the
simulator with Lahar's default configuration; after every cycle:
- no node is over-committed (the sum of its running tasks fits its allocatable);
- no queue holds more than its capability;
- deserved shares never add up to more than the cluster;
- a Suspended queue is given nothing new.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lahar.model import Job, Node, Queue
from lahar.resources import Dim, Resource
from lahar.scheduler.api import TaskStatus
from lahar.scheduler.framework.config import default_config_text, load_config, named_config_text
from lahar.sim.engine import Simulation

CONF = load_config(default_config_text())
CAPACITY_CONF = load_config(named_config_text("capacity"))

node_st = st.builds(
    lambda i, cpu, mem: Node.model_validate(
        {"metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": "110"}}}
    ),
    st.integers(0, 1000),
    st.integers(1, 16),
    st.integers(1, 64),
)


@st.composite
def world(draw):
    nodes = {n.name: n for n in draw(st.lists(node_st, min_size=1, max_size=4))}
    queues = []
    for i in range(draw(st.integers(1, 4))):
        spec: dict = {"weight": draw(st.integers(1, 5))}
        if draw(st.booleans()):
            spec["capability"] = {"cpu": str(draw(st.integers(1, 20)))}
        if draw(st.booleans()):
            spec["deserved"] = {"cpu": str(draw(st.integers(0, 8)))}
            if "capability" in spec and int(spec["deserved"]["cpu"]) > int(spec["capability"]["cpu"]):
                spec["deserved"]["cpu"] = spec["capability"]["cpu"]
        spec["reclaimable"] = draw(st.booleans())
        if draw(st.integers(0, 4)) == 0:
            spec["state"] = "Suspended"
        queues.append(Queue.model_validate({"metadata": {"name": f"q{i}"}, "spec": spec}))
    jobs = []
    for j in range(draw(st.integers(1, 10))):
        replicas = draw(st.integers(1, 4))
        jobs.append(
            Job.model_validate(
                {
                    "metadata": {
                        "name": f"j{j}",
                        "annotations": {
                            "lahar.dev/at": f"{draw(st.integers(0, 5))}s",
                            "lahar.dev/duration": f"{draw(st.integers(1, 8))}s",
                        },
                    },
                    "spec": {
                        "queue": draw(st.sampled_from([q.name for q in queues] + ["default"])),
                        "minAvailable": draw(st.integers(1, replicas)),
                        "tasks": [
                            {
                                "name": "t",
                                "replicas": replicas,
                                "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(draw(st.integers(1, 6)))}}}]}},
                            }
                        ],
                    },
                }
            )
        )
    return [*nodes.values(), *queues, *jobs]


def check_invariants(sim: Simulation, before: dict[str, Resource]) -> None:
    cache = sim.world.cache
    for node in cache.nodes.values():
        assert node.used.less_equal(node.allocatable, Dim.ZERO), (node.name, node.used, node.allocatable)
    held: dict[str, Resource] = {name: Resource() for name in cache.queues}
    for job in cache.jobs.values():
        for task in job.tasks_in(TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.BINDING):
            held[job.queue].add(task.resreq)
    for name, info in cache.queues.items():
        capability = info.queue.spec.capability
        if capability and "cpu" in capability:
            assert held[name].milli_cpu <= Resource.from_list(capability).milli_cpu + 0.1, (name, held[name])
        if info.state == "Suspended":
            assert held[name].milli_cpu <= before.get(name, Resource()).milli_cpu + 0.1, ("suspended queue grew", name)
    attrs = sim.last.session.queue_attrs if sim.last else {}
    total = sim.last.session.total_resource if sim.last else Resource()
    deserved = Resource()
    for attr in attrs.values():
        if attr.name != "root":
            deserved.add(attr.deserved)
    if sim.conf.plugin("proportion") is not None:
        assert deserved.milli_cpu <= total.milli_cpu + 1, (deserved, total)


def run_checked(objects, conf) -> None:
    sim = Simulation(objects, conf, period=1.0)
    for step in range(16):
        before = {}
        for job in sim.world.cache.jobs.values():
            for task in job.tasks_in(TaskStatus.RUNNING):
                before.setdefault(job.queue, Resource()).add(task.resreq)
        sim.step(float(step))
        check_invariants(sim, before)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world())
def test_invariants_hold_with_default_config(objects):
    run_checked(objects, CONF)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world())
def test_invariants_hold_with_capacity_config(objects):
    run_checked(objects, CAPACITY_CONF)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world())
def test_simulation_is_deterministic(objects):
    from lahar.sim.report import simulation_json

    runs = []
    for _ in range(2):
        sim = Simulation(objects, CONF, period=1.0)
        sim.run_until(30.0)
        runs.append(simulation_json(sim))
    assert runs[0] == runs[1]
