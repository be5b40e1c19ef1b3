"""What every plugin is: a name, its arguments, and its hooks around a session."""

from __future__ import annotations

from typing import ClassVar

from mypy_extensions import mypyc_attr

from lahar.scheduler.api import JobInfo
from lahar.scheduler.framework.config import Arguments
from lahar.scheduler.framework.session import Session

__all__ = ["Plugin"]


@mypyc_attr(allow_interpreted_subclasses=True)  # plugins of extensions and tests are plain Python
class Plugin:
    """Plugins register callbacks in ``on_session_open``; registering has no other effect.

    Some callbacks have an optional companion that lets actions do less work with the same
    result: ``job_order_key`` beside ``job_order`` (a sort key that compares as the comparator
    does; ``Session.job_order_key``) and ``preemptable_key`` beside ``preemptable`` (what its
    answer depends on; ``Session.preemptable_key``). A plugin that registers a comparator or a
    vote without its companion is always asked the long way."""

    name: ClassVar[str] = ""
    # Whether the plugin's answers may depend on the session's time (``ssn.now``). The control
    # loop skips a cycle while nothing changed since the last one (a quiet tick), which is only
    # sound while no enabled plugin's answers change with the time alone: a plugin that does not
    # read the clock says so, one that does says until when its answers hold (``clock_horizon``).
    reads_clock: ClassVar[bool] = True
    # Whether its ``job_valid``, ``job_starving`` and ``task_order`` answers read only the job's
    # own tasks and the fields fixed with its podgroup (not its queue, the clock or the rest of
    # the session): a job's answers are then kept while its tasks stand (``Session.job_facts``).
    job_answers_read_tasks: ClassVar[bool] = False
    # Whether its ``allocatable`` answers read only the queue and the task's request: tasks that
    # ask alike then get one answer while nothing changes (preempt asks once per kind of task).
    queue_answers_read_requests: ClassVar[bool] = False

    def __init__(self, arguments: Arguments | None = None, enabled_hierarchy: bool = False) -> None:
        self.arguments = arguments if arguments is not None else Arguments()
        self.enabled_hierarchy = enabled_hierarchy

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        return None

    def on_job_shown(self, ssn: Session, job: JobInfo) -> None:
        """A look-alike waiting job set aside when the session opened is shown to the actions
        (``lookalikes.show_next``): now in ``ssn.jobs``, holding nothing, every task waiting.
        A plugin that keeps its own view of the session's jobs takes it in."""
        return None

    def clock_horizon(self, ssn: Session) -> float | None:
        """For a plugin that reads the clock: the earliest time after ``ssn.now`` at which its
        answers about this session's cluster may change (``math.inf``: never); None when it
        cannot tell, and then every cycle runs. Asked at session close."""
        return None
