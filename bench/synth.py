"""Synthetic clusters for benchmarks: mixed CPU and 8-GPU nodes, flat or 3-level queues, gangs.

Deterministic for a given seed. Objects are built as Lahar API models, as a user would submit
them, so benchmarks exercise the same path as real input.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from lahar.model import Node, Pod, PodGroup, PriorityClass, Queue


@dataclass
class Shape:
    nodes: int = 5000
    pods: int = 50000
    queues: int = 100
    running: int = 0
    hierarchy: bool = False
    seed: int = 42


def nodes(shape: Shape, rng: random.Random) -> list[Node]:
    out = []
    for i in range(shape.nodes):
        gpu = i % 5 == 0
        alloc = {"cpu": "96", "memory": "768Gi", "pods": "110", "nvidia.com/gpu": "8"} if gpu else {"cpu": "64", "memory": "256Gi", "pods": "110"}
        out.append(Node.model_validate({"metadata": {"name": f"node-{i:05d}"}, "status": {"allocatable": alloc}}))
    return out


def queues(shape: Shape, rng: random.Random) -> list[Queue]:
    out = []
    if not shape.hierarchy:
        for i in range(shape.queues):
            out.append(Queue.model_validate({"metadata": {"name": f"q{i:03d}"}, "spec": {"weight": rng.randint(1, 10)}, "status": {"state": "Open"}}))
        return out
    per = max(2, round(shape.queues ** (1 / 3)))
    count = 0
    for a in range(per):
        out.append(Queue.model_validate({"metadata": {"name": f"org{a}"}, "spec": {"parent": "root"}, "status": {"state": "Open"}}))
        for b in range(per):
            out.append(Queue.model_validate({"metadata": {"name": f"org{a}-team{b}"}, "spec": {"parent": f"org{a}"}, "status": {"state": "Open"}}))
            for c in range(per):
                if count < shape.queues:
                    out.append(
                        Queue.model_validate(
                            {"metadata": {"name": f"org{a}-team{b}-q{c}"}, "spec": {"parent": f"org{a}-team{b}", "weight": rng.randint(1, 10)}, "status": {"state": "Open"}}
                        )
                    )
                    count += 1
    return out


def leaf_queues(all_queues: list[Queue]) -> list[str]:
    parents = {q.spec.parent for q in all_queues}
    return [q.name for q in all_queues if q.name not in parents]


SHAPES = [
    ({"cpu": "1", "memory": "2Gi"}, 40),
    ({"cpu": "4", "memory": "8Gi"}, 30),
    ({"cpu": "8", "memory": "32Gi"}, 15),
    ({"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}, 10),
    ({"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"}, 5),
]


def workload(shape: Shape, leaves: list[str], rng: random.Random, count: int, phase: str, start: int = 0) -> list:
    """Gang jobs of 1-64 tasks until ``count`` pods; ``phase`` Pending (waiting) or Running (placed later)."""
    objects: list = []
    made, j = 0, start
    weights = [w for _, w in SHAPES]
    while made < count:
        size = min(rng.choice([1, 1, 1, 2, 4, 8, 16, 32, 64]), count - made)
        requests = rng.choices([s for s, _ in SHAPES], weights)[0]
        name = f"job-{j:06d}"
        queue = rng.choice(leaves)
        prio = rng.choice(["low", "normal", "high"])
        objects.append(
            PodGroup.model_validate(
                {"metadata": {"name": name, "namespace": "bench"}, "spec": {"queue": queue, "minMember": size, "priorityClassName": prio}, "status": {"phase": "Inqueue" if phase == "Pending" else "Running"}}
            )
        )
        for t in range(size):
            objects.append(
                Pod.model_validate(
                    {
                        "metadata": {"name": f"{name}-w-{t}", "namespace": "bench", "annotations": {"scheduling.k8s.io/group-name": name}},
                        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], "priorityClassName": prio},
                        "status": {"phase": "Pending"},
                    }
                )
            )
        made += size
        j += 1
    return objects


def priority_classes() -> list[PriorityClass]:
    return [PriorityClass.model_validate({"metadata": {"name": n}, "value": v}) for n, v in (("low", 10), ("normal", 100), ("high", 1000))]


def place_running(objects: list, node_list: list[Node]) -> None:
    """Bind the pods of ``objects`` first-fit onto the nodes (cpu only), marking them Running."""
    free = [float(n.allocatable["cpu"]) for n in node_list]
    slots = [110] * len(node_list)
    k = 0
    for obj in objects:
        if not isinstance(obj, Pod):
            continue
        need = float(obj.spec.containers[0].resources.requests["cpu"])
        gpu = "nvidia.com/gpu" in obj.spec.containers[0].resources.requests
        for step in range(len(node_list)):
            i = (k + step) % len(node_list)
            if free[i] >= need and slots[i] > 0 and (not gpu or i % 5 == 0):
                free[i] -= need
                slots[i] -= 1
                obj.spec.node_name = node_list[i].name
                obj.status.phase = "Running"
                k = i
                break


def full_cluster(node_list: list[Node], busy_queues: list[str], running: int, gang: int = 4) -> list:
    """``running`` tasks spread evenly over the nodes, filling every node's cpu, as gangs of
    ``gang`` tasks (each gang's tasks on consecutive slots), spread round-robin over the queues."""
    per_node = max(1, running // len(node_list))
    objects: list = []
    slot = 0
    for i, node in enumerate(node_list):
        cpu = float(node.allocatable["cpu"]) * 1000 / per_node
        for j in range(per_node):
            job, member = divmod(slot, gang)
            slot += 1
            name = f"busy-{job:06d}"
            if member == 0:
                objects.append(PodGroup.model_validate({"metadata": {"name": name, "namespace": "bench"}, "spec": {"queue": busy_queues[job % len(busy_queues)], "minMember": gang}, "status": {"phase": "Running"}}))
            objects.append(
                Pod.model_validate(
                    {
                        "metadata": {"name": f"{name}-w-{member}", "namespace": "bench", "annotations": {"scheduling.k8s.io/group-name": name}},
                        "spec": {"nodeName": node.name, "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{int(cpu)}m", "memory": "1Gi"}}}]},
                        "status": {"phase": "Running"},
                    }
                )
            )
    return objects


def single_tasks(queue: str, count: int, cpu: str) -> list:
    objects: list = []
    for j in range(count):
        name = f"want-{j:05d}"
        objects.append(PodGroup.model_validate({"metadata": {"name": name, "namespace": "bench"}, "spec": {"queue": queue, "minMember": 1}, "status": {"phase": "Inqueue"}}))
        objects.append(
            Pod.model_validate(
                {
                    "metadata": {"name": f"{name}-w-0", "namespace": "bench", "annotations": {"scheduling.k8s.io/group-name": name}},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
                    "status": {"phase": "Pending"},
                }
            )
        )
    return objects


def cluster(shape: Shape) -> list:
    rng = random.Random(shape.seed)
    qs = queues(shape, rng)
    leaves = leaf_queues(qs)
    node_list = nodes(shape, rng)
    objects = [*priority_classes(), *qs, *node_list]
    if shape.running:
        objects += full_cluster(node_list, leaves[:-1], shape.running)
        objects += single_tasks(leaves[-1], shape.pods, "6400m")
    else:
        objects += workload(shape, leaves, rng, shape.pods, "Pending")
    return objects
