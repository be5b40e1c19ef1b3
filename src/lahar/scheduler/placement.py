"""Where a pod may go besides its request: its node selector and tolerations, as the scheduler
reads them from the pod (``TaskInfo.placement``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lahar.model.workload import Pod

__all__ = ["Placement"]


class Placement:
    """Where a pod may go besides its request, as its spec says: node selector and tolerations,
    read once per pod object (a pod is replaced, never changed in place). Compiled code reads a
    pydantic field through the model's attribute hook, hundreds of instructions each; the
    predicates ask for each task on each node they test."""

    __slots__ = ("pod", "_spec", "selector", "tolerations", "_constraints", "_signature")

    def __init__(self, pod: "Pod | None") -> None:
        self.pod = pod
        spec = pod.spec if pod is not None else None
        # the two fields as the spec has them (None where it has none): the texts below tell
        # a missing field from an empty one, as they did when read from the pod
        self._spec: tuple[dict[str, str] | None, list[dict] | None] | None = (spec.node_selector, spec.tolerations) if spec is not None else None
        self.selector: dict[str, str] = (self._spec[0] if self._spec is not None else None) or {}
        self.tolerations: list[dict] = (self._spec[1] if self._spec is not None else None) or []
        self._constraints: str | None = None
        self._signature: str | None = None

    def constraints(self) -> str:
        """The selector and tolerations as one text ("" for neither): tasks with equal texts may
        go to the same nodes."""
        found = self._constraints
        if found is None:
            spec = self._spec
            if spec is None or (not spec[0] and not spec[1]):
                found = ""
            else:
                found = repr((sorted((spec[0] or {}).items()), spec[1]))
            self._constraints = found
        return found

    def signature(self) -> str:
        """The selector and tolerations as JSON (``null`` without a pod), keys sorted."""
        found = self._signature
        if found is None:
            spec = self._spec
            found = self._signature = json.dumps([spec[0], spec[1]] if spec is not None else None, sort_keys=True)
        return found
