"""Direct checks of plugin callbacks for ported Volcano cases (see conformance/volcano/CALLBACKS.md)."""

from __future__ import annotations

from lahar.scheduler.api import TaskStatus
from lahar.scheduler.fit import FitError, PredicateError, StatusCode
from lahar.scheduler.framework.session import PERMIT, REJECT
from lahar.scheduler.plugins.gang import skip_unschedulable_for_releasing
from lahar.scheduler.plugins import Plugin, register


class RejecterPlugin(Plugin):
    """Volcano's uthelper.RejecterPlugin: JobEnqueueable rejects the podgroup named ``rejectJob``."""

    name = "test-rejecter"

    def on_session_open(self, ssn) -> None:
        target = self.arguments.get("rejectJob", "")
        ssn.add("job_enqueueable", self.name, lambda job: REJECT if job.name == target else PERMIT)


class DeviceFitAfterEvictionPlugin(Plugin):
    """Volcano's preempt_test deviceFitAfterEvictionPlugin: the task ``preemptor`` does not fit a node
    while a task ``preemptee`` on it is not Releasing (capacity the resource model cannot see)."""

    name = "device-fit-after-eviction"

    def on_session_open(self, ssn) -> None:
        def predicate(task, node):
            if task.name != "preemptor":
                return
            if any(t.name == "preemptee" and t.status != TaskStatus.RELEASING for t in node.tasks.values()):
                raise PredicateError(FitError(node.name, [(StatusCode.UNSCHEDULABLE, "hidden device capacity is occupied")]))

        ssn.add("predicate", self.name, predicate)


register(RejecterPlugin)
register(DeviceFitAfterEvictionPlugin)


def check_callbacks(ssn, callbacks: list[dict]) -> None:
    """Run each call in order on the open session; compare ``result`` where given."""
    for call in callbacks:
        fn = call["fn"]
        job = ssn.jobs[call["job"]] if "job" in call else None
        if fn == "jobEnqueued":
            ssn.job_enqueued(job)
            continue
        if fn == "jobEnqueueable":
            got = ssn.job_enqueueable(job)
        elif fn == "gangShouldSkipUnschedulableForReleasing":
            got = skip_unschedulable_for_releasing(job)
        else:
            raise AssertionError(f"unknown callback {fn!r} in scenario")
        assert got == call["result"], f"{fn}({call.get('job')}) = {got}, want {call['result']}"
