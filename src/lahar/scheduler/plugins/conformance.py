"""conformance: never evict system-critical pods or pods in ``kube-system`` (reference 4.6)."""

from __future__ import annotations

from lahar.scheduler.api import TaskInfo
from lahar.scheduler.framework.session import PERMIT, Session
from lahar.scheduler.plugins.base import Plugin


class ConformancePlugin(Plugin):
    name = "conformance"
    reads_clock = False

    def on_session_open(self, ssn: Session) -> None:
        def evictable(evictor: TaskInfo, evictees: list[TaskInfo]):
            return [t for t in evictees if not t.critical], PERMIT

        ssn.add("preemptable", self.name, evictable)
        ssn.add("reclaimable", self.name, evictable)
        ssn.add("preemptable_key", self.name, lambda t: ())
        ssn.add("preemptable_per_task", self.name, True)  # each candidate judged on its own
