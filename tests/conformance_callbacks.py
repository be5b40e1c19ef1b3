"""Direct checks of plugin callbacks for ported Volcano cases (see conformance/volcano/CALLBACKS.md)."""

from __future__ import annotations

from lahar.scheduler.framework.session import PERMIT, REJECT
from lahar.scheduler.plugins import Plugin, register


class RejecterPlugin(Plugin):
    """Volcano's uthelper.RejecterPlugin: JobEnqueueable rejects the podgroup named ``rejectJob``."""

    name = "test-rejecter"

    def on_session_open(self, ssn) -> None:
        target = self.arguments.get("rejectJob", "")
        ssn.add("job_enqueueable", self.name, lambda job: REJECT if job.name == target else PERMIT)


register(RejecterPlugin)


def check_callbacks(ssn, callbacks: list[dict]) -> None:
    for call in callbacks:
        raise NotImplementedError(f"callback check {call.get('fn')} not supported yet")
