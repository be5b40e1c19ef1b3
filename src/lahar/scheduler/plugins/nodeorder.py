"""nodeorder: score nodes like Kubernetes' least-requested, most-requested and balanced-resource.

Scores are 0..100 per function, multiplied by the weights Volcano reads from the plugin's
arguments (``leastrequested.weight`` 1, ``mostrequested.weight`` 0, ``balancedresource.weight``
1 by default). Requests counted on a node are its used resources plus the task being placed.
"""

from __future__ import annotations

from lahar.scheduler.api import NodeInfo, TaskInfo
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.base import Plugin

MAX_NODE_SCORE = 100


def _fractions(task: TaskInfo, node: NodeInfo) -> list[tuple[float, float]]:
    """(requested, allocatable) for cpu and memory after placing ``task``."""
    out = []
    for name in ("cpu", "memory"):
        out.append((node.used.get(name) + task.resreq.get(name), node.allocatable.get(name)))
    return out


def least_requested(task: TaskInfo, node: NodeInfo) -> float:
    scores = [((cap - req) * MAX_NODE_SCORE // cap) if cap > 0 and req <= cap else 0 for req, cap in _fractions(task, node)]
    return float(sum(scores) // len(scores))


def most_requested(task: TaskInfo, node: NodeInfo) -> float:
    scores = [(req * MAX_NODE_SCORE // cap) if cap > 0 and req <= cap else 0 for req, cap in _fractions(task, node)]
    return float(sum(scores) // len(scores))


def balanced_resource(task: TaskInfo, node: NodeInfo) -> float:
    fractions = [min(req / cap, 1.0) if cap > 0 else 0.0 for req, cap in _fractions(task, node)]
    mean = sum(fractions) / len(fractions)
    std = (sum((f - mean) ** 2 for f in fractions) / len(fractions)) ** 0.5
    return float(int((1 - std) * MAX_NODE_SCORE))


class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        weights = {
            least_requested: self.arguments.get_int("leastrequested.weight", 1),
            most_requested: self.arguments.get_int("mostrequested.weight", 0),
            balanced_resource: self.arguments.get_int("balancedresource.weight", 1),
        }
        active = [(fn, w) for fn, w in weights.items() if w]

        def score(task: TaskInfo, node: NodeInfo) -> float:
            return sum(fn(task, node) * w for fn, w in active)

        if active:
            ssn.add("node_order", self.name, score)
