"""The columnar node index makes exactly the decisions of the node-by-node path.

Random clusters (several node shapes, some nodes unschedulable or labelled, tasks with node
selectors) and workloads are scheduled for a few cycles both ways; every cycle's decisions and
reasons must be identical.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lahar.model import Node, Pod, PodGroup, Queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.cycle import run_cycle
from lahar.scheduler.framework.config import load_config, named_config_text

CONFIGS = [load_config(named_config_text(name)) for name in ("default", "volcano", "capacity")]
BINPACK = load_config(
    {"actions": "enqueue, allocate, backfill", "tiers": [{"plugins": [{"name": "gang"}, {"name": "proportion"}]}, {"plugins": [{"name": "predicates"}, {"name": "binpack"}]}]}
)


def build(seed: int) -> list:
    rng = random.Random(seed)
    objects: list = []
    for i in range(rng.randint(2, 12)):
        alloc = {"cpu": str(rng.choice([2, 4, 8])), "memory": f"{rng.choice([4, 8, 16])}Gi", "pods": str(rng.choice([3, 110]))}
        if rng.random() < 0.3:
            alloc["nvidia.com/gpu"] = "4"
        objects.append(
            Node.model_validate(
                {
                    "metadata": {"name": f"n{i}", "labels": {"zone": rng.choice(["a", "b"])}},
                    "spec": {"unschedulable": rng.random() < 0.1},
                    "status": {"allocatable": alloc},
                }
            )
        )
    queues = [f"q{i}" for i in range(rng.randint(1, 3))]
    for name in queues:
        objects.append(Queue.model_validate({"metadata": {"name": name}, "spec": {"weight": rng.randint(1, 3), "deserved": {"cpu": "4"}}, "status": {"state": "Open"}}))
    for j in range(rng.randint(1, 12)):
        size = rng.randint(1, 4)
        name = f"j{j}"
        objects.append(PodGroup.model_validate({"metadata": {"name": name, "namespace": "ns"}, "spec": {"queue": rng.choice(queues), "minMember": rng.randint(1, size)}, "status": {"phase": "Inqueue"}}))
        requests = {"cpu": rng.choice(["500m", "1", "2"]), "memory": rng.choice(["1Gi", "2Gi"])}
        if rng.random() < 0.2:
            requests["nvidia.com/gpu"] = "1"
        selector = {"zone": rng.choice(["a", "b"])} if rng.random() < 0.3 else None
        for t in range(size):
            running = rng.random() < 0.2
            spec = {"containers": [{"name": "c", "resources": {"requests": requests}}], "nodeSelector": selector}
            if running:
                spec["nodeName"] = f"n{rng.randint(0, 1)}"
            objects.append(
                Pod.model_validate(
                    {
                        "metadata": {"name": f"{name}-t-{t}", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": name}},
                        "spec": spec,
                        "status": {"phase": "Running" if running else "Pending"},
                    }
                )
            )
    return objects


def decisions(objects: list, conf, columnar: bool) -> list:
    state = ClusterState.from_objects(objects)
    out = []
    for cycle in range(2):
        result = run_cycle(state, conf, float(cycle), columnar=columnar)
        out.append(([d.to_json() for d in result.decisions], {k: v.reason for k, v in result.jobs.items()}))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.sampled_from(CONFIGS + [BINPACK]))
def test_columnar_and_node_by_node_decide_the_same(seed, conf):
    objects = build(seed)
    assert decisions(objects, conf, True) == decisions(objects, conf, False)
