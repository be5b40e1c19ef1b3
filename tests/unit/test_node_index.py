"""The columnar node index, made at once from all nodes, holds what a row-by-row ``refresh``
of each node writes: every array, the pod counts, the changed rows (every row), also with no
node at all."""

from __future__ import annotations

import random

import numpy as np
import pytest

from builders import node, pod, podgroup, queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.api import ALLOCATED, PIPELINED, RELEASING
from lahar.scheduler.columnar import ClassView, NodeIndex


def _nodes():
    objects = [
        queue("q").build(),
        node("cpu-0", cpu="8", memory="32Gi", pods="110"),
        node("gpu-0", cpu="64", memory="512Gi", pods="110", **{"nvidia.com/gpu": "8"}),
        node("empty", cpu="4", memory="8Gi", pods="10"),
        podgroup("g").queue("q").min_member(1).phase("Running").build(),
        pod("a").group("g").requests(cpu="1500m", memory="3Gi").on("cpu-0").build(),
        pod("b").group("g").requests(cpu="2", memory="1Gi", **{"nvidia.com/gpu": "2"}).on("gpu-0").build(),
        pod("c").group("g").requests(cpu="1", memory="1Gi").on("gpu-0", phase="Succeeded").build(),
    ]
    _, _, nodes, _ = ClusterState.from_objects(objects).snapshot()
    return nodes


def test_an_index_made_at_once_holds_what_refreshing_each_row_writes():
    nodes = _nodes()
    index = NodeIndex(nodes)
    assert index.changes == list(range(len(nodes)))
    assert {n.index for n in nodes} == {index}
    width = len(index.dims)
    assert width == 4  # cpu, memory, and the two scalars the nodes have
    for name in ("alloc", "idle", "releasing", "pipelined", "used"):
        assert getattr(index, name).shape == (len(nodes), width)
    gpu, cpu_only = index.row["gpu-0"], index.row["cpu-0"]
    assert index.alloc[gpu, 0] == 64000 and index.alloc[gpu, 1] == 512 * 2**30
    assert index.alloc[gpu, index.dims["nvidia.com/gpu"]] == 8000 and index.alloc[gpu, index.dims["pods"]] == 110
    assert index.alloc[cpu_only, index.dims["nvidia.com/gpu"]] == 0 and index.used[gpu, index.dims["nvidia.com/gpu"]] == 2000
    for row, info in enumerate(nodes):
        assert index.alloc[row].tolist() == index._values(info.allocatable)
        assert index.max_pods[row] == info.max_task_num
    made = {name: getattr(index, name).copy() for name in ("idle", "releasing", "pipelined", "used", "pods")}
    for info in nodes:
        index.refresh(info)
    for name, values in made.items():
        assert np.array_equal(getattr(index, name), values), name
    assert index.used.sum() > 0 and index.pods.sum() == 2  # the finished pod holds nothing


def test_an_index_of_no_nodes_has_rows_of_cpu_and_memory():
    index = NodeIndex([])
    assert index.idle.shape == (0, 2) and index.pods.shape == (0,) and index.changes == []


def _cluster(seed: int):
    rng = random.Random(seed)
    objects = [queue("q").build(), podgroup("g").queue("q").min_member(1).phase("Inqueue").build()]
    for i in range(rng.randint(1, 9)):
        gpus = {"nvidia.com/gpu": "4"} if rng.random() < 0.4 else {}
        objects.append(node(f"n{i}", cpu=str(rng.choice([2, 4, 8])), memory=f"{rng.choice([4, 8])}Gi", pods=str(rng.choice([2, 3, 110])), **gpus))
    for t in range(30):
        gpus = {"nvidia.com/gpu": "1"} if rng.random() < 0.2 else {}
        objects.append(pod(f"t{t:02d}").group("g").requests(cpu=rng.choice(["500m", "1", "2"]), memory=rng.choice(["1Gi", "2Gi"]), **gpus).build())
    jobs, _, nodes, _ = ClusterState.from_objects(objects).snapshot()
    return rng, nodes, [task for job in jobs.values() for task in job.tasks.values()]


def _best_from_scratch(index: NodeIndex, req, static, score) -> int | None:
    """What ``ClassView.choose`` must answer, worked out again from the whole arrays."""
    every = np.arange(len(index.nodes))
    candidates = index.fits_future(req) & static & (index.max_pods > index.pods)
    if not candidates.any():
        return None
    idle = candidates & index.fits_idle(req, every)
    use = idle if idle.any() else candidates
    scores = np.array([score(n) for n in index.nodes])
    return int(np.argmax(np.where(use, scores, -np.inf)))


@pytest.mark.parametrize("seed", range(40))
def test_a_class_view_chooses_what_the_whole_arrays_choose_after_every_change(seed):
    rng, nodes, tasks = _cluster(seed)
    index = NodeIndex(nodes)
    req = next(r for r in (index.request(t.init_resreq) for t in tasks) if r is not None)  # a request some node has every resource of
    static = np.array([rng.random() < 0.8 for _ in nodes], dtype=bool)

    def score(info):  # coarse, so that rows tie often: ties go to the lowest row
        return float(info.idle.milli_cpu // 1000 - len(info.tasks))

    view = ClassView(index, req, static, True, lambda rows: np.array([score(nodes[r]) for r in rows.tolist()]), score)
    placed: list = []
    for step in range(40):
        if placed and rng.random() < 0.35:
            task = placed.pop(rng.randrange(len(placed)))
            index.nodes[index.row[task.node_name]].remove_task(task)
        elif len(placed) < len(tasks):
            task = next(t for t in tasks if t not in placed)
            task.status = rng.choice([ALLOCATED, PIPELINED, RELEASING])
            rng.choice(nodes).add_task(task)
            placed.append(task)
        if rng.random() < 0.7:  # some changes pile up before the view looks
            assert view.choose() == _best_from_scratch(index, req, static, score)
        first = ("idle", "releasing", "pipelined", "used", "pods")[step % 5]  # each array read first in turn: each catches up
        expected = [len(n.tasks) for n in nodes] if first == "pods" else [index._values(getattr(n, first)) for n in nodes]
        assert getattr(index, first).tolist() == expected
        for row, info in enumerate(nodes):  # the rows and the arrays hold the node's values now
            now = [index._values(getattr(info, name)) for name in ("idle", "releasing", "pipelined", "used")]
            assert [*index.room_rows[row], index.used_rows[row]] == now
            assert [index.idle[row].tolist(), index.releasing[row].tolist(), index.pipelined[row].tolist(), index.used[row].tolist()] == now
            assert index.pod_counts[row] == index.pods[row] == len(info.tasks) and index.max_pod_counts[row] == index.max_pods[row]


def _index_figures(index: NodeIndex) -> dict:
    return {
        "arrays": {name: getattr(index, name).tolist() for name in ("alloc", "idle", "releasing", "pipelined", "used", "pods", "max_pods")},
        "rooms": index.room_rows,
        "used": index.used_rows,
        "dims": index.dims,
    }


@pytest.mark.parametrize("seed", range(6))
def test_rows_kept_on_the_cache_nodes_are_those_made_afresh(seed):
    """A node index on a snapshot reads each node's rows kept from the last snapshot while
    that node's tasks stand (``node_rows``): after tasks come, change status and go, and nodes
    come and go with other scalar resources, it holds what an index on copies that keep nothing
    holds; and a session's changes to its copies reach neither the cache nor the next index."""
    rng = random.Random(seed)
    state = ClusterState.from_objects([queue("q").build(), podgroup("g").queue("q").min_member(1).phase("Running").build()])
    nodes = {"n0": {}, "n1": {"nvidia.com/gpu": "8"}, "n2": {}}
    for name, extra in nodes.items():
        state.upsert(node(name, cpu="16", memory="64Gi", pods="20", **extra))
    kept = 0
    for step in range(60):
        move = rng.random()
        name = f"p{rng.randrange(10)}"
        if move < 0.5:
            phase = rng.choice(["Running", "Pending", "Succeeded"])
            state.upsert(pod(name).group("g").requests(cpu=str(rng.randint(1, 3)), memory="1Gi").on(rng.choice(sorted(nodes)), phase=phase).build())
        elif move < 0.8:
            state.remove(pod(name).group("g").build())
        elif move < 0.9:
            extra = rng.choice([{}, {"example.com/fpga": "2"}])
            state.upsert(node("n3", cpu="8", memory="16Gi", pods="10", **extra))
        else:
            state.remove(node("n3", cpu="8", memory="16Gi", pods="10"))
        _, _, copies, _ = state.snapshot()
        kept += sum(1 for c in copies if c.source is not None and c.source.rows_kept is not None and c.source.rows_kept[0] == c.source_version)
        index = NodeIndex(copies)
        bare = [c.clone_with({}) for c in copies]
        for twin in bare:
            twin.source = None
        assert _index_figures(index) == _index_figures(NodeIndex(bare)), step
        if copies and rng.random() < 0.5:  # the session places a task on a copy
            task = next(iter(state.tasks.values()), None)
            if task is not None and task.key not in copies[0].tasks:
                copies[0].add_task(task.clone())
    assert kept > 20  # most indexes read kept rows
