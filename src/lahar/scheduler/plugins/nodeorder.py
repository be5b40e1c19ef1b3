"""nodeorder: score nodes like Kubernetes' least-requested, most-requested and balanced-resource.

Scores are 0..100 per function, multiplied by the weights Volcano reads from the plugin's
arguments (``leastrequested.weight`` 1, ``mostrequested.weight`` 0, ``balancedresource.weight``
1 by default). Requests counted on a node are its used resources plus the task being placed.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np

from lahar.scheduler.api import NodeInfo, TaskInfo
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.base import Plugin

MAX_NODE_SCORE: Final = 100


def _fractions(task: TaskInfo, node: NodeInfo) -> tuple[tuple[float, float], tuple[float, float]]:
    """(requested, allocatable) for cpu and memory after placing ``task``."""
    used, alloc, ask = node.used, node.allocatable, task.resreq
    return (used.milli_cpu + ask.milli_cpu, alloc.milli_cpu), (used.memory + ask.memory, alloc.memory)


def least_requested(task: TaskInfo, node: NodeInfo) -> float:
    scores = [((cap - req) * MAX_NODE_SCORE // cap) if cap > 0 and req <= cap else 0 for req, cap in _fractions(task, node)]
    return float(sum(scores) // len(scores))


def most_requested(task: TaskInfo, node: NodeInfo) -> float:
    scores = [(req * MAX_NODE_SCORE // cap) if cap > 0 and req <= cap else 0 for req, cap in _fractions(task, node)]
    return float(sum(scores) // len(scores))


def balanced_resource(task: TaskInfo, node: NodeInfo) -> float:
    (cpu_req, cpu_cap), (mem_req, mem_cap) = _fractions(task, node)
    f0 = min(cpu_req / cpu_cap, 1.0) if cpu_cap > 0 else 0.0
    f1 = min(mem_req / mem_cap, 1.0) if mem_cap > 0 else 0.0
    mean = (f0 + f1) / 2
    d0, d1 = f0 - mean, f1 - mean
    std = math.sqrt((d0 * d0 + d1 * d1) / 2)  # numpy's std, step for step
    return float(math.trunc((1 - std) * MAX_NODE_SCORE))


class NodeOrderPlugin(Plugin):
    name = "nodeorder"
    reads_clock = False

    def on_session_open(self, ssn: Session) -> None:
        weights = {
            least_requested: self.arguments.get_int("leastrequested.weight", 1),
            most_requested: self.arguments.get_int("mostrequested.weight", 0),
            balanced_resource: self.arguments.get_int("balancedresource.weight", 1),
        }
        active = [(fn, w) for fn, w in weights.items() if w]

        def score(task: TaskInfo, node: NodeInfo) -> float:
            total = 0.0
            for fn, w in active:
                total += fn(task, node) * w
            return total

        vectors = {least_requested: _least_vec, most_requested: _most_vec, balanced_resource: _balanced_vec}

        def vector(task: TaskInfo, index, rows: np.ndarray) -> np.ndarray:
            req, cap = _columns(task, index, rows)
            total = np.zeros(len(rows))
            with np.errstate(divide="ignore", invalid="ignore"):  # once (each errstate sets numpy's state twice)
                for fn, w in active:
                    total = total + vectors[fn](req, cap) * w
            return total

        if active:
            ssn.add("node_order", self.name, score)
            ssn.add("vector_node_order", self.name, vector)


def _columns(task: TaskInfo, index, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Requested (used + task) and allocatable cpu and memory for the rows: arrays of shape (n, 2)."""
    ask = np.array([task.resreq.milli_cpu, task.resreq.memory])
    return index.used[rows, :2] + ask, index.alloc[rows, :2]


def _least_vec(req: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """``least_requested`` per row (inside ``np.errstate`` that ignores division by zero)."""
    per = np.where((cap > 0) & (req <= cap), np.floor_divide((cap - req) * MAX_NODE_SCORE, cap), 0.0)
    return np.floor_divide(per.sum(axis=1), 2)


def _most_vec(req: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """``most_requested`` per row (inside ``np.errstate`` that ignores division by zero)."""
    per = np.where((cap > 0) & (req <= cap), np.floor_divide(req * MAX_NODE_SCORE, cap), 0.0)
    return np.floor_divide(per.sum(axis=1), 2)


def _balanced_vec(req: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """``balanced_resource`` per row (inside ``np.errstate`` that ignores division by zero): the
    standard deviation of the two fractions in numpy's own steps (a mean, the deviations
    squared and summed, halved, the root), without ``ndarray.std``'s checks around them."""
    fractions = np.where(cap > 0, np.minimum(req / cap, 1.0), 0.0)
    f0, f1 = fractions[:, 0], fractions[:, 1]
    mean = (f0 + f1) / 2
    d0, d1 = f0 - mean, f1 - mean
    std = np.sqrt((d0 * d0 + d1 * d1) / 2)
    return np.trunc((1 - std) * MAX_NODE_SCORE)
