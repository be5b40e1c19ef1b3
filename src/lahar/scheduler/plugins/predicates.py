"""predicates: node filters beyond resources (reference 4.8).

Unschedulable nodes, node selectors, taints without a matching toleration (NoSchedule and
NoExecute), and the pod-count limit (a node whose ``pods`` allocatable is reached takes no more).
Resource fit itself is checked by the actions, against ``FutureIdle``.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from lahar.scheduler.api import NodeInfo, TaskInfo
from lahar.scheduler.fit import FitError, PredicateError, StatusCode
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.base import Plugin

POD_NUMBER_EXCEEDED: Final = "node(s) pod number exceeded"
UNSCHEDULABLE_NODE: Final = "node(s) were unschedulable"
SELECTOR_MISMATCH: Final = "node(s) didn't match Pod's node affinity/selector"
UNTOLERATED_TAINT: Final = "node(s) had untolerated taint"


class PredicatesPlugin(Plugin):
    name = "predicates"
    reads_clock = False

    def on_session_open(self, ssn: Session) -> None:
        ssn.add("predicate", self.name, predicate)
        ssn.add("vector_predicate", self.name, self.vector)
        self._static: dict[str, np.ndarray] = {}

    def vector(self, task: TaskInfo, index) -> tuple[np.ndarray, bool]:
        """``predicate`` over every node of the index at once: the part that cannot change during
        a session (unschedulable, selector, taints), cached per pod signature, and whether the
        pod count (which does change) must also stay below the node's ``pods`` allocatable."""
        signature = task.placement().signature()
        static = self._static.get(signature)
        if static is None:
            static = np.array([_static_ok(task, node) for node in index.nodes], dtype=bool)
            self._static[signature] = static
        return static, True


def predicate(task: TaskInfo, node: NodeInfo) -> None:
    """Raise ``PredicateError`` when ``task`` may not run on ``node``."""
    if node.max_task_num <= len(node.tasks):
        raise PredicateError(FitError(node.name, [(StatusCode.UNSCHEDULABLE, POD_NUMBER_EXCEEDED)]))
    place = task.placement()
    if node.unschedulable and not _tolerates_unschedulable(place.tolerations):
        raise PredicateError(FitError(node.name, [(StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, UNSCHEDULABLE_NODE)]))
    if any(node.labels.get(k) != v for k, v in place.selector.items()):
        raise PredicateError(FitError(node.name, [(StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, SELECTOR_MISMATCH)]))
    tolerations = place.tolerations
    for taint in node.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(_tolerates(t, taint) for t in tolerations):
            raise PredicateError(FitError(node.name, [(StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, UNTOLERATED_TAINT)]))


def _static_ok(task: TaskInfo, node: NodeInfo) -> bool:
    """Everything ``predicate`` checks except the pod count."""
    try:
        saved, node.max_task_num = node.max_task_num, float("inf")
        predicate(task, node)
        return True
    except PredicateError:
        return False
    finally:
        node.max_task_num = saved


def _tolerates_unschedulable(tolerations: list[dict]) -> bool:
    taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    return any(_tolerates(t, taint) for t in tolerations)


def _tolerates(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    operator = toleration.get("operator", "Equal")
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration.get("key") != taint.get("key"):
        return False
    return operator == "Exists" or toleration.get("value", "") == taint.get("value", "")
