"""Events a person should see, kept as ``LaharEvent`` objects in the store, and their retention.

Why a module of its own: the control loop decides many things every second, and only a few of
them matter to a person: a job's tasks were bound; tasks were evicted, why, and for which queue;
a job's pending reason changed; a queue changed state; a command was carried out or ignored.
``EventLog`` turns a cycle's decisions into those few events:

- one event per job per cycle and kind of decision (never one per task): a 100-task job that
  starts is one ``Bound`` event; a reclaim that evicts 5 tasks of one job is one ``Evicted``;
- a pending reason is reported when its *kind* changes (``deserved`` -> ``cluster-full``), not
  when only its numbers move, so a waiting job does not write an event every tick;
- queue events (state changes, refused or ignored actions) as the queue controller states them.

Every event carries labels ``lahar.dev/queue``, ``lahar.dev/namespace`` and ``lahar.dev/job``
where they apply, so ``labelSelector`` finds a queue's or a job's events, and ``matches`` answers
``?for=queue/NAME`` or ``?for=job/NS/NAME`` for events written before labels existed (audit).

Retention: ``prune`` keeps at most ``max_events`` events and none older than ``max_age``
seconds (oldest first). It is cheap to call every tick: it looks at the store only every
``prune_every`` seconds (1 s by default), and each look reads the events written since the last
one and deletes the extra ones in one ``delete_many``. A look that waited long would delete in
one go what a busy server wrote meanwhile, inside the loop's tick, which holds the service's
write lock while it writes: 30 s at 700 events a second (350 one-pod jobs, each bound and
audited) was 21,000 deletions and about a second of requests waiting.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable, Iterable

from fastapi import FastAPI, Query, Request

from lahar.errors import BadRequest
from lahar.store.base import StoreGone, watch_through

__all__ = ["EventLog", "matches", "parse_for", "install", "QUEUE_LABEL", "JOB_LABEL", "NAMESPACE_LABEL"]

EVENT_KIND = "LaharEvent"
API_VERSION = "lahar.dev/v1alpha1"
QUEUE_LABEL = "lahar.dev/queue"
JOB_LABEL = "lahar.dev/job"
NAMESPACE_LABEL = "lahar.dev/namespace"
DEFAULT_MAX_EVENTS = 10_000
DEFAULT_MAX_AGE = 14 * 86400.0
DEFAULT_PRUNE_EVERY = 1.0


class EventLog:
    """Writes events through ``store.create`` (inside the caller's batch) and bounds how many stay."""

    def __init__(
        self,
        store: Any,
        clock: Callable[[], float] = time.time,
        max_events: int = DEFAULT_MAX_EVENTS,
        max_age: float = DEFAULT_MAX_AGE,
        prune_every: float = DEFAULT_PRUNE_EVERY,
    ) -> None:
        self.store, self.clock = store, clock
        self.max_events, self.max_age, self.prune_every = max_events, max_age, prune_every
        self._known: deque[tuple[float, str]] = deque()  # (timestamp, name), oldest first
        self._version = 0
        self._next_prune = 0.0
        self._bound_now: set[str] = set()  # jobs with binds in the last cycle given to ``decisions``
        self._relist()

    # ----------------------------------------------------------------- writing

    def emit(self, kind: str, name: str, reason: str, message: str, type_: str = "Normal", *, queue: str | None = None, namespace: str | None = None, job: str | None = None, now: float | None = None) -> dict:
        """Write one event about object ``kind``/``name`` (a job's name is ``namespace/name``)."""
        labels = {QUEUE_LABEL: queue, NAMESPACE_LABEL: namespace, JOB_LABEL: job}
        stem = (job or name.replace("/", "-")).lower()[:40].strip("-.") or "event"
        return self.store.create(
            {
                "apiVersion": API_VERSION,
                "kind": EVENT_KIND,
                "metadata": {"generateName": f"{stem}-", "labels": {k: v for k, v in labels.items() if v}},
                "involvedObject": {"kind": kind, "name": name},
                "type": type_,
                "reason": reason,
                "message": message,
                "timestamp": self.clock() if now is None else now,
            },
            owned=True,
        )

    def queue_events(self, events: Iterable[Any], now: float | None = None) -> None:
        """The queue controller's ``QueueEvent`` values (state changes, refused or ignored actions)."""
        for event in events:
            self.emit("Queue", event.queue, event.reason, event.message, event.type, queue=event.queue, now=now)

    def decisions(self, decisions: Iterable[Any], queue_of: Callable[[str], str | None], now: float) -> None:
        """One ``Bound`` event per job and one ``Evicted`` event per (job, reason, beneficiary)."""
        bound: dict[str, list[Any]] = {}
        evicted: dict[tuple[str, str, str | None, str | None], list[Any]] = {}
        waiting: list[Any] = []  # evictions not yet followed by the placement they make room for
        for decision in decisions:
            if decision.type == "evict":
                waiting.append(decision)
            elif decision.type in ("bind", "pipeline"):
                for victim in waiting:
                    key = (victim.job or "", victim.reason or "evicted", decision.queue, decision.job)
                    evicted.setdefault(key, []).append(victim)
                waiting = []
                if decision.type == "bind":
                    bound.setdefault(decision.job or "", []).append(decision)
        for victim in waiting:
            evicted.setdefault((victim.job or "", victim.reason or "evicted", None, None), []).append(victim)
        self._bound_now = set(bound)
        for job, items in sorted(bound.items()):
            nodes = sorted({d.node for d in items if d.node})
            message = f"{len(items)} task{'s' if len(items) != 1 else ''} of {job} bound to {_few(nodes)}"
            self._job_event(job, items[0].queue or queue_of(job), "Bound", message, "Normal", now)
        for (job, why, by_queue, by_job), items in sorted(evicted.items(), key=lambda kv: tuple(str(p) for p in kv[0])):
            tasks = sorted(d.task for d in items)
            by = f" for job {by_job} of queue {by_queue}" if by_job else ""
            message = f"{len(items)} task{'s' if len(items) != 1 else ''} of {job} evicted ({why}){by}: {_few(tasks)}"
            self._job_event(job, items[0].queue or queue_of(job), "Evicted", message, "Warning", now, reason_word={"reclaim": "Reclaimed", "preempt": "Preempted"}.get(why))

    def reason(self, job: str, queue: str | None, before: dict | None, after: dict | None, now: float) -> None:
        """A waiting job's reason went from ``before`` to ``after`` (as stored on its podgroup):
        an event when the kind of reason is new. Stateless, so a restart writes nothing again."""
        kind = (after or {}).get("kind")
        if kind is None or kind == (before or {}).get("kind") or job in self._bound_now:
            return  # a job bound this cycle is not waiting, whatever the session said at its close
        message = f"{job} waits: {kind}" + (f": {after['message']}" if after.get("message") else "")
        self._job_event(job, queue, "PendingReason", message, "Normal", now)

    def _job_event(self, job: str, queue: str | None, reason: str, message: str, type_: str, now: float, reason_word: str | None = None) -> None:
        namespace, _, name = job.partition("/")
        self.emit("Job", job, reason_word or reason, message, type_, queue=queue, namespace=namespace or None, job=name or None, now=now)

    # ----------------------------------------------------------------- retention

    def prune(self, now: float) -> int:
        """Delete the oldest events beyond ``max_events`` or older than ``max_age``; returns how many."""
        if now < self._next_prune:
            return 0
        self._next_prune = now + self.prune_every
        self._catch_up()
        horizon, doomed = now - self.max_age, []
        while self._known and (len(self._known) > self.max_events or self._known[0][0] < horizon):
            doomed.append(self._known.popleft()[1])
        return self._delete(doomed) if doomed else 0

    def _delete(self, names: list[str]) -> int:
        """Delete the events named, in one go; how many were there. When the versions they took
        are all that was written since the last look (no other writer came between: the loop's
        tick holds the write lock), the next look starts after them instead of reading every
        deletion back."""
        before = self.store.current_version()
        deleted = len(self.store.delete_many(EVENT_KIND, names))
        if self._version == before and self.store.current_version() == before + deleted:
            self._version = before + deleted
        return deleted

    def _relist(self) -> None:
        items, self._version = self.store.list(EVENT_KIND)
        self._known = deque(sorted((_stamp(e), e["metadata"]["name"]) for e in items))

    def _catch_up(self) -> None:
        try:
            changes, self._version = watch_through(self.store, self._version, {EVENT_KIND})
        except StoreGone:
            self._relist()
            return
        known, in_order = self._known, True
        for change in changes:
            if change.type == "ADDED":
                stamp = _stamp(change.object)
                if known and stamp < known[-1][0]:
                    in_order = False  # written with an earlier time than one known (another clock)
                known.append((stamp, change.key))
        if not in_order:
            self._known = deque(sorted(known))


def _stamp(event: dict) -> float:
    value = event.get("timestamp")
    return float(value) if isinstance(value, (int, float)) else 0.0


def _few(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


# --------------------------------------------------------------------- selecting


def parse_for(text: str) -> tuple[str, str]:
    """``queue/NAME``, ``job/NAME`` (namespace default) or ``job/NS/NAME`` -> (kind, key)."""
    kind, _, rest = text.partition("/")
    kind = kind.strip().lower()
    if not rest or kind not in ("queue", "q", "job", "vcjob", "podgroup", "pg"):
        raise BadRequest(f'for: "{text}" is not queue/NAME or job/[NAMESPACE/]NAME')
    if kind in ("queue", "q"):
        return "Queue", rest
    return "Job", rest if "/" in rest else f"default/{rest}"


def matches(event: dict, kind: str, key: str) -> bool:
    """Whether ``event`` is about the queue or job: by its labels, or by the object it names.
    A queue's events include those of the jobs in it."""
    labels = (event.get("metadata") or {}).get("labels") or {}
    involved = event.get("involvedObject") or {}
    if kind == "Queue":
        return labels.get(QUEUE_LABEL) == key or (involved.get("kind") == "Queue" and involved.get("name") == key)
    namespace, _, name = key.partition("/")
    if labels.get(JOB_LABEL) == name and labels.get(NAMESPACE_LABEL) == namespace:
        return True
    return involved.get("kind") in ("Job", "PodGroup") and involved.get("name") == key


def install(app: FastAPI, service: Any) -> None:
    """``GET /lahar/v1/events?for=queue/NAME|job/[NS/]NAME&limit=N``: newest last."""

    @app.get("/lahar/v1/events", tags=["Lahar"], summary="Events, optionally for one queue (and its jobs) or one job")
    def list_events(
        request: Request,
        for_: str | None = Query(None, alias="for", description="queue/NAME or job/[NAMESPACE/]NAME"),
        limit: int = Query(500, ge=1, le=10_000, description="At most this many, the newest."),
    ) -> dict:
        items, version = service.list(EVENT_KIND, who=getattr(request.state, "principal", None))
        if for_:
            kind, key = parse_for(for_)
            items = [e for e in items if matches(e, kind, key)]
        items.sort(key=lambda e: (_stamp(e), int((e.get("metadata") or {}).get("resourceVersion") or 0)))
        return {"apiVersion": API_VERSION, "kind": "LaharEventList", "metadata": {"resourceVersion": str(version)}, "items": items[-limit:]}
