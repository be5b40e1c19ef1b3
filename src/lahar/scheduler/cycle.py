"""One scheduling cycle: open a session on a snapshot, run the actions, close it.

``run_cycle(state, conf)`` is the whole scheduler as a pure function: the same state and
configuration give the same decisions, byte for byte. It returns the decisions in the order
they were made (binds, pipelines, evictions), each podgroup's new phase and conditions, each
queue's accounting and, for every job that is not running, a structured reason.
"""

from __future__ import annotations

import gc
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from lahar.resources import Resource
from lahar.scheduler.actions import ACTIONS
from lahar.scheduler.api import COMPLETED_STATUSES, FAILED, PIPELINED, RELEASING, RUNNING, SCHEDULED_STATUSES, SUCCEEDED, JobInfo
from lahar.scheduler.cache import ClusterState, JobOrder
from lahar.scheduler.columnar import NodeIndex
from lahar.scheduler.framework.config import SchedulerConf
from lahar.scheduler.framework.session import Decision, Session
from lahar.scheduler.lookalikes import Hidden, HiddenReasons, NamedConditions, group, hide, settled, show_untold_kinds, told
from lahar.scheduler.plugins import PLUGINS
from lahar.scheduler.plugins.queueattr import allocations_by_parts
from lahar.scheduler.reasons import explain_made_of

__all__ = ["run_cycle", "open_session", "close_session", "valid_until", "CycleResult", "JobOutcome"]


# The classes below that a cycle makes by the thousand write their own ``__init__``
# (``init=False``): compiled, a dataclass keeps the ``__init__`` that the dataclasses module
# generates as plain Python, about ten times slower to call (a JobOutcome per job per cycle was
# a seventh of an idle server cycle). ``__eq__`` and ``__repr__`` are still the generated ones.


@dataclass(init=False)
class JobOutcome:
    """What a cycle says of one job. A job's outcome that reads exactly as its last one (the
    ``previous`` the cycle was given) is that very object, its conditions replaced by this
    session's (``_kept_outcome``): a server's cycle says the same of every running job, and a
    backlog's of every waiting one. So an older result's outcome may show a later session's
    conditions: read a result before running the next cycle with it as ``previous``."""

    phase: str
    queue: str
    conditions: list[dict[str, Any]]
    reason: dict[str, Any] | None
    running: int
    succeeded: int
    failed: int
    # a hidden look-alike's: the first job's reason its own was made from (the same but for the
    # job); the next cycle keeps its reason object while the first job's reads the same
    shared_reason: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    # a job the actions looked at: what its reason was made of (``reasons.explain_made_of``); the
    # next cycle keeps its reason object when its reason is made of the very same part
    reason_part: dict[str, Any] | None = field(default=None, init=False, compare=False, repr=False)

    def __init__(
        self,
        phase: str = "",
        queue: str = "",
        conditions: list[dict[str, Any]] | None = None,
        reason: dict[str, Any] | None = None,
        running: int = 0,
        succeeded: int = 0,
        failed: int = 0,
        shared_reason: dict[str, Any] | None = None,
    ) -> None:
        self.phase, self.queue = phase, queue
        self.conditions = conditions if conditions is not None else []
        self.reason = reason
        self.running, self.succeeded, self.failed = running, succeeded, failed
        self.shared_reason = shared_reason
        self.reason_part = None

    def same_status(self, other: "JobOutcome") -> bool:
        """Whether ``other`` says the same of the job to whoever writes statuses: phase, queue,
        pod counts and reason. Conditions are left out: they carry the session's uid, so they
        differ every cycle, and they are written only with a reason that changed."""
        return (
            self.phase == other.phase
            and self.running == other.running
            and self.succeeded == other.succeeded
            and self.failed == other.failed
            and self.queue == other.queue
            and (self.reason is other.reason or self.reason == other.reason)
        )


@dataclass
class CycleResult:
    decisions: list[Decision]
    jobs: dict[str, JobOutcome]
    queue_allocated: dict[str, Resource]
    session: Session
    # Until when the same cluster gives this same result: the earliest time at which a plugin
    # that reads the clock may answer differently (infinite when none does; the cycle's own time
    # when one cannot tell)
    valid_until: float = math.inf
    # The jobs (in job order) whose outcome is not the ``same_status`` as in ``compared_to``, the
    # outcomes the caller passed as ``previous`` (those it applied last); every job when none
    changed: list[str] | None = None
    compared_to: dict[str, JobOutcome] | None = None
    # How many look-alike waiting jobs the actions did not look at (``run_cycle(lookalikes=True)``),
    # and whether the cycle had to run again without hiding them
    lookalikes_hidden: int = 0
    lookalikes_ran_again: bool = False

    def of_type(self, kind: str) -> list[Decision]:
        return [d for d in self.decisions if d.type == kind]


def open_session(state: ClusterState, conf: SchedulerConf, now: float = 0.0, uid: str = "cycle-0", columnar: bool = True) -> Session:
    """A session on a snapshot of ``state``; ``columnar=False`` tests nodes one by one (same decisions, slower)."""
    ssn = _new_session(state, conf, now, uid, columnar)
    _open_plugins(ssn)
    return ssn


def _new_session(state: ClusterState, conf: SchedulerConf, now: float, uid: str, columnar: bool) -> Session:
    """A session on a snapshot of ``state``, its plugins not yet opened."""
    jobs, nodes, node_list, queues = state.snapshot()
    total = Resource()
    for node in node_list:
        total.add(node.allocatable)
    ssn = Session(uid=uid, jobs=jobs, nodes=nodes, queues=queues, conf=conf, now=now, node_list=node_list, total_resource=total)
    ssn.enqueue_enabled = "enqueue" in conf.actions
    order = state.job_order
    if order is not None:
        ssn.job_order, ssn.job_order_at, ssn.job_order_map = order, order.count(), jobs
    ssn.node_index = NodeIndex(node_list) if node_list and columnar else None
    return ssn


def _open_plugins(ssn: Session) -> None:
    conf = ssn.conf
    for tier in conf.tiers:
        for option in tier.plugins:
            plugin = PLUGINS[option.name](option.arguments, option.enabled("hierarchy"))
            ssn.plugins[option.name] = plugin
            plugin.on_session_open(ssn)


def close_session(ssn: Session, previous: dict[str, JobOutcome] | None = None) -> CycleResult:
    """The session's result; ``previous``: the outcomes the caller last applied, for the
    result's ``changed`` (a caller that applies only what changed skips the other jobs)."""
    result = _close(ssn, previous, None)
    assert result is not None
    return result


def _close(ssn: Session, previous: dict[str, JobOutcome] | None, hidden: Hidden | None) -> CycleResult | None:
    """``close_session``, with ``hidden``: the look-alike jobs ``lookalikes.hide`` set aside,
    given their first job's phase and reason; None (and the session released) when that reason
    may name the job: the cycle must run again without hiding."""
    for plugin in ssn.plugins.values():
        plugin.on_session_close(ssn)  # with look-alikes hidden, on the jobs the actions saw
    _record_uncommitted_pipelines(ssn)  # a hidden job has every task waiting: nothing pipelined
    acted = ssn.jobs  # the jobs the actions saw: a hidden job holds nothing (every task waits)
    acted_list = ssn.listed_jobs()
    if hidden is not None:
        if any(acted[uid].allocated.holds_anything() for uid in hidden.revealed):
            # shown on the way, so last in ``acted``, and holding something: back in session
            # order, the order of the sums (a job that holds nothing is passed over by them)
            acted_list = [job for uid, job in hidden.every.items() if uid in acted]
        ssn.jobs = hidden.every
    # every job's key in session order at once (a copy of a dict built by insertion only is a
    # block copy), each value then replaced by the job's outcome below: a dict grown key by
    # key costs several times as much per key; or the last outcomes, in the same order, where
    # the first ``unchanged`` jobs need only those that changed put in
    outcomes, unchanged = _outcomes_start(ssn, previous)
    changed: list[str] = []
    reasons = HiddenReasons()
    read = UnschedulableRead(ssn.uid)
    # the outcomes of look-alikes shown to the actions on the way (``lookalikes.show_next``),
    # before any job hidden behind one of them needs it (it may come first in session order)
    early: dict[str, JobOutcome] = {}
    if hidden is not None:
        for uid in hidden.revealed:
            early[uid] = _outcome(ssn, ssn.jobs[uid], previous.get(uid) if previous is not None else None, read)
    # the last hidden job's first job, its outcome and the conditions this session wrote for
    # it: look-alikes mostly come together in session order
    seen_first = ""
    first_outcome: JobOutcome | None = None
    first_conditions: list[dict[str, Any]] = []
    named: NamedConditions | None = None
    position = 0
    for job in ssn.listed_jobs():
        first = job.hidden_behind if hidden is not None else ""
        if previous is None:
            before = None
        elif job.last_outcomes is previous:  # the copy's outcome in that very map
            before = job.last_outcome
        else:
            before = previous.get(job.uid)
        if not first:
            made = early.get(job.uid) if early else None
            outcome = made if made is not None else _outcome(ssn, job, before, read)
        else:
            if first != seen_first or first_outcome is None:
                made = early.get(first) if early else None
                seen_first, first_outcome = first, made if made is not None else outcomes[first]
                first_job = ssn.jobs[first]
                first_conditions = [c for c in first_job.conditions if c.get("transitionID") == ssn.uid]
                # refused by the nodes (``settled``): gang's message names each job's own task
                named = NamedConditions(first_job, first_conditions) if first_job.fit_errors else None
            conditions = named.of(job) if named is not None else first_conditions
            found = _hidden_outcome(ssn, job, conditions, first_outcome, before, reasons)
            if found is None:
                ssn.release()
                return None
            outcome = found
        if outcome is not before or position >= unchanged:
            outcomes[job.uid] = outcome
        position += 1
        job.last_outcome, job.last_outcomes = outcome, outcomes
        if before is None or (outcome is not before and not outcome.same_status(before)):  # kept: the same
            changed.append(job.uid)
    if len(outcomes) != len(ssn.jobs):  # a job taken out of the session's map after its snapshot
        outcomes = {uid: outcomes[uid] for uid in ssn.jobs}
    result = CycleResult(ssn.decisions, outcomes, queue_allocations(ssn, acted_list), ssn, valid_until(ssn), changed, previous)
    if ssn.job_order is not None and ssn.jobs is ssn.job_order_map:
        cast(JobOrder, ssn.job_order).record_close(outcomes, ssn.job_order_at)
    ssn.release()
    return result


def _outcomes_start(ssn: Session, previous: dict[str, JobOutcome] | None) -> tuple[dict[str, JobOutcome], int]:
    """The map the close fills in, and how many of the session's first jobs it already lists
    with their last outcomes, in session order: a copy of ``previous`` less the jobs taken out
    since, where ``previous`` is the last close's over the same run of snapshots
    (``cache.JobOrder``) and the session's jobs are its snapshot's; else a copy of the session's
    jobs (every value to be replaced), and 0."""
    order = cast("JobOrder | None", ssn.job_order)
    if previous is None or order is None:
        return cast("dict[str, JobOutcome]", ssn.jobs.copy()), 0
    last: dict[str, JobOutcome] = previous
    if order.closed is last and ssn.jobs is ssn.job_order_map:
        dropped = order.dropped_between(order.closed_at, ssn.job_order_at)
        if dropped is not None:
            outcomes = last.copy()
            for uid in dropped:
                outcomes.pop(uid, None)
            return outcomes, len(outcomes)
    return cast("dict[str, JobOutcome]", ssn.jobs.copy()), 0


def _outcome(ssn: Session, job: JobInfo, before: JobOutcome | None, read: UnschedulableRead) -> JobOutcome:
    """The job's podgroup phase (set on the job too), conditions, reason and pod counts;
    ``before``, the job's last outcome, whose reason is kept when it reads the same; ``read``:
    the close's reader of conditions."""
    facts = ssn.job_facts(job)
    found = facts.scheduled
    if found is None:
        found = facts.scheduled = scheduled_counts(job)
    counts: tuple[int, int, int, int, int] = found  # typed: read without boxing (compiled)
    job.phase = podgroup_phase(job, read.of(job), counts)
    last, last_part = (before.reason, before.reason_part) if before is not None else (None, None)
    reason, part = explain_made_of(ssn, job, last, last_part)
    if before is not None and _kept_outcome(before, job, reason, part, None, counts[2], counts[3], counts[4]):
        return before
    outcome = JobOutcome(
        phase=job.phase,
        queue=job.queue,
        conditions=job.conditions,
        reason=reason,
        running=counts[2],
        succeeded=counts[3],
        failed=counts[4],
    )
    outcome.reason_part = part
    return outcome


def _hidden_outcome(
    ssn: Session, job: JobInfo, first_conditions: list[dict[str, Any]], first: JobOutcome, before: JobOutcome | None, reasons: HiddenReasons
) -> JobOutcome | None:
    """The outcome of a look-alike hidden from the actions, from its first job's: the same
    phase (``podgroup_phase`` reads the same phase, counts, minMember and, with no task
    running, nothing else), the conditions the plugins wrote this session for its first job
    (``first_conditions``; gang's: the same task counts and no fit error give the same
    message; a first job refused by the nodes names its task there, so each look-alike gets
    them naming its own: ``NamedConditions``) beside its own of other types, no pod running,
    ended or failed (every task waits), and the first job's reason with its own uid
    (``before``'s, the job's last outcome, when that reads the same: ``HiddenReasons``); None
    when that reason may name the job. The condition objects are its first job's own (no one
    changes a condition or a reason in place: a new one replaces it)."""
    last, made_from = (before.reason, before.shared_reason) if before is not None else (None, None)
    if made_from is not None and made_from is reasons.made_from and first.reason is reasons.first:
        reason = last  # ``HiddenReasons.of``'s first answer, without the call: most look-alikes get it
    else:
        reason = reasons.of(job.uid, first.reason, last, made_from)
    if reason is None:
        return None
    if not job.conditions:  # the usual case: the run's look-alikes share the list (never changed in place)
        job.conditions = first_conditions
    else:
        for condition in first_conditions:
            job.set_condition(condition)
    job.phase = first.phase
    if before is not None and _kept_outcome(before, job, reason, first.reason_part, first.reason, 0, 0, 0):
        return before
    outcome = JobOutcome(first.phase, job.queue, job.conditions, reason, 0, 0, 0, first.reason)
    outcome.reason_part = first.reason_part  # its reason reads as its first job's but for the job: made of the same part
    return outcome


def _kept_outcome(
    before: JobOutcome, job: JobInfo, reason: dict[str, Any] | None, part: dict[str, Any] | None, shared: dict[str, Any] | None, running: int, succeeded: int, failed: int
) -> bool:
    """Whether ``before``, the job's last outcome, reads as the one this session would make: the
    same phase (``job.phase``, as set), queue and pod counts, the very same reason objects (what
    it was made of and from, too); then it takes the job's conditions of this session, and
    stands for this session's outcome (see ``JobOutcome``)."""
    if (
        before.reason is reason
        and before.reason_part is part
        and before.shared_reason is shared
        and before.phase == job.phase
        and before.queue == job.queue
        and before.running == running
        and before.succeeded == succeeded
        and before.failed == failed
    ):
        before.conditions = job.conditions
        return True
    return False


def run_cycle(
    state: ClusterState,
    conf: SchedulerConf,
    now: float = 0.0,
    uid: str = "cycle-0",
    columnar: bool = True,
    previous: dict[str, JobOutcome] | None = None,
    lookalikes: bool = False,
) -> CycleResult:
    """One cycle over ``state``. ``previous`` (the outcomes the caller last applied: an earlier
    result's ``jobs`` as that cycle returned it, or a map of the caller's own, never changed
    after it is passed) changes no decision: it only fills in the result's ``changed``. ``lookalikes``: the actions look at
    one waiting job of each kind (``lahar.scheduler.lookalikes``); when that does not hold, the
    cycle runs again without it. Either way the result is the same."""
    with paused_gc():
        if lookalikes:
            result = _cycle_with_lookalikes_hidden(state, conf, now, uid, columnar, previous)
            if result is not None:
                return result
        ssn = open_session(state, conf, now, uid, columnar)
        for action in conf.actions:
            ACTIONS[action](ssn)
        found = close_session(ssn, previous)
        found.lookalikes_ran_again = lookalikes
        return found


def _cycle_with_lookalikes_hidden(
    state: ClusterState, conf: SchedulerConf, now: float, uid: str, columnar: bool, previous: dict[str, JobOutcome] | None
) -> CycleResult | None:
    """The cycle with look-alike waiting jobs hidden from the actions; None when it must run
    again without. Decisions that cannot stand with jobs hidden (``told``) end the try at once."""
    ssn = _new_session(state, conf, now, uid, columnar)
    grouped = group(ssn)  # look-alikes described in earlier cycles: proportion counts them at once
    _open_plugins(ssn)
    hidden = ssn.lookalikes = hide(ssn, grouped)
    for action in conf.actions:
        decided = len(ssn.decisions)
        ACTIONS[action](ssn)
        if hidden is not None and (ssn.hidden_inexact or not told(ssn, hidden, action, decided)):
            ssn.hidden_inexact = True  # not followed (``told``): it will run again
            break  # the rest would be spent for nothing
    if hidden is None:
        return close_session(ssn, previous)
    show_untold_kinds(ssn, hidden)
    if not settled(ssn, hidden):
        ssn.release()
        return None
    result = _close(ssn, previous, hidden)
    if result is not None:
        result.lookalikes_hidden = hidden.count
    return result


def valid_until(ssn: Session) -> float:
    """Until when a cycle on the same cluster would decide as this one: the earliest horizon of
    the session's plugins that read the clock (``Plugin.clock_horizon``), infinite when none
    does, the session's own time when one cannot tell."""
    horizon = math.inf
    for plugin in ssn.plugins.values():
        if plugin.reads_clock:
            own = plugin.clock_horizon(ssn)
            if own is None:
                return ssn.now
            horizon = min(horizon, own)
    return horizon


@contextmanager
def paused_gc():
    """No cyclic garbage collection during a cycle.

    A cycle allocates many short-lived objects while hundreds of thousands of long-lived ones
    (the cluster's pods, jobs, nodes) are alive; the collector would walk all of them again and
    again (measured: over half of a reclaim cycle at 50,000 pods). Reference counting still frees
    almost everything; the collector catches up after the cycle.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _record_uncommitted_pipelines(ssn: Session) -> None:
    """Allocate may leave a pipelined-but-not-ready job's reservations in place: report them.
    Only a statement pipelines a task (no task is Pipelined when a session opens): where none
    did, no job is looked at (an idle cycle's jobs, one by one)."""
    if not ssn.pipelines:
        return
    reported = {d.task for d in ssn.decisions if d.type == "pipeline"}
    for job in ssn.listed_jobs():
        pipelined = job.status_index.get(PIPELINED)
        if not pipelined:
            continue
        for task in pipelined.values():
            if task.key not in reported:
                ssn.record(Decision("pipeline", task.key, task.node_name, None, job.queue, job.uid))


def _unschedulable_in(conditions: list[dict[str, Any]], uid: str) -> bool:
    """Whether ``conditions`` hold an Unschedulable condition written by the session ``uid``."""
    for c in conditions:
        if c.get("type") == "Unschedulable" and c.get("status") == "True" and c.get("transitionID") == uid:
            return True
    return False


class UnschedulableRead:
    """Whether a job's conditions hold an Unschedulable condition written this session, the
    answer for the last list read kept: no list of conditions is changed in place
    (``JobInfo.set_condition`` makes a new one), and most jobs of a busy cluster share one
    (gang's list of its one Scheduled condition), so a close reads that list once."""

    def __init__(self, uid: str) -> None:
        self.uid = uid
        self.last: list[dict[str, Any]] | None = None
        self.answer = False

    def of(self, job: JobInfo) -> bool:
        conditions = job.conditions
        if conditions is not self.last:
            self.last, self.answer = conditions, _unschedulable_in(conditions, self.uid)
        return self.answer


def scheduled_counts(job: JobInfo) -> tuple[int, int, int, int, int]:
    """The job's scheduled tasks (releasing ones still on a node included) and its completed
    ones; then its tasks running, succeeded and failed (the podgroup's pod counts)."""
    scheduled = completed = running = succeeded = failed = 0
    for status, tasks in job.status_index.items():
        if status in SCHEDULED_STATUSES:
            scheduled += len(tasks)
            if status in COMPLETED_STATUSES:
                completed += len(tasks)
        elif status is RELEASING:
            scheduled += sum(1 for t in tasks.values() if t.node_name)
        if status is RUNNING:
            running = len(tasks)
        elif status is SUCCEEDED:
            succeeded = len(tasks)
        elif status is FAILED:
            failed = len(tasks)
    return scheduled, completed, running, succeeded, failed


def podgroup_phase(job: JobInfo, unschedulable: bool, counts: tuple[int, int, int, int, int]) -> str:
    """Volcano's ``getPodGroupPhase`` at session close (``counts``: ``scheduled_counts(job)``)."""
    if unschedulable and job.status_index.get(RUNNING):
        return "Unknown"
    scheduled, completed = counts[0], counts[1]
    minimum = job.min_member  # the podgroup's minMember (minAvailable without a podgroup)
    if scheduled >= minimum:
        return "Completed" if scheduled == completed else "Running"
    if job.phase != "Inqueue":
        return "Pending"
    return job.phase


def queue_allocations(ssn: Session, jobs: list[JobInfo] | None = None) -> dict[str, Resource]:
    """Each queue's allocated resources, added to every ancestor when a root queue exists.
    ``jobs``: the session's jobs less some that hold nothing, in session order (the same sums);
    all of them (``Session.listed_jobs``) when not given.

    A queue's own jobs are summed first (in job order), then each queue's own sum is added to
    its ancestors once, not each job's: an ancestor's figures are the same sums taken in
    another order (the same numbers for whole milli-CPUs, bytes and device counts)."""
    if jobs is None:
        jobs = ssn.listed_jobs()
    totals: dict[str, Resource] = {name: Resource() for name in ssn.queues}
    # queues with allocated jobs, in order of their first job; jobs alike added once
    holding = allocations_by_parts(jobs, totals)
    if holding is None:
        holding = {}
        for job in jobs:
            held = job.allocated  # JobInfo keeps it as the sum over its allocated tasks
            if held.holds_anything():
                totals[job.queue].add_nonzero(held)
                holding[job.queue] = None
    if "root" in ssn.queues:
        own = {name: totals[name].clone() for name in holding}
        for name, amount in own.items():
            _add_to_ancestors(ssn, name, amount, totals)
    return totals


def _add_to_ancestors(ssn: Session, queue_name: str, amount: Resource, totals: dict[str, Resource]) -> None:
    seen = {queue_name}
    current = ssn.queues.get(queue_name)
    while current is not None and current.name != "root":
        parent = current.queue.spec.parent or "root"
        if parent in seen or parent not in totals:
            break
        seen.add(parent)
        totals[parent].add_nonzero(amount)
        current = ssn.queues.get(parent)
