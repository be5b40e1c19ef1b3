"""nodeorder scores every node of a columnar index at once exactly as it scores each node alone
(least-requested, most-requested and balanced-resource, each weighted): the same float for
every node, over nodes full, empty, over-asked, without cpu or memory, and odd requests."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.resources import Resource
from lahar.scheduler.api import NodeInfo, TaskInfo
from lahar.scheduler.columnar import NodeIndex
from lahar.scheduler.framework.config import load_config
from lahar.scheduler.framework.session import FEW_ROWS, Session
from lahar.scheduler.plugins import PLUGINS
from lahar.scheduler.plugins.nodeorder import NodeOrderPlugin

import numpy as np

CPU = st.sampled_from([0, 1, 250, 1000, 1500, 3333, 4000, 64000])
MEMORY = st.sampled_from([0, 1, 2**20, 3 * 2**30, 2**32, 7 * 10**9, 2**36])


@st.composite
def _node(draw, i: int) -> NodeInfo:
    node = NodeInfo(f"n{i}", Resource(draw(CPU), draw(MEMORY)))
    used = Resource(draw(CPU), draw(MEMORY))
    node.used, node.idle = used, node.allocatable.clone()
    return node


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(1, 9), st.sampled_from([(1, 0, 1), (1, 1, 1), (0, 0, 1), (2, 3, 0), (0, 1, 0)]))
def test_every_node_scored_at_once_as_each_alone(data, count, weights):
    nodes = [data.draw(_node(i)) for i in range(count)]
    task = TaskInfo("t", "t-0", "ns", "ns/t", Resource(data.draw(CPU), data.draw(MEMORY)))
    least, most, balanced = weights
    arguments = {"leastrequested.weight": least, "mostrequested.weight": most, "balancedresource.weight": balanced}
    conf = load_config({"actions": "allocate", "tiers": [{"plugins": [{"name": "nodeorder", "arguments": arguments}]}]})
    ssn = Session(uid="s", jobs={}, nodes={n.name: n for n in nodes}, queues={}, conf=conf)
    NodeOrderPlugin(conf.tiers[0].plugins[0].arguments, False).on_session_open(ssn)
    if not any(weights):
        return
    one = ssn.fns["node_order"]["nodeorder"]
    many = ssn.fns["vector_node_order"]["nodeorder"]
    index = NodeIndex(nodes)
    at_once = many(task, index, np.arange(len(nodes)))
    assert [float(score) for score in at_once] == [one(task, node) for node in nodes]


GPU = st.sampled_from([0, 1000, 4000, 8000])


@st.composite
def _gpu_node(draw, i: int) -> NodeInfo:
    gpus = draw(GPU)
    node = NodeInfo(f"n{i}", Resource(draw(CPU), draw(MEMORY), {"nvidia.com/gpu": gpus} if gpus else None))
    used_gpus = draw(GPU)
    node.used = Resource(draw(CPU), draw(MEMORY), {"nvidia.com/gpu": used_gpus} if used_gpus else None)
    node.idle = node.allocatable.clone()
    return node


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(FEW_ROWS + 1, FEW_ROWS + 20), st.sampled_from([(1, 0, 1), (2, 3, 0)]), st.sampled_from([1, 0, 3]))
def test_a_session_scores_nodes_one_by_one_as_all_at_once(data, count, weights, binpack_weight):
    """``Session.scores_each`` (node by node: up to ``FEW_ROWS`` nodes) gives each node the float
    that ``scores_for_rows`` gives it with every plugin's vector form (more nodes), nodeorder and
    binpack together, GPUs asked and held, a few nodes over-asked."""
    nodes = [data.draw(_gpu_node(i)) for i in range(count)]
    gpus = data.draw(GPU)
    task = TaskInfo("t", "t-0", "ns", "ns/t", Resource(data.draw(CPU), data.draw(MEMORY), {"nvidia.com/gpu": gpus} if gpus else None))
    least, most, balanced = weights
    plugins = [
        {"name": "nodeorder", "arguments": {"leastrequested.weight": least, "mostrequested.weight": most, "balancedresource.weight": balanced}},
        {"name": "binpack", "arguments": {"binpack.weight": binpack_weight, "binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 2}},
    ]
    conf = load_config({"actions": "allocate", "tiers": [{"plugins": plugins}]})
    ssn = Session(uid="s", jobs={}, nodes={n.name: n for n in nodes}, queues={}, conf=conf, node_list=nodes)
    for option in conf.tiers[0].plugins:
        PLUGINS[option.name](option.arguments, False).on_session_open(ssn)
    ssn.node_index = NodeIndex(nodes)
    at_once = ssn.scores_for_rows(task, np.arange(len(nodes)))  # more than FEW_ROWS: the vector forms
    assert [float(score) for score in at_once] == ssn.scores_each(task, nodes)
    few = nodes[:FEW_ROWS]
    assert [float(s) for s in ssn.scores_for_rows(task, np.arange(len(few)))] == [float(s) for s in at_once[: len(few)]]
    assert ssn.node_scores(task, few) == {n.name: float(s) for n, s in zip(few, at_once[: len(few)])}
