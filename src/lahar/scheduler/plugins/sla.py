"""sla: jobs that have waited past their service-level waiting time go first and are let in.

Volcano's ``sla`` plugin. The waiting time comes from the podgroup annotation ``sla-waiting-time``
or, lacking that, the plugin argument of the same name (Go durations such as ``1h30m`` or ``90s``).

- JobOrder: the job whose deadline (creation + waiting time) is earlier goes first; a job with a
  waiting time goes before one without.
- JobEnqueueable and JobPipelined: Permit once the job has waited at least its waiting time,
  otherwise Abstain (never Reject).
"""

from __future__ import annotations

import math
from typing import Final

from lahar.duration import DurationError, parse_duration
from lahar.scheduler.api import JobInfo
from lahar.scheduler.framework.session import ABSTAIN, PERMIT, Session
from lahar.scheduler.plugins.base import Plugin

WAITING_TIME: Final = "sla-waiting-time"


def _positive_duration(value: object) -> float | None:
    try:
        seconds = parse_duration(value if isinstance(value, (int, float, str)) else "")
    except DurationError:
        return None
    return seconds if seconds > 0 else None


class SlaPlugin(Plugin):
    name = "sla"
    reads_clock = True

    def on_session_open(self, ssn: Session) -> None:
        self._default = _positive_duration(self.arguments.get(WAITING_TIME)) if WAITING_TIME in self.arguments else None
        waiting_time = self._waiting_time  # a method, not a nested function: see Session.build_victims_queue

        def job_order(left: JobInfo, right: JobInfo) -> int:
            lwait, rwait = waiting_time(left), waiting_time(right)
            if lwait is None or rwait is None:
                return 0 if lwait is rwait else (1 if lwait is None else -1)
            ldeadline, rdeadline = left.creation + lwait, right.creation + rwait
            return 0 if ldeadline == rdeadline else (-1 if ldeadline < rdeadline else 1)

        def permitable(job: JobInfo) -> int:
            wait = waiting_time(job)
            if wait is None or ssn.now - job.creation < wait:
                return ABSTAIN
            return PERMIT

        def job_order_key(job: JobInfo) -> tuple[int, float]:
            wait = waiting_time(job)
            return (1, 0.0) if wait is None else (0, job.creation + wait)

        ssn.add("job_order", self.name, job_order)
        ssn.add("job_order_key", self.name, job_order_key)
        ssn.add("job_enqueueable", self.name, permitable)
        ssn.add("job_pipelined", self.name, permitable)

    def _waiting_time(self, job: JobInfo) -> float | None:
        annotations = job.podgroup.metadata.annotations if job.podgroup is not None else None
        own = _positive_duration(annotations[WAITING_TIME]) if annotations and WAITING_TIME in annotations else None
        return own if own is not None else self._default

    def clock_horizon(self, ssn: Session) -> float:
        """The next deadline (creation + waiting time) still ahead: until then sla lets in the
        same jobs (a job past its deadline stays past it). A millisecond early, so that rounding
        of the sum can never put it after the moment the answer changes."""
        horizon = math.inf
        for job in ssn.listed_jobs():
            wait = self._waiting_time(job)
            if wait is not None and job.creation + wait > ssn.now:
                horizon = min(horizon, job.creation + wait - 0.001)
        return horizon
