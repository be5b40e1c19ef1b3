"""The write routes' worker: the writes that queue up behind one another commit together.

Every write request takes the service's lock, so writes run one at a time whatever the number
of threads. One thread runs them, in the order they came (a pool of threads waited on the lock
together and handed the interpreter back and forth). While it waits for the lock (a tick of the
control loop holds it) or runs a write, more requests queue up; once it holds the lock it takes
every write waiting, up to ``GROUP_LIMIT``, and runs them in **one transaction**: one disk sync
and one commit for the group instead of one per request (a commit with its sync cost about
0.15 ms of CPU, more than the rest of a small write).

Each write keeps its own outcome. It runs inside its own savepoint (an inner ``Store.batch``):
a write that is refused (a conflict, a name taken by a write before it in the same group,
admission) or fails is undone alone and answered with its own error, and the writes after it
see the store without it, exactly as if it had been refused alone. No write is answered before
its group has committed, so every acknowledged write is on disk. If the commit itself fails,
nothing of the group is kept and every write in it is answered with that error (a write
refused on its own keeps its own refusal). Admission's in-memory mirror may then have read
writes that were never kept: it is read again from the store (``ApiService.forget_view``).
Whatever fails, every write taken is answered and the thread goes on.

The write routes await their writes on the event loop (``in_worker``). Once a group has
committed, its answers are handed to the loop together, in one call: one wake-up of the loop a
group, where each write's own hand-over (``asyncio.wrap_future``) cost a wake-up a write
(measured: 5.8% of the instructions of 320 vcjob creates sent 16 at a time).

A call handed over (``submit``) runs inside its own savepoint, so its writes are all kept or
none; the write routes' calls (create, replace, patch) make all theirs in one batch anyway.
Only stores whose commit costs a disk sync or a round trip (``COMMIT_SYNCS``: SQLite,
PostgreSQL) group writes: on the memory store each write runs alone, as it is.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import queue
import threading
import time
import weakref
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, TypeAlias, TypeVar

if TYPE_CHECKING:
    from lahar.server.service import ApiService

__all__ = ["GROUP_LIMIT", "WriteGroups", "in_worker"]

log = logging.getLogger(__name__)
T = TypeVar("T")
GROUP_LIMIT = 64  # writes in one transaction at most: bounds a group's time under the lock
_STOP = None


class WriteGroups:
    """An application's writer thread, committing the writes queued together as one group. One
    per application, so the writes to one server never wait for another's lock.

    ``groups`` and ``writes`` count the groups run and the writes in them (their ratio is the
    mean group size); ``on_group(writes)``, if given, is told of each group as it ends, and
    ``on_held(seconds)`` of how long it held the service's lock (the commit included)."""

    def __init__(
        self, service: ApiService, limit: int = GROUP_LIMIT, on_group: Callable[[int], None] | None = None, on_held: Callable[[float], None] | None = None
    ) -> None:
        if limit < 1:
            raise ValueError(f"limit: must be at least 1, not {limit}")
        self.groups = self.writes = 0
        self.on_group = on_group
        self.on_held = on_held
        self._waiting: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=_serve, args=(weakref.ref(self), self._waiting, service, limit), name="lahar-request", daemon=True)
        self.thread.start()
        weakref.finalize(self, self._waiting.put, _STOP)  # the thread ends once the application is gone

    def submit(self, call: Callable[[], T]) -> Future[T]:
        """Run ``call()`` in the next group; its future holds the value or the exception once
        the group has committed."""
        done: Future[T] = Future()
        self._waiting.put((done, call))
        return done

    def submit_awaited(self, call: Callable[[], T]) -> asyncio.Future[T]:
        """``submit`` for a caller on the running event loop: the future is that loop's own, and
        the answers of a group that go to one loop are handed to it together, once the group
        has committed (one wake-up of the loop a group, not one a write)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._waiting.put((_Awaited(loop, done), call))
        return done


class _Awaited:
    """Where a write's answer goes when a coroutine awaits it: a future of ``loop``, set on that
    loop's thread. A write whose caller gave up (the future cancelled, as a request's is when
    its client goes away) before its group took it is not run, as for a concurrent future."""

    __slots__ = ("loop", "future")

    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future) -> None:
        self.loop, self.future = loop, future

    def set_running_or_notify_cancel(self) -> bool:
        return not self.future.cancelled()


def _serve(owner: weakref.ref, waiting: queue.SimpleQueue, service: ApiService, limit: int) -> None:
    """The writer thread: wait for a write, take the lock, take every write waiting by then.
    Whatever fails, every write taken is answered and the thread goes on."""
    grouped = getattr(service.store, "COMMIT_SYNCS", False)
    while True:
        first = waiting.get()
        if first is _STOP:
            return
        with service.lock:  # the control loop's tick may hold it: writes queue up meanwhile
            taken = time.perf_counter()
            group = [item for item in _take(first, waiting, limit if grouped else 1) if item[0].set_running_or_notify_cancel()]
            if not group:
                continue
            try:
                answers = _commit(service, group) if grouped else [_answer(service, *group[0])]
            except BaseException as exc:  # noqa: BLE001 - the store cannot be used now: answer and go on
                service.forget_view()
                answers = [(done, None, exc) for done, _ in group]
            held = time.perf_counter() - taken
        _count(owner, len(answers), held)
        _deliver(answers)


def _deliver(answers: list[Answer]) -> None:
    """Set each answer on its future: a concurrent future here, the futures of one event loop
    all in one call on that loop (a loop that has closed meanwhile has nobody waiting)."""
    on_loops: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, Any, BaseException | None]]] = {}
    for done, value, error in answers:
        if isinstance(done, _Awaited):
            on_loops.setdefault(done.loop, []).append((done.future, value, error))
        elif error is None:
            done.set_result(value)
        else:
            done.set_exception(error)
    for loop, settled in on_loops.items():
        try:
            loop.call_soon_threadsafe(_settle, settled)
        except RuntimeError:  # the loop is closed: its callers are gone
            log.debug("write groups: %d answers for an event loop that has closed", len(settled))


def _settle(settled: list[tuple[asyncio.Future, Any, BaseException | None]]) -> None:
    """On the futures' loop: each future its value or exception, unless its caller gave up."""
    for future, value, error in settled:
        if future.done():
            continue
        if error is None:
            future.set_result(value)
        elif isinstance(error, StopIteration):  # a future cannot hold one (asyncio's rule)
            future.set_exception(RuntimeError(f"the write raised StopIteration: {error}"))
        else:
            future.set_exception(error)


def _take(first: tuple, waiting: queue.SimpleQueue, limit: int) -> list[tuple]:
    """``first`` and the writes waiting after it, up to ``limit`` in all."""
    group = [first]
    while len(group) < limit:
        try:
            item = waiting.get_nowait()
        except queue.Empty:
            break
        if item is _STOP:
            waiting.put(_STOP)  # end after this group
            break
        group.append(item)
    return group


def _count(owner: weakref.ref, writes: int, held: float) -> None:
    """One more group of ``writes``, which held the lock ``held`` seconds, on the writer's
    counters (no reference to it is kept: the thread ends once the writer is gone)."""
    counters = owner()
    if counters is not None:
        counters.groups, counters.writes = counters.groups + 1, counters.writes + writes
        for report, value in ((counters.on_group, writes), (counters.on_held, held)):
            if report is not None:
                try:
                    report(value)
                except Exception:  # noqa: BLE001 - a counter that fails must not leave writes unanswered
                    log.exception("write groups: a counter failed")


Waiter: TypeAlias = "Future[Any] | _Awaited"  # where a write's answer goes: ``submit``'s future, or ``submit_awaited``'s
Answer = tuple[Waiter, Any, "BaseException | None"]


def _commit(service: ApiService, group: list[tuple[Waiter, Callable[[], Any]]]) -> list[Answer]:
    """Run the group's writes in one transaction, each in its own savepoint; their answers."""
    answers: list[Answer] = []
    try:
        with service.store.batch():
            for done, call in group:
                answers.append(_in_savepoint(service, done, call))
    except BaseException as exc:  # noqa: BLE001 - the commit failed: nothing of the group was kept
        service.forget_view()
        failed: list[Answer] = [(done, None, error or exc) for done, _, error in answers]
        return failed + [(done, None, exc) for done, _ in group[len(answers) :]]
    return answers


def _in_savepoint(service: ApiService, done: Waiter, call: Callable[[], Any]) -> Answer:
    """One write of a group, undone alone (its savepoint) if it raises. Admission's mirror is
    then compared with the store inside the group's transaction, where no other writer can
    have taken the versions the undone writes used: if it read one of them, it is read again."""
    return _answer(service, done, functools.partial(_savepointed, service.store, call))


def _savepointed(store: Any, call: Callable[[], T]) -> T:
    with store.batch():
        return call()


def _answer(service: ApiService, done: Waiter, call: Callable[[], Any]) -> Answer:
    """``call``'s value, or its exception once its writes were undone (in its savepoint in a
    group; alone, on a store without a disk sync to share, in the one batch each write route
    makes): a mirror that read one of them is then read again."""
    try:
        return done, call(), None
    except BaseException as exc:  # noqa: BLE001 - the write's own answer, as an executor gives it
        _after_undone(service)
        return done, None, exc


def _after_undone(service: ApiService) -> None:
    """After a write was undone: admission's mirror is forgotten if it is ahead of the store
    (it read one of the undone writes), or if the store cannot say."""
    try:
        ahead = service.mirror.version > service.store.current_version()
    except BaseException:  # noqa: BLE001 - the store cannot be read now
        ahead = True
    if ahead:
        service.forget_view()


async def in_worker(writer: WriteGroups, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` on ``writer``'s thread, in its next group, awaited: the store's
    writes block (the lock, the disk sync) and must not hold up the event loop. It runs in a
    copy of the caller's context variables, as Starlette's ``run_in_threadpool`` runs it."""
    work = functools.partial(contextvars.copy_context().run, call, *args, **kwargs)
    return await writer.submit_awaited(work)
