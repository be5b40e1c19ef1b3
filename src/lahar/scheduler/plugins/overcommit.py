"""overcommit: admit a job only if the cluster, scaled by ``overcommit-factor``, can hold it.

Reference section 4.3. Cluster-wide and queue-blind: ``idle = total x factor - used``; a job is
admitted when everything already admitted plus its ``minResources`` fits in ``idle``.
"""

from __future__ import annotations

from typing import Final

from lahar.resources import Resource
from lahar.scheduler.api import JobInfo
from lahar.scheduler.framework.session import PERMIT, REJECT, Session
from lahar.scheduler.plugins.base import Plugin
from lahar.scheduler.plugins.queueattr import add_inqueue

DEFAULT_FACTOR: Final = 1.2


class OvercommitPlugin(Plugin):
    name = "overcommit"
    reads_clock = False

    def on_session_open(self, ssn: Session) -> None:
        factor = self.arguments.get_float("overcommit-factor", DEFAULT_FACTOR)
        if factor < 1.0:
            factor = DEFAULT_FACTOR
        used = Resource()
        for node in ssn.nodes.values():
            used.add(node.used)
        self.idle = ssn.total_resource.clone().multi(factor).sub(used)
        self.inqueue = Resource()
        for job in ssn.listed_jobs():
            if job.phase == "Inqueue" and job.min_resources is not None:
                self.inqueue.add(job.get_min_resources())
            elif job.phase == "Running":
                add_inqueue(self.inqueue, job)
        ssn.add("job_enqueueable", self.name, self._enqueueable(ssn))
        ssn.add("job_enqueued", self.name, self._enqueued)

    def _enqueueable(self, ssn: Session):
        def enqueueable(job: JobInfo) -> int:
            if job.min_resources is None:
                return PERMIT
            minimum = job.get_min_resources()
            wanted = self.inqueue.clone().add(minimum)
            ok, names = wanted.less_equal_with_dimension_and_resources_name(self.idle, minimum)
            if ok:
                return PERMIT
            ssn.note(job.uid, kind="cluster-overcommit", resources=names, plugin=self.name)
            return REJECT

        return enqueueable

    def _enqueued(self, job: JobInfo) -> None:
        if job.min_resources is not None:
            self.inqueue.add(job.get_min_resources())
