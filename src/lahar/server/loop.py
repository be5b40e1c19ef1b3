"""The server's control loop: controllers, the simulated runtime and the scheduler, on the store.

Every period (1 s by default) ``ControlLoop.tick`` runs the same steps as the simulator, on
the objects the store holds:

1. catch up with every change since the last tick (the store's watch): what requests wrote;
   the tick's own writes are in the world already and are not read back;
2. controllers: vcjobs get their podgroup and pods, bare pods a podgroup, Command objects are
   carried out and deleted, queue statuses are refreshed (counts, Closing -> Closed);
3. the runtime: tasks whose ``lahar.dev/duration`` has run out succeed;
4. one scheduling cycle; its binds, evictions, podgroup phases, pending reasons and queue
   allocations are written back;
5. what a person should see becomes events (``server.events``: per job, not per task, and
   on change only), and usage is charged to queues and users (``server.usage_history``).

A tick writes in two store transactions (one disk sync each): steps 1 to 3 in one, then
steps 4 and 5 in the other. The cycle itself runs between them, outside the service lock, so
requests are answered while it runs (it reads only the loop's own copy of the cluster). The
second transaction first takes in what they wrote meanwhile and drops a decision whose pod is
gone, or a bind whose pod another writer bound or whose node is gone. A crash therefore
leaves all of a cycle's binds, evictions and statuses or none of them. Under ``LeaderLoop``
(several servers on PostgreSQL) the whole tick is still one fenced transaction.

``StoreWorld`` is the simulator's ``World`` whose writes go to the store first: the simulator
and the server share one implementation of every controller and of how decisions are applied.
Everything the loop knows is rebuilt from the store at start, so a restart (even after
``kill -9``) resumes where the store left off: a task bound before the crash is bound in the
store, and is never bound twice.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable

from lahar.controller.queue import QueueEvent, apply_action
from lahar.errors import AlreadyExists, Conflict, LaharError, NotFound
from lahar.model.base import ApiObject
from lahar.model.cluster import Command
from lahar.model.manifest import KINDS
from lahar.model.job import Job
from lahar.model.workload import Pod, PodGroup
from lahar.scheduler.cycle import CycleResult, run_cycle
from lahar.scheduler.framework.config import SchedulerConf
from lahar.server.events import EventLog
from lahar.server.heap import HeapCollector
from lahar.server.service import EVENT_KIND, ApiService
from lahar.server.usage_history import UsageHistory
from lahar.sim.world import World

__all__ = ["StoreWorld", "ControlLoop", "REASON_ANNOTATION"]

log = logging.getLogger("lahar.loop")
REASON_ANNOTATION = "lahar.dev/pending-reason"
# metadata a store fills in (wire name, field name): on create all of them, on update the version
_STAMPED = (("name", "name"), ("namespace", "namespace"), ("uid", "uid"), ("creationTimestamp", "creation_timestamp"), ("resourceVersion", "resource_version"))
_KEPT_BY_UPDATE = (("uid", "uid"), ("creationTimestamp", "creation_timestamp"), ("namespace", "namespace"))
_WATCHED = ("PriorityClass", "Queue", "Node", "Job", "PodGroup", "Pod", "Command")


class StoreWorld(World):
    """A ``World`` whose tables mirror the store and whose writes go to the store."""

    def __init__(self, service: ApiService, events: EventLog | None = None) -> None:
        self._unreconciled: set[tuple[str, str]] = set()  # (kind, key) for reconcile_all to look at
        # vcjob and pod key -> when it came into its table: the tables' own order (a dict keeps
        # its keys by first insertion; one deleted and put back comes last), for reconcile_all
        self._arrival: dict[str, dict[str, int]] = {"Job": {}, "Pod": {}}
        self._arrivals = itertools.count()
        self.service = service
        self.event_log = events or EventLog(service.store, service.clock)
        super().__init__(raw=True)  # the store already holds root and default
        self.raw = False
        self.commands: dict[str, Command] = {}
        self.version = 0
        self.load()

    def load(self) -> None:
        version = self.service.store.current_version()
        for kind in _WATCHED:
            for item in self.service.store.list(kind)[0]:
                self._ingest_document(kind, item)
        self.version = version

    def sync(self) -> int:
        """Apply every change since the last sync; returns how many there were."""
        events = self.service.store.watch(self.version, set(_WATCHED), timeout=0.0)
        for event in events:
            if event.type == "DELETED":
                self._forget_document(event.kind, event.object)
            else:
                self._ingest_document(event.kind, event.object)
            self.version = max(self.version, event.resource_version)
        return len(events)

    def skip_own_writes(self) -> None:
        """Move the watch position past this tick's own writes, at the end of the tick's batch.

        Every other writer waits while the batch is open, so each change after the ``sync`` at
        the start of the tick was written here and taken in already (``_store`` ingests what
        it wrote). Reading them back on the next ``sync`` would parse and validate every bind
        and status of the tick a second time (measured: a fifth of a busy tick).
        """
        self.version = max(self.version, self.service.store.current_version())

    def _ingest_document(self, kind: str, item: dict) -> None:
        obj = KINDS[kind].model_validate(item)
        if isinstance(obj, Command):
            self.commands[obj.key] = obj
        else:
            self.ingest(obj)

    def _forget_document(self, kind: str, item: dict) -> None:
        obj = KINDS[kind].model_validate(item)
        if isinstance(obj, Command):
            self.commands.pop(obj.key, None)
        else:
            self.forget(obj)

    def _store(self, obj: ApiObject) -> None:
        """Write to the store, then take the stored object in (with its new resource version).

        ``obj`` is the caller's own copy (its parts may be shared with the object it replaces,
        never changed in place). Its dump is handed to the store, which stamps it and keeps it
        (no copy): an update of an object this world holds names the version the world holds,
        so the store compares versions instead of reading the stored object back (when another
        writer changed it since, the write goes through as before, over whatever is stored).
        The written object is then taken in as ``obj`` with the metadata the store stamped
        (uid, creation time, version), not parsed back."""
        body = obj.dump()
        body["metadata"].pop("resourceVersion", None)
        table = self._table(obj)
        held = table.get(obj.key) if table is not None else None
        if table is not None and held is None:  # new here (a job's podgroup and pods): create first
            try:
                written = self.service.store.create(body, owned=True)
            except AlreadyExists:
                written = self.service.update_status(body)
        else:
            written = self._replace(body, held)
        if _only_stamped(written, body):  # stored as given, but for the metadata the store fills in
            stamped = written["metadata"]
            changes = {field: stamped.get(wire) for wire, field in _STAMPED if getattr(obj.metadata, field) != stamped.get(wire)}
            obj.metadata = obj.metadata.model_copy(update=changes)  # may be shared: not changed in place
            self.ingest(obj)
        else:
            self._ingest_document(obj.kind, written)

    def _replace(self, body: dict, held: ApiObject | None) -> dict:
        """Write ``body`` over the stored object: at the version this world holds (``held``),
        else over whatever is stored, or as a new object if none is."""
        if held is not None and held.metadata.resource_version:
            meta, known = body["metadata"], held.metadata
            for wire, field in _KEPT_BY_UPDATE:  # what an update keeps of the stored object
                value = getattr(known, field)
                if value is not None:
                    meta[wire] = value
            meta["resourceVersion"] = known.resource_version
            try:
                return self.service.update_status(body, owned=True)
            except (Conflict, NotFound):
                del meta["resourceVersion"]
        try:
            return self.service.update_status(body, owned=True)
        except NotFound:
            return self.service.store.create(body, owned=True)

    def _apply_queue_changes(self, queues, events, now: float) -> None:
        for queue in queues:
            self._store(queue)
        self.event_log.queue_events(events, now)  # in the store, not in memory: a server runs for months

    def run_commands(self, now: float) -> int:
        """Carry out queued Command objects, oldest first; each is deleted once done (at most once)."""
        done = 0
        for key in sorted(self.commands, key=lambda k: (self.commands[k].metadata.creation_timestamp or "", k)):
            command = self.commands.pop(key)
            try:
                self.service.store.delete("Command", key, command.metadata.resource_version)
            except (NotFound, Conflict):
                continue
            self._command_event(command, now)
            done += 1
        return done

    def _command_event(self, command: Command, now: float) -> None:
        """Carry out one command and say what came of it: processed, or ignored and why."""
        target = command.target
        described = f"command {command.key} ({command.action} {target.kind if target else '-'}/{target.name if target else '-'})"
        if not command.is_for_queue:
            self.event_log.emit("Command", command.key, "CommandIgnored", f"{described} ignored: only Queue targets are supported", "Warning", now=now)
            return
        changes = apply_action(self.queues, target.name, command.action, self.unfinished)
        self._apply_queue_changes(changes.queues.values(), changes.events, now)
        own = [e for e in changes.events if e.queue == target.name]
        ignored = [e for e in own if e.type == "Warning" or e.message.startswith("ignored")]
        if ignored:
            message, reason, type_ = f"{described} ignored: {ignored[0].message}", "CommandIgnored", "Warning"
        else:
            message, reason, type_ = f"{described} processed" + (f": {own[-1].message}" if own else ": nothing to change"), "CommandProcessed", "Normal"
        self.event_log.emit("Queue", target.name, reason, message, type_, queue=target.name, now=now)

    def ingest(self, obj: ApiObject) -> None:
        arrival = self._arrival.get(obj.kind) if isinstance(obj, (Job, Pod)) else None
        if arrival is not None and obj.key not in arrival:
            arrival[obj.key] = next(self._arrivals)
        super().ingest(obj)
        if isinstance(obj, Job) or (isinstance(obj, Pod) and obj.group_name is None):
            self._unreconciled.add((obj.kind, obj.key))

    def forget(self, obj: ApiObject) -> None:
        if isinstance(obj, (Job, Pod)):
            self._arrival[obj.kind].pop(obj.key, None)
        super().forget(obj)
        if isinstance(obj, PodGroup) and obj.key in self.jobs:  # a vcjob's podgroup went away: made again
            self._unreconciled.add(("Job", obj.key))

    def reconcile_all(self) -> None:
        """What the job and podgroup controllers do, for every vcjob and bare pod that came or
        changed since the last call, or whose podgroup went away (for the others ``reconcile``
        would do nothing: it is idempotent). In table order, as a pass over every object would
        take them (by ``_arrival``): a look at each marked key, not at every object."""
        marked, self._unreconciled = self._unreconciled, set()
        for kind, table in (("Job", self.jobs), ("Pod", self.pods)):
            arrival = self._arrival[kind]
            keys = [key for marked_kind, key in marked if marked_kind == kind and key in table]
            keys.sort(key=arrival.__getitem__)
            for key in keys:
                obj = table[key]
                if not isinstance(obj, Pod) or obj.group_name is None:
                    self.reconcile(obj)

    def write_reasons(self, result: CycleResult, now: float | None = None) -> None:
        """Each waiting job's reason, as an annotation on its podgroup (cleared once it runs);
        an event when the kind of reason changes."""
        for uid, group, outcome in self.podgroup_outcomes(result):
            seen = self._reasons_seen.get(uid)
            if seen is not None and seen[0] is group and seen[1] == outcome.reason:
                continue  # found written before, and neither the podgroup nor the reason changed
            text = json.dumps(outcome.reason, sort_keys=True) if outcome.reason else None
            if group.metadata.annotations.get(REASON_ANNOTATION) == text:
                self._reasons_seen[uid] = (group, outcome.reason)
                continue
            if now is not None:  # the reason changed: an event if its kind did
                self.event_log.reason(uid, outcome.queue, pending_reason(group), outcome.reason, now)
            annotations = dict(group.metadata.annotations)
            if text is None:
                annotations.pop(REASON_ANNOTATION, None)
            else:
                annotations[REASON_ANNOTATION] = text
            metadata = group.metadata.model_copy(update={"annotations": annotations})
            status = group.status.model_copy(update={"conditions": [_condition(c) for c in outcome.conditions]})
            self._store(group.model_copy(update={"metadata": metadata, "status": status}))

    def write_allocations(self, result: CycleResult) -> None:
        for name, allocated in result.queue_allocated.items():
            queue = self.queues.get(name)
            if queue is None:
                continue
            quantities = allocated.to_quantities(exact=True)  # written: must parse back, never ``unlimited``
            if (queue.status.allocated or {}) != quantities:
                updated = queue.model_copy(deep=True)
                updated.status.allocated = quantities
                self._store(updated)


def _only_stamped(written: dict, body: dict) -> bool:
    """Whether the store wrote ``body`` as given but for the metadata it fills in (``_STAMPED``):
    always so when it kept ``body`` itself."""
    if written is body:
        return True
    stamped = written.get("metadata") or {}
    expected = {**body["metadata"], **{wire: stamped[wire] for wire, _ in _STAMPED if wire in stamped}}
    return written == {**body, "metadata": expected}


def _condition(condition: dict[str, Any]):
    from lahar.model.workload import PodGroupCondition

    return PodGroupCondition.model_validate(condition)


class ControlLoop:
    """Runs ``tick`` every ``period`` seconds on a background thread until stopped."""

    def __init__(
        self,
        service: ApiService,
        conf: SchedulerConf,
        period: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_cycle: Callable[[CycleResult, float, dict], None] | None = None,
        runtime: Any = None,
        heap: HeapCollector | None = None,
        on_quiet: Callable[[], object] | None = None,
        on_tick: Callable[[float], object] | None = None,
        on_locked: Callable[[float], object] | None = None,
    ) -> None:
        self.service, self.conf, self.period, self.clock = service, conf, period, clock
        self.heap = heap  # None: the garbage collector as Python runs it (see server.heap)
        self.on_cycle = on_cycle  # after each cycle run, once its tick's writes are committed
        self.on_quiet = on_quiet  # after each quiet tick (no cycle run), the same
        self.on_tick = on_tick  # after each tick: the CPU seconds its thread spent on it
        # after each of the tick's transactions, committed or not: the wall seconds it held the
        # service's lock (writes wait meanwhile); see ``holding_lock``
        self.on_locked = on_locked
        self._holds = 0  # ``holding_lock`` blocks open (nested: a caller's around the tick's own)
        self.runtime = runtime  # None: the simulated runtime; else e.g. server.runtime.LocalRuntime
        # The last tick's report (on_cycle or on_quiet), made once its transaction commits: a
        # metric must not count binds that a failing commit undoes, nor show them before a reader
        # can see them. A caller that wraps ticks in its own transaction (LeaderLoop) sets
        # ``report_after_commit`` False and calls ``report`` after its commit.
        self._unreported: Callable[[], object] | None = None
        self.report_after_commit = True
        self._read_store()
        self.last: CycleResult | None = None
        self._stale = False  # a tick failed: the world may hold what its undone transaction wrote
        self.cycles = 0
        self.errors = 0
        # A quiet tick (nothing changed since the last cycle looked, not even by that cycle's own
        # writes) reuses that cycle's result instead of running it again; ``skip_quiet_cycles``
        # False runs every cycle. ``_quiet``: the world and its change count the last cycle saw.
        self.skip_quiet_cycles = True
        self.quiet_ticks = 0
        self._quiet: tuple[StoreWorld, int] | None = None
        self._completed_of: tuple[CycleResult, list[str]] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> CycleResult:
        """One pass of every step (see the module docstring).

        A step that fails writes nothing of its transaction: it is undone (the controllers' writes
        before the cycle stay when the cycle's transaction fails). What the tick took in
        meanwhile (pods made, binds, phases) is then forgotten too: the next tick first reads the
        store again, as at a restart, or it would go on believing writes that never were."""
        started = time.thread_time()
        try:
            if self.heap is None:
                return self._locked_tick()
            with self.heap.during_tick():  # ends freezing what is alive, after the lock (unless a caller holds it, as LeaderLoop does)
                return self._locked_tick()
        finally:
            if self.on_tick is not None:
                self.on_tick(time.thread_time() - started)

    def _locked_tick(self) -> CycleResult:
        """The tick in three steps: the controllers (one transaction), the cycle (no lock: requests
        go on meanwhile), then the cycle's writes (another transaction, after taking in what
        requests wrote during the cycle)."""
        with self.holding_lock():
            if self._stale:
                self._read_store()
            self._stale = True  # until the transaction is committed
            self._unreported = None
            with self.service.store.batch():
                now, quiet = self._before_cycle()
            self._stale = False
        cycle = None if quiet else self._run_cycle(now)
        with self.holding_lock():
            self._stale = True
            with self.service.store.batch():
                result = self._after_cycle(now, cycle)
            self._stale = False
        if self.report_after_commit:
            self.report()
        return result

    @contextmanager
    def holding_lock(self) -> Iterator[None]:
        """The service's lock, held for the ``with``; then ``on_locked`` is told for how long, by
        the outermost block only: a caller that holds it around whole ticks (LeaderLoop's fenced
        transaction) counts each tick once, its cycle included."""
        with self.service.lock:
            self._holds += 1
            taken = time.perf_counter()
            try:
                yield
            finally:
                self._holds -= 1
                if self._holds == 0 and self.on_locked is not None:
                    self.on_locked(time.perf_counter() - taken)

    def _read_store(self) -> None:
        """The world and the usage history as the store holds them (at start, and after a tick
        whose writes were undone: usage records it flushed were undone too, so the history is
        read again, as at a restart; a crash loses at most one flush period, never counts twice)."""
        self.world = StoreWorld(self.service)
        self.usage = UsageHistory(self.service.store)
        self.usage.start(self.world)

    def reread_store(self) -> None:
        """The next tick begins by reading the store again: a transaction around the last tick
        (a caller's own batch) was undone, so the world may hold writes that never were."""
        self._stale = True

    def _before_cycle(self) -> tuple[float, bool]:
        """Catch up with the store, run the controllers and the runtime; whether the cycle can be
        skipped (``_is_quiet``)."""
        now = self.clock()
        world = self.world
        world.sync()
        world.reconcile_all()
        world.run_commands(now)
        world.complete_due(now)
        if self.runtime is not None:
            self.runtime.step(world)  # exited processes end their tasks before the cycle
        world.refresh_queues(now)
        quiet = self._is_quiet(world, now)
        world.skip_own_writes()
        return now, quiet

    def _run_cycle(self, now: float) -> tuple[CycleResult, float, int]:
        """The scheduling cycle on the world as the controllers left it: the result, its seconds
        and the world's change count it saw. Reads only the loop's own world: no lock needed."""
        seen = self.world.changes
        self.cycles += 1
        started = time.perf_counter()
        result = run_cycle(self.world.cache, self.conf, now, uid=f"cycle-{self.cycles}", previous=self.world.applied_outcomes)
        return result, time.perf_counter() - started, seen

    def _after_cycle(self, now: float, cycle: tuple[CycleResult, float, int] | None) -> CycleResult:
        """Take in what requests wrote while the cycle ran, write the cycle's decisions and
        statuses (or, for a quiet tick, reuse the last result), then usage and events."""
        world = self.world
        world.sync()
        if cycle is None:
            result, reported = self.last, None
            self.quiet_ticks += 1
        else:
            result, seconds, seen = cycle
            reported = self._write_cycle(world, result, now)
            self._quiet = (world, seen)
        world.refresh_queues(now)
        self.usage.observe(world, now, self._completed(result))
        self.usage.maybe_flush(now)
        world.event_log.prune(now)
        world.skip_own_writes()
        self.last = result
        if cycle is None and self.on_quiet is not None:
            self._unreported = self.on_quiet
        elif cycle is not None and self.on_cycle is not None:
            on_cycle, queues = self.on_cycle, world.queues
            self._unreported = lambda: on_cycle(reported, seconds, queues)
        return result

    def report(self) -> None:
        """Tell ``on_cycle`` or ``on_quiet`` of the last tick, once: call after its commit."""
        unreported, self._unreported = self._unreported, None
        if unreported is not None:
            unreported()

    def _write_cycle(self, world: StoreWorld, result: CycleResult, now: float) -> CycleResult:
        """The cycle's binds, evictions, phases, events, reasons and queue allocations; returns
        the result as carried out (without the decisions dropped because a request removed
        their pod or node, or bound the pod, while the cycle ran)."""
        applied = world.apply(result, now)
        if len(applied) != len(result.decisions):
            result = dataclasses.replace(result, decisions=applied)
        if self.runtime is not None:
            self.runtime.step(world)  # bound tasks start, evicted ones are stopped
        world.event_log.decisions(result.decisions, lambda job: getattr(result.jobs.get(job), "queue", None), now)
        world.write_reasons(result, now)
        world.write_allocations(result)
        return result

    def _completed(self, result: CycleResult) -> list[str]:
        """The jobs ``result`` found Completed, of those whose outcome changed since the last
        result applied (the others were passed on with that one already), worked out once per
        result: quiet ticks reuse it."""
        if self._completed_of is None or self._completed_of[0] is not result:
            outcomes = result.jobs
            keys = outcomes if result.changed is None else result.changed
            self._completed_of = (result, [uid for uid in keys if outcomes[uid].phase == "Completed"])
        return self._completed_of[1]

    def _is_quiet(self, world: StoreWorld, now: float) -> bool:
        """Whether the cycle would repeat the last one: the world is the one that cycle saw (the
        world counts every object it takes in or lets go, so the count is the same only if
        neither that cycle's writes nor anything since changed it), and it is not yet the time
        at which a plugin that reads the clock may answer differently (``valid_until``; never,
        without such plugins). The same cluster then gives the same result (the cycle is a pure
        function of the cluster, the configuration and, for plugins that read it, the time), and
        applying it again would change nothing, as applying it last time did. A cycle whose binds
        or evictions were applied changed the world, so only one that decided nothing, or only
        reservations (``pipeline``: kept in the session, never written), can leave it quiet."""
        if not self.skip_quiet_cycles or self._quiet is None or self.last is None:
            return False
        quiet_world, changes = self._quiet
        return quiet_world is world and world.changes == changes and now < self.last.valid_until

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="lahar-control-loop", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread and write the usage not yet flushed (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.runtime is not None:
            self.runtime.stop_all()
        try:
            with self.service.lock, self.service.store.batch():
                self.usage.flush()
        except Exception:  # noqa: BLE001 - a closed store at shutdown loses at most one flush period
            log.warning("usage not flushed at stop", exc_info=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.tick()
            except LaharError as exc:
                self.errors += 1
                log.error("control loop: %s", exc.message)
            except Exception:  # noqa: BLE001 - the loop must survive one bad tick
                self.errors += 1
                log.exception("control loop tick failed")
            elapsed = time.monotonic() - started
            # A tick holds the service lock but while its cycle runs; one longer than the period must
            # still leave the requests waiting for that lock as much time (up to a period).
            self._stop.wait(max(self.period - elapsed, min(elapsed, self.period)))


def pending_reason(group: PodGroup) -> dict[str, Any] | None:
    text = group.metadata.annotations.get(REASON_ANNOTATION)
    return json.loads(text) if text else None


__all__ += ["pending_reason", "QueueEvent", "EVENT_KIND"]
