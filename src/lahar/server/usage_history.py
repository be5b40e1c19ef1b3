"""Usage history for the server: the ``UsageLedger`` fed by the control loop, kept in the store.

Why a module of its own: ``lahar.accounting.UsageLedger`` is pure (the caller passes the time
and what ran); this is the shell that reads the server's world after each tick and persists
the ledger's hourly buckets as ``UsageRecord`` objects, so ``lahar usage`` answers the same
after a restart.

- ``observe(world, now, completed)`` charges every Running pod to its queue and its owner for
  the time since the last tick (summed per queue and owner first), and records each job that
  completed (wait = first start - creation, run = completion - first start) exactly once: jobs
  already Completed when the server starts were counted by an earlier run. The sums are kept up
  from the pods, podgroups and vcjobs that changed since the last tick (``World.take_changed``),
  not made again over every running pod: a busy tick costs what changed (measured: 1.8 ms
  against 35 ms at 10,000 running pods with 100 changed), plus, only in a tick where jobs
  complete, one pass over the pods for their start times.
- Buckets are written when they changed, at most every ``flush_every`` seconds (and by
  ``flush``), not every tick: the watch history stays for the objects users watch. A crash
  loses at most that much usage, never counts it twice. So does a tick that fails: its flush
  was undone with it, and the control loop reads the history again from the store.
- Retention: buckets older than the ledger's ``retention`` are dropped from memory and their
  records deleted from the store.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, NamedTuple

from lahar.accounting import BUCKET_SECONDS, DEFAULT_RETENTION, UsageLedger
from lahar.errors import NotFound
from lahar.resources import Resource, whole_below_exact
from lahar.scheduler.cache import parse_time
from lahar.security import OWNER
from lahar.server.access import queue_of

__all__ = ["UsageHistory", "RECORD_KIND"]

RECORD_KIND = "UsageRecord"
NO_USER = "-"


def record_name(queue: str, user: str, start: float) -> str:
    digest = hashlib.sha1(f"{queue}\0{user}".encode()).hexdigest()[:16]
    return f"usage-{int(start)}-{digest}"


class _Charge(NamedTuple):
    """What a running pod is charged to, and the objects it was worked out from."""

    pod: Any
    group_key: str | None
    group: Any
    job: Any  # the vcjob of the podgroup's key, which may name the owner
    owner: tuple[str, str]  # (queue, user)
    request: Resource


class _Totals:
    """The running pods' charges summed per owner (queue, user), kept up pod by pod.

    A sum kept up by adding and taking away equals the sum made afresh only while every value
    and every total is a whole number below 2**53 (the values come from quantities in
    milli-units and bytes, so they are, unless a request names a fraction of a byte or an
    exabyte): ``exact`` says so. A resource name stays in an
    owner's total while one of its pods asks for it, as in a sum made afresh."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self.charges: dict[str, _Charge] = {}  # running pod key -> its charge
        self.by_owner: dict[tuple[str, str], Resource] = {}
        self.pods: dict[tuple[str, str], int] = {}  # owner -> how many running pods
        self.names: dict[tuple[str, str], dict[str, int]] = {}  # owner -> scalar name -> pods asking
        self.by_group: dict[str, set[str]] = {}  # podgroup key -> its running pods charged
        self.exact = True

    def add(self, key: str, charge: _Charge) -> None:
        self.charges[key] = charge
        owner, request = charge.owner, charge.request
        total = self.by_owner.get(owner)
        if total is None:
            self.by_owner[owner] = request.clone()
        else:
            total.add(request)
        self.pods[owner] = self.pods.get(owner, 0) + 1
        if request.scalars:
            names = self.names.setdefault(owner, {})
            for name in request.scalars:
                names[name] = names.get(name, 0) + 1
        if charge.group_key is not None:
            self.by_group.setdefault(charge.group_key, set()).add(key)
        if self.exact and not (whole_below_exact(request) and whole_below_exact(self.by_owner[owner])):
            self.exact = False

    def remove(self, key: str) -> _Charge | None:
        """Take the pod's charge out of its owner's total; returns the charge (None if none)."""
        charge = self.charges.pop(key, None)
        if charge is None:
            return None
        owner, request = charge.owner, charge.request
        group_key = charge.group_key
        if group_key is not None:
            members = self.by_group[group_key]
            members.discard(key)
            if not members:  # a podgroup whose pods all ended leaves no entry behind
                del self.by_group[group_key]
        left = self.pods[owner] - 1
        if not left:
            del self.by_owner[owner], self.pods[owner]
            self.names.pop(owner, None)
            return charge
        self.pods[owner] = left
        total = self.by_owner[owner]
        total.sub(request)
        if request.scalars and total.scalars is not None:
            names = self.names[owner]
            for name in request.scalars:
                names[name] -= 1
                if not names[name]:
                    del names[name], total.scalars[name]
            if not total.scalars:
                total.scalars = None
        return charge

    def affected(self, changed: set[str]) -> list[str]:
        """The pods to look at again: those that changed, and the running pods of each podgroup
        (or vcjob) that changed. Keys of different kinds may be alike: looking again is harmless."""
        keys = set(changed)
        for key in changed:
            keys.update(self.by_group.get(key, ()))
        return sorted(keys)

    def rows(self) -> list[tuple[str, str, Resource]]:
        """(queue, user, total) in owner order: the ledger adds a queue's users up in this
        order, so a sum made afresh and one kept up hand it the same rows."""
        return [(queue, user, self.by_owner[(queue, user)]) for queue, user in sorted(self.by_owner)]


class UsageHistory:
    def __init__(self, store: Any, retention: float = DEFAULT_RETENTION, flush_every: float = 60.0, series_points: int = 2000) -> None:
        self.store, self.flush_every = store, flush_every
        self.ledger = UsageLedger(retention, series_points)
        self._written: dict[tuple[str, str, float], str] = {}  # bucket key -> its last written JSON
        self._counted: set[str] = set()  # completed podgroups already charged
        self._totals: _Totals | None = None  # the running pods' charges, summed per owner
        self._next_flush: float | None = None
        self._world: Any = None
        self._load()

    def _load(self) -> None:
        rows = [item["bucket"] for item in self.store.list(RECORD_KIND)[0] if isinstance(item.get("bucket"), dict)]
        self.ledger.restore(rows)
        for key, bucket in self.ledger.buckets.items():
            self._written[key] = repr(bucket.to_json())

    # ----------------------------------------------------------------- feeding

    def start(self, world: Any) -> None:
        """Jobs already completed when the server starts were counted before: skip them."""
        self._world = world
        self._counted = {key for key, group in world.podgroups.items() if group.status.phase == "Completed"}

    def observe(self, world: Any, now: float, completed: Iterable[str] | None = None) -> None:
        """``completed``: the podgroups the cycle found Completed (None: look at every podgroup)."""
        self.ledger.observe(now, self._running(world))
        candidates = world.podgroups if completed is None else completed
        self._finished(world, now, candidates)

    def _running(self, world: Any) -> list[tuple[str, str, Resource]]:
        """(queue, user, summed requests) of the world's Running pods. Kept up from the pods,
        podgroups and vcjobs that changed since the last call (``World.take_changed``) while the
        sums stay exact; summed again over every running pod otherwise."""
        changed = world.take_changed()
        totals = self._totals
        if changed is None or totals is None or totals.world is not world or not totals.exact:
            totals = self._totals = self._recount(world)
        else:
            for key in totals.affected(changed):
                known = totals.remove(key)
                pod = world.pods.get(key)
                if pod is not None and key in world.started and pod.status.phase == "Running":
                    totals.add(key, _charge(world, pod, known))
            if not totals.exact:  # a value this tick brought is not whole: summed afresh from now on
                totals = self._totals = self._recount(world)
        return totals.rows()

    def _recount(self, world: Any) -> _Totals:
        """Every running pod summed again, in the order the world started them; a pod keeps its
        charge while neither it, its podgroup nor its vcjob changed."""
        known = self._totals.charges if self._totals is not None else {}
        totals = _Totals(world)
        for key in world.started:  # the Running pods (with a start time)
            pod = world.pods.get(key)
            if pod is None or pod.status.phase != "Running":
                continue
            charge = known.get(key)
            if charge is None or charge.pod is not pod or not _same_group(world, charge):
                charge = _charge(world, pod, charge)
            totals.add(key, charge)
        return totals

    def _finished(self, world: Any, now: float, candidates: Iterable[str]) -> None:
        done = []
        for key in candidates:
            group = world.podgroups.get(key)
            if group is not None and group.status.phase == "Completed" and key not in self._counted:
                done.append(key)
        if not done:
            return
        starts: dict[str, float] = {}
        for pod in world.pods.values():
            if pod.group_name and pod.status.start_time:
                group_key = f"{pod.metadata.namespace}/{pod.group_name}"
                started = parse_time(pod.status.start_time)
                starts[group_key] = min(starts.get(group_key, started), started)
        for key in sorted(done):
            group = world.podgroups[key]
            created = parse_time(group.metadata.creation_timestamp) if group.metadata.creation_timestamp else now
            started = starts.get(key, now)
            user = _owner(None, group, world.jobs.get(key))
            self.ledger.job_finished(now, group.spec.queue or "default", user, max(0.0, started - created), max(0.0, now - started))
            self._counted.add(key)

    # ----------------------------------------------------------------- persisting

    def maybe_flush(self, now: float) -> int:
        if self._next_flush is None:
            self._next_flush = now + self.flush_every
            return 0
        if now < self._next_flush:
            return 0
        self._next_flush = now + self.flush_every
        return self.flush()

    def flush(self) -> int:
        """Write changed buckets, delete expired ones; returns how many records were written."""
        written = 0
        for key, bucket in sorted(self.ledger.buckets.items()):
            body = bucket.to_json()
            text = repr(body)
            if self._written.get(key) == text:
                continue
            self._put(record_name(*key), body)
            self._written[key] = text
            written += 1
        self._counted &= set(self._counted_live())
        for key in [k for k in self._written if k not in self.ledger.buckets]:
            del self._written[key]
            try:
                self.store.delete(RECORD_KIND, record_name(*key))
            except NotFound:
                pass
        return written

    def _counted_live(self) -> Iterable[str]:
        world = self._world
        return self._counted if world is None else (k for k in self._counted if k in world.podgroups)

    def _put(self, name: str, bucket: dict) -> None:
        document = {"apiVersion": "lahar.dev/v1alpha1", "kind": RECORD_KIND, "metadata": {"name": name}, "bucket": bucket}
        try:
            stored = self.store.get(RECORD_KIND, name)
        except NotFound:
            self.store.create(document)
            return
        document["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        self.store.update(document)

    # ----------------------------------------------------------------- reading

    def hourly(self, since: float = 0.0, queue: str | None = None, user: str | None = None) -> dict[str, dict[str, list]]:
        """Per resource, per queue, [[hour start, mean amount in use], ...] from the buckets."""
        totals: dict[tuple[str, str, float], float] = {}
        for (q, u, start), bucket in self.ledger.buckets.items():
            if start + BUCKET_SECONDS <= since or (queue and q != queue) or (user and u != user):
                continue
            for name, value in bucket.usage.items():
                totals[(name, q, start)] = totals.get((name, q, start), 0.0) + value / BUCKET_SECONDS
        out: dict[str, dict[str, list]] = {}
        for (name, q, start), value in sorted(totals.items()):
            out.setdefault(name, {}).setdefault(q, []).append([start, round(value, 6)])
        return out


def _charge(world: Any, pod: Any, known: _Charge | None = None) -> _Charge:
    """What a running pod is charged to (its podgroup's queue, else its own) and for what; the
    request of ``known``, its last charge, while the pod is the same object (a pod's request is
    worked out from its spec in exact fractions: the dearest part)."""
    group_key = f"{pod.metadata.namespace}/{pod.group_name}" if pod.group_name else None
    group = world.podgroups.get(group_key) if group_key else None
    job = world.jobs.get(group_key) if group_key else None
    queue = group.spec.queue if group is not None else queue_of(pod)
    request = known.request if known is not None and known.pod is pod else _request(pod)
    return _Charge(pod, group_key, group, job, (queue or "default", _owner(pod, group, job)), request)


def _same_group(world: Any, charge: _Charge) -> bool:
    """Whether the pod's podgroup and vcjob are the objects its charge was worked out from (the
    world replaces an object that changes, it never changes one in place)."""
    key = charge.group_key
    if key is None:
        return True
    return world.podgroups.get(key) is charge.group and world.jobs.get(key) is charge.job


def _owner(pod: Any, group: Any, job: Any) -> str:
    """The owner the pod's annotation names, else its podgroup's, else (with a podgroup) the
    vcjob's of the podgroup's key."""
    for obj in (pod, group):
        if obj is not None and obj.metadata.annotations.get(OWNER):
            return obj.metadata.annotations[OWNER]
    if group is not None and job is not None and job.metadata.annotations.get(OWNER):
        return job.metadata.annotations[OWNER]
    return NO_USER


def _request(pod: Any) -> Resource:
    return Resource.from_json({name: float(value) for name, value in pod.requests().items() if name != "pods"})
