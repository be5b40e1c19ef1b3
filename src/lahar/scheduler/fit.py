"""Why a task does not fit: a node's verdict on one task (``FitError``) and a task's verdicts over
all nodes (``FitErrors``), with the status codes predicates answer in.

These mirror Volcano's ``FitError``/``FitErrors`` and ``Status`` codes in ``pkg/scheduler/api``.
``FitErrors.message()`` is the text users read in a job's Unschedulable condition.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["StatusCode", "FitError", "FitErrors", "PredicateError"]


class StatusCode(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(init=False)  # its own __init__: compiled, the generated one is plain Python (cycle.JobOutcome)
class FitError:
    """Why one task does not fit one node: a list of (code, reason)."""

    node: str
    statuses: list[tuple[StatusCode, str]]

    def __init__(self, node: str = "", statuses: list[tuple[StatusCode, str]] | None = None) -> None:
        self.node, self.statuses = node, statuses if statuses is not None else []

    def reasons(self) -> list[str]:
        return [reason for _, reason in self.statuses if reason]

    def has(self, *codes: StatusCode) -> bool:
        return any(code in codes for code, _ in self.statuses)


class PredicateError(Exception):
    """Raised by predicate functions; carries the ``FitError``."""

    def __init__(self, fit: FitError) -> None:
        super().__init__(", ".join(fit.reasons()))
        self.fit = fit


@dataclass(init=False)  # its own __init__ (see FitError)
class FitErrors:
    """Why a task fits no node: detailed errors for some nodes, counted reasons for the rest.

    ``nodes`` holds a ``FitError`` per node where one was worked out in full; ``counts`` holds
    reasons counted in bulk (for example ``Insufficient cpu`` over thousands of full nodes);
    ``total`` is how many nodes were considered. ``message()`` summarises both like Volcano:
    ``0/3 nodes are unavailable: 1 node(s) were unschedulable, 2 Insufficient cpu.``
    """

    nodes: dict[str, FitError]
    err: str
    counts: dict[str, int]
    total: int | None

    def __init__(self, nodes: dict[str, FitError] | None = None, err: str = "", counts: dict[str, int] | None = None, total: int | None = None) -> None:
        self.nodes = nodes if nodes is not None else {}
        self.err = err
        self.counts = counts if counts is not None else {}
        self.total = total

    def set_node_error(self, node: str, error: FitError) -> None:
        error.node = node
        self.nodes[node] = error

    def unresolvable_nodes(self) -> set[str]:
        return {n for n, fe in self.nodes.items() if fe.has(StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)}

    def histogram(self) -> dict[str, int]:
        counts: dict[str, int] = dict(self.counts)
        for fit in self.nodes.values():
            for reason in fit.reasons():
                counts[reason] = counts.get(reason, 0) + 1
        return counts

    def message(self) -> str:
        total = self.total if self.total is not None else len(self.nodes)
        head = self.err or f"0/{total} nodes are unavailable"
        if not self.nodes and not self.counts:
            return head
        parts = sorted(f"{count} {reason}" for reason, count in self.histogram().items())
        return f"{head}: {', '.join(parts)}."
