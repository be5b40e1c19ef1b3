"""binpack: prefer the nodes that are already fullest, to keep whole nodes free for large jobs.

Volcano's formula: per requested resource with a weight, ``(used + request) x weight / allocatable``;
averaged over the weights and scaled to ``100 x binpack.weight``. A node the task would overflow
scores 0. Arguments: ``binpack.weight`` (1), ``binpack.cpu`` (1), ``binpack.memory`` (1),
``binpack.resources`` (comma-separated extra names) with ``binpack.resources.<name>`` weights.
"""

from __future__ import annotations

import numpy as np

from lahar.scheduler.api import NodeInfo, TaskInfo
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.base import Plugin


class BinpackPlugin(Plugin):
    name = "binpack"
    reads_clock = False

    def on_session_open(self, ssn: Session) -> None:
        args = self.arguments
        self.weight = args.get_int("binpack.weight", 1)
        cpu, memory = args.get_int("binpack.cpu", 1), args.get_int("binpack.memory", 1)
        self.resources = {"cpu": cpu if cpu >= 0 else 1, "memory": memory if memory >= 0 else 1}
        for name in str(args.get("binpack.resources", "") or "").split(","):
            if name.strip():
                weight = args.get_int(f"binpack.resources.{name.strip()}", 1)
                self.resources[name.strip()] = weight if weight >= 0 else 1
        if self.weight:
            ssn.add("node_order", self.name, self.score)
            ssn.add("vector_node_order", self.name, self.vector)

    def vector(self, task: TaskInfo, index, rows: np.ndarray) -> np.ndarray:
        """``score`` for many nodes at once."""
        total, weights = np.zeros(len(rows)), 0
        overflow: np.ndarray = np.zeros(len(rows), dtype=bool)
        for name in task.resreq.resource_names():
            request = task.resreq.get(name)
            weight = self.resources.get(name)
            if not request or weight is None:
                continue
            col = index.dims.get(name)
            weights += weight
            if col is None or weight == 0:
                continue
            capacity, used = index.alloc[rows, col], index.used[rows, col]
            with np.errstate(divide="ignore", invalid="ignore"):
                part = np.where(capacity > 0, (request + used) * weight / capacity, 0.0)
            overflow |= (capacity > 0) & (request + used > capacity)
            total += part
        if weights > 0:
            total = total / weights
        return np.where(overflow, 0.0, total * 100 * self.weight)

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        total, weights = 0.0, 0
        for name in task.resreq.resource_names():
            request = task.resreq.get(name)
            weight = self.resources.get(name)
            if not request or weight is None:
                continue
            capacity, used = node.allocatable.get(name), node.used.get(name)
            if capacity == 0 or weight == 0:
                weights += weight
                continue
            if request + used > capacity:
                return 0.0
            total += (request + used) * weight / capacity
            weights += weight
        if weights > 0:
            total /= weights
        return total * 100 * self.weight
