"""The columnar node index, made at once from all nodes, holds what a row-by-row ``refresh``
of each node writes: every array, the pod counts, the changed rows (every row), also with no
node at all."""

from __future__ import annotations

import numpy as np

from builders import node, pod, podgroup, queue
from lahar.scheduler.cache import ClusterState
from lahar.scheduler.columnar import NodeIndex


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
