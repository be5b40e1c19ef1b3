"""Why a job is still waiting: one structured reason per job, computed at session close.

Volcano leaves users with a podgroup condition such as ``3/4 tasks in gang unschedulable: ...``.
Lahar says which rule held the job back, in a fixed vocabulary a script can match on:

=====================  =========================================================================
kind                   meaning
=====================  =========================================================================
queue-suspended        the queue is Suspended: nothing is scheduled for it until it is resumed
queue-state            the queue is Closed, Closing or Unknown and the configuration schedules
                       only Open queues
queue-missing          the job names a queue that does not exist
capability             admitting the job would take its queue over its capability (hard cap)
cluster-full           the cluster (times the overcommit factor) has no room for the job
gang-invalid           fewer valid tasks than minAvailable: the gang can never be satisfied
deserved               the queue has used its deserved share and cannot take more now
waiting-for-reclaim    resources are being reclaimed or preempted for the job: its tasks are
                       reserved (pipelined) on nodes where evicted tasks are terminating
no-node-fits           no node has room for the job's tasks (per-node reasons summarised)
gang-unsatisfied       some tasks fit (and may be reserved where they do), but not minAvailable
                       of them at once
=====================  =========================================================================

The reasons read notes that actions and plugins leave on the session (``ssn.note``) and the fit
errors recorded per task; they never change a decision.
"""

from __future__ import annotations

from typing import Any, Final, Hashable

from lahar.resources import Dim, Resource
from lahar.scheduler.api import PENDING, PIPELINED, JobInfo, QueueInfo
from lahar.scheduler.framework.session import Session

__all__ = ["explain_made_of", "quantities_text"]


def quantities_text(res: Resource | None, only: list[str] | None = None) -> str:
    """``cpu=2, memory=4Gi`` (pods left out); only the named dimensions when given."""
    if res is None:
        return "-"
    shown = {k: v for k, v in res.to_quantities().items() if k != "pods" and (only is None or k in only)}
    if only:
        shown = {k: shown.get(k, "0") for k in only}
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or "nothing"


def explain_made_of(
    ssn: Session, job: JobInfo, last: dict[str, Any] | None, last_part: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The reason ``job`` waits (None when it has nothing waiting), and the part it is made of
    (all but its queue and job; only read). ``last``: the job's reason the last time, given back
    itself when the reason reads the same (a waiting job's reason mostly does from one cycle to
    the next: no new object, and its status compares at once). ``last_part``: the part ``last``
    was made of; the same object again (a deserved reason's part is one object per message,
    ``_DESERVED``) tells at once that ``last`` reads the same."""
    part = _why(ssn, job)
    if part is None:
        return None, None
    if last is not None and ((part is last_part and last.get("queue") == job.queue) or _reads_as(last, job, part)):
        return last, part
    found = {"queue": job.queue, "job": job.uid}
    found.update(part)
    return found, part


def _reads_as(last: dict[str, Any], job: JobInfo, reason: dict[str, Any]) -> bool:
    """Whether ``last`` is the job's reason made of ``reason``."""
    if len(last) != len(reason) + 2:
        return False
    for key, value in reason.items():
        found = last.get(key, _ABSENT)
        if found is not value and found != value:  # the same object, mostly (``_DESERVED``)
            return False
    return last.get("job") == job.uid and last.get("queue") == job.queue


_ABSENT: Final = object()


def _why(ssn: Session, job: JobInfo) -> dict[str, Any] | None:
    """What ``explain_made_of`` says of the job, less its queue and uid (only read: it may be shared)."""
    index = job.status_index
    if not index.get(PENDING):
        if job.phase in ("Running", "Completed"):
            return None
        if not index.get(PIPELINED) and (job.tasks or job.phase not in ("Pending", "Inqueue")):
            return None  # every task placed (perhaps in this very cycle, before the phase moves on)
    noted = ssn.notes.get(job.uid)
    notes = {n["kind"]: n for n in noted} if noted else {}
    queue = ssn.queues.get(job.queue)
    reason = _queue_reason(ssn, job, queue, notes)
    if reason is None:
        reason = _admission_reason(ssn, job, queue, notes)
    if reason is None:
        reason = _gang_reason(ssn, job, queue, notes)
    if reason is None:
        reason = _placement_reason(ssn, job, queue, notes)
    if reason is None:
        reason = {"kind": "gang-unsatisfied", "message": _gang_message(job)}
    return reason


def _queue_reason(ssn: Session, job: JobInfo, queue: QueueInfo | None, notes: dict) -> dict | None:
    if queue is None:
        return {"kind": "queue-missing", "message": f"queue {job.queue} does not exist"}
    if queue.state == "Suspended":
        return {"kind": "queue-suspended", "message": f"queue {queue.name} is suspended"}
    if "queue-state" in notes:
        return {"kind": "queue-state", "message": f"queue {queue.name} is {queue.state}: only Open queues are scheduled"}
    return None


def _admission_reason(ssn: Session, job: JobInfo, queue, notes: dict) -> dict | None:
    if "queue-quota" in notes:
        note = notes["queue-quota"]
        attr = ssn.queue_attrs.get(note["queue"])
        cap = attr.real_capability if attr is not None else None
        dims = note.get("resources") or []
        names = ", ".join(dims)
        queue_obj = ssn.queues.get(note["queue"])
        capped = queue_obj is not None and bool(queue_obj.queue.spec.capability)
        limit = "its capability" if capped else "the cluster's size less other queues' guarantees (it sets no capability)"
        message = (
            f"queue {note['queue']} capability reached on {names}: the job needs {quantities_text(job.get_min_resources(), dims)}, "
            f"more than the queue has left of at most {quantities_text(cap, dims)}{_counted(attr, dims)}, {limit}"
        )
        return {"kind": "capability", "message": message, "resources": note.get("resources") or []}
    if "cluster-overcommit" in notes:
        names = ", ".join(notes["cluster-overcommit"].get("resources") or [])
        return {"kind": "cluster-full", "message": f"the cluster has no room to admit the job ({names} overused)"}
    return None


def _counted(attr: Any, dims: list[str]) -> str:
    """What the enqueue check counts against the capability besides the job (``admits``) and
    what the queue holds: what its admitted jobs still reserve (inqueue), less what its jobs hold
    above their minimum (elastic). Named without figures, and those two only where they are not
    zero: what the queue holds, reserves and holds above the minimum moves with every job
    admitted, placed or ended, and a reason that changes is written again for every job waiting
    in the queue. ``job why`` adds what the queue holds when asked."""
    if attr is None:
        return ""
    parts = []
    if _any_on(attr.inqueue, dims):
        parts.append("jobs it admitted that wait for nodes reserve part of it")
    if _any_on(attr.elastic, dims):
        parts.append("what its jobs hold above their minimum is not counted")
    return f" ({'; '.join(parts)})" if parts else ""


def _any_on(res: Resource, dims: list[str]) -> bool:
    return any(not res.is_zero(name) for name in dims)


def _gang_reason(ssn: Session, job: JobInfo, queue, notes: dict) -> dict | None:
    facts = ssn.job_facts(job)
    if not facts.valid:
        return {"kind": "gang-invalid", "message": facts.valid_message}
    return None


def _placement_reason(ssn: Session, job: JobInfo, queue, notes: dict) -> dict | None:
    pipelined = job.tasks_in(PIPELINED) if PIPELINED in job.status_index else None
    if pipelined:
        nodes = sorted({t.node_name for t in pipelined})
        if any(_releasing(ssn, name) for name in nodes):
            return {
                "kind": "waiting-for-reclaim",
                "message": f"{len(pipelined)} task(s) reserved on {', '.join(nodes)}: waiting for evicted tasks to release resources",
            }
        # reserved where they fit now, with nothing to wait for there: the rest of the gang does not fit
        missing = max(job.min_available - job.ready_task_num() - len(pipelined), 1)
        return {
            "kind": "gang-unsatisfied",
            "message": f"{len(pipelined)} task(s) reserved on {', '.join(nodes)}, where they fit; {missing} more task(s) must fit "
            f"at the same time to start the job (minAvailable {job.min_available})",
        }
    if "queue-allocatable" in notes or "cannot-reclaim" in notes:
        return _deserved_reason(ssn, job)
    if job.fit_errors:
        first = next(iter(job.fit_errors.values()))
        message = first.message()
        blocked = notes.get("reclaim-failed", {}).get("unreclaimable") or []
        if blocked:
            message += f" Nothing could be reclaimed: queue(s) {', '.join(blocked)} hold the resources and are not reclaimable."
        return {"kind": "no-node-fits", "message": message, "nodes": first.histogram()}
    if "overused" in {n["kind"] for n in ssn.notes.get(f"queue/{job.queue}", [])}:
        return _deserved_reason(ssn, job)
    return None


def _releasing(ssn: Session, node_name: str) -> bool:
    """Whether tasks on the node are terminating (evicted or deleted), freeing resources there."""
    node = ssn.nodes.get(node_name)
    return node is not None and not node.releasing.is_empty()


def _deserved_reason(ssn: Session, job: JobInfo) -> dict:
    """The reason, only read (``explain_made_of`` copies it into the job's own)."""
    kept = ssn.job_facts(job).kept  # the pending request reads the tasks alone
    asked: tuple[Resource, Hashable] | None = kept.get("pending-request")
    if asked is None:
        asked = kept["pending-request"] = _pending_request(job)
    # the same for every waiting job of the queue that asks alike: written once per session
    written: dict[tuple[str, Hashable], dict[str, str]] | None = ssn.memo.get("deserved-reasons")
    if written is None:
        written = ssn.memo["deserved-reasons"] = {}
    key = (job.queue, asked[1])
    reason = written.get(key)
    if reason is None:
        reason = written[key] = _DESERVED.part(_deserved_message(ssn, job.queue, asked[0]))
    return reason


class _DeservedParts:
    """One reason part per deserved message, kept from one session to the next: a waiting job's
    last reason was then made of the very part its new one is made of, which tells at once that
    it reads the same (``explain_made_of``; ``_reads_as`` finds the same values by identity).
    Emptied when full."""

    def __init__(self) -> None:
        self.parts: dict[str, dict[str, str]] = {}

    def part(self, message: str) -> dict[str, str]:
        found = self.parts.get(message)
        if found is None:
            if len(self.parts) >= DESERVED_PARTS_KEPT:
                self.parts = {}
            found = self.parts[message] = {"kind": "deserved", "message": message}
        return found


DESERVED_PARTS_KEPT = 10_000
_DESERVED: Final = _DeservedParts()


def _pending_request(job: JobInfo) -> tuple[Resource, Hashable]:
    """The sum of the job's pending requests (only read), and a key equal for equal sums."""
    pending = job.tasks_in(PENDING)
    if len(pending) == 1:
        return pending[0].resreq, pending[0].request_id()  # the sum of one is the request itself
    request = Resource()
    for task in pending:
        request.add(task.resreq)
    # the values themselves (a sum is no task's request: not one more number for the process)
    return request, (request.milli_cpu, request.memory, tuple(request.scalars.items()) if request.scalars is not None else None)


def _deserved_message(ssn: Session, queue: str, request: Resource) -> str:
    """Without the queue's figures: what it holds moves with every task it starts or ends, and
    what it deserves with every other queue's demand, and a reason that changes is written
    again for every job waiting in the queue. ``job why`` adds them when asked
    (``server.app.queue_figures``)."""
    attr = ssn.queue_attrs.get(queue)
    deserved = attr.deserved if attr is not None else Resource()
    allocated = attr.allocated if attr is not None else Resource()
    if not request.clone().less_equal(deserved, Dim.ZERO) or allocated.less_equal(Resource(), Dim.ZERO):
        return (
            f"the job asks for {quantities_text(request)}, more than queue {queue} deserves; it can start "
            "only on idle capacity, and reclaiming from other queues would take this queue over its deserved share"
        )
    return f"queue {queue} has used its deserved share; the job's {quantities_text(request)} must wait until the queue's usage falls or its share grows"


def _gang_message(job: JobInfo) -> str:
    for condition in job.conditions:
        if condition.get("type") == "Unschedulable" and condition.get("message"):
            return condition["message"]
    return f"{job.min_available - job.ready_task_num()} more task(s) must fit together to start the job"
