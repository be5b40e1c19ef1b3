"""drf: dominant resource fairness between jobs (reference 4.7, without hierarchy).

A job's share is its largest fraction of any cluster resource. Jobs with a smaller share go
first; a task may preempt another job's task when, after the move, the preemptor's share is
still no larger than the victim's.
"""

from __future__ import annotations

from typing import Final

from lahar.resources import MIN_RESOURCE, Resource, share
from lahar.scheduler.api import JobInfo, TaskInfo
from lahar.scheduler.framework.session import EventHandler, PERMIT, Session
from lahar.scheduler.plugins.base import Plugin
from lahar.scheduler.plugins.queueattr import JobPart, standing_part

SHARE_DELTA: Final = 0.000001


def _copies_alike(held: Resource) -> bool:
    """Whether a copy of a job's part's allocation gives drf the values by name a copy of
    ``held`` would after any additions and subtractions: the part holds the same values without
    the scalars at zero, and a scalar map exactly where ``held`` has a non-empty one, so only an
    empty map differs (``Resource.sub`` takes scalars away only from a map of its own)."""
    scalars = held.scalars
    return scalars is None or len(scalars) > 0


class DrfPlugin(Plugin):
    name = "drf"
    reads_clock = False

    def on_session_open(self, ssn: Session) -> None:
        self.total = ssn.total_resource.clone()
        self._dims = [(name, total) for name, total in self.total.dims() if total >= MIN_RESOURCE]
        # each job's allocation and share as drf counts them. A job whose part stands for it at
        # open (``standing_part``: every job unchanged since the last cycle) gets no entry here:
        # its share is worked out from ``job.part`` when first asked (once for equal parts), and
        # its working copy of the allocation made when it first needs one (an event, a
        # preemption check). A server's every cycle looks at every running job, and two map
        # entries per job cost several times that look. ``job.part`` is not changed in a
        # session once it stands (proportion makes a part only for a job whose part does not
        # stand), and an event on a job gives it its entries first, so the part is the job's
        # allocation at open whenever it is read. The other jobs get their entries here: a
        # copy of what they hold, or a place among those that held nothing (share 0).
        self.jobs = ssn.jobs
        self.allocated: dict[str, Resource] = {}
        self.shares: dict[str, float] = {}  # worked out so far: see ``share_of``
        self._held_nothing: set[str] = set()
        self._shares_of_parts: dict[JobPart, float] = {}
        for job in ssn.listed_jobs():
            if standing_part(job) is not None and _copies_alike(job.allocated):
                continue
            held = job.allocated  # JobInfo keeps it as the sum over its allocated tasks
            if held.holds_anything():
                allocated = self.allocated[job.uid] = held.clone()
                self.shares[job.uid] = self._share(allocated)
            else:
                self._held_nothing.add(job.uid)
        ssn.add("preemptable", self.name, self._preemptable)
        ssn.add("job_order", self.name, self._job_order)
        ssn.add("job_order_key", self.name, self._job_order_key)
        ssn.add_event_handler(EventHandler(self._event(ssn, 1), self._event(ssn, -1)))

    def on_job_shown(self, ssn: Session, job: JobInfo) -> None:
        """A look-alike set aside before the plugins opened is a job of the session from now on
        (it holds nothing: share 0 until it is allocated)."""
        self.jobs[job.uid] = job
        self._held_nothing.add(job.uid)

    def _open_part(self, uid: str) -> JobPart | None:
        """The part that stood for a job of the session at open (it may hold nothing); None for a
        job that had no such part and held nothing then, or is not in the session. Asked only
        for a job without entries, so never for one whose entries were made at open (they are
        kept)."""
        if uid in self._held_nothing:
            return None
        job = self.jobs.get(uid)
        if job is None:
            return None
        part = job.part
        return part if isinstance(part, JobPart) else None

    def share_of(self, job: JobInfo) -> float:
        """The job's share as the session's events left it (0 for a job that holds nothing)."""
        uid = job.uid
        found = self.shares.get(uid)
        if found is not None:
            return found
        part = self._open_part(uid)
        if part is None:
            return 0.0
        share = self._shares_of_parts.get(part)
        if share is None:
            share = self._shares_of_parts[part] = self._share(part.allocated) if part.allocated.holds_anything() else 0.0
        if share > 0.0:  # kept for the next time (a waiting job's 0 is found again as fast)
            self.shares[uid] = share
        return share

    def _share(self, allocated: Resource) -> float:
        best = 0.0
        scalars = allocated.scalars or {}
        for name, total in self._dims:
            value = allocated.milli_cpu if name == "cpu" else allocated.memory if name == "memory" else scalars.get(name, 0.0)
            ratio = share(value, total)
            if ratio > best:
                best = ratio
        return best

    def _job_order_key(self, job: JobInfo) -> float:
        return self.share_of(job)

    def _job_order(self, left: JobInfo, right: JobInfo) -> int:
        ls, rs = self.share_of(left), self.share_of(right)
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def _allocated(self, uid: str) -> Resource | None:
        """The job's allocation as drf counts it; None for a job not in the session."""
        allocated = self.allocated.get(uid)
        if allocated is None and uid in self.jobs:
            part = self._open_part(uid)
            # its part's allocation (what it held at open), or it held nothing: share 0 (same values by name)
            held = part.allocated if part is not None else None
            allocated = self.allocated[uid] = held.clone() if held is not None and held.holds_anything() else Resource()
        return allocated

    def _preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]):
        mine = self._allocated(preemptor.job)
        if mine is None:
            return [], PERMIT
        left_share = self._share(mine.clone().add(preemptor.resreq))
        allocations: dict[str, Resource] = {}
        victims = []
        for task in preemptees:
            if task.job not in allocations:
                held = self._allocated(task.job)
                if held is None:
                    continue
                allocations[task.job] = held.clone()
            right_share = self._share(allocations[task.job].sub(task.resreq))
            if left_share < right_share or abs(left_share - right_share) <= SHARE_DELTA:
                victims.append(task)
        return victims, PERMIT

    def _event(self, ssn: Session, sign: int):
        def handler(task: TaskInfo) -> None:
            allocated = self._allocated(task.job)
            if allocated is None:
                return
            if sign > 0:
                allocated.add(task.resreq)
            else:
                allocated.sub(task.resreq)
            self.shares[task.job] = self._share(allocated)

        return handler
