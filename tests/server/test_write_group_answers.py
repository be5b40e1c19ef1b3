"""A write route awaits its write on the event loop (``in_worker``); the writer thread hands the
answers of one group to that loop together, once the group has committed: one wake-up of the
loop a group, not one a write. Each caller still gets its own value or its own refusal, a
caller that gave up before its group began has its write left out, and nothing the writer hands
over stops it from answering the next writes."""

from __future__ import annotations

import asyncio
import functools
import time

import pytest

from builders import queue
from lahar.errors import AlreadyExists, NotFound
from lahar.server.service import ApiService
from lahar.server.write_groups import WriteGroups, in_worker
from lahar.store import open_store


class CountedLoop(asyncio.SelectorEventLoop):
    """An event loop that counts the calls handed to it from other threads."""

    handed_over = 0

    def call_soon_threadsafe(self, callback, *args, context=None):
        self.handed_over += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


@pytest.fixture
def service(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'lahar.db'}")
    yield ApiService(store)
    store.close()


def _run(coroutine_function) -> tuple[object, CountedLoop]:
    loop = CountedLoop()
    try:
        return loop.run_until_complete(coroutine_function(loop)), loop
    finally:
        loop.close()


async def _behind_the_lock(service: ApiService, calls: list, cancel: set[int] = frozenset()) -> list:
    """Await ``calls`` through ``in_worker`` while the service's lock is held (as a tick holds
    it), cancel the callers numbered in ``cancel``, then let the writer go; each caller's
    outcome: its value, its exception, or ``"cancelled"``."""
    writer = WriteGroups(service)
    service.lock.acquire()
    try:
        tasks = [asyncio.ensure_future(in_worker(writer, call)) for call in calls]
        await asyncio.sleep(0.05)  # every call queued; the writer waits for the lock
        for index in cancel:
            tasks[index].cancel()
        await asyncio.sleep(0)
    finally:
        service.lock.release()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    return ["cancelled" if isinstance(o, asyncio.CancelledError) else o for o in outcomes]


def _queues(service: ApiService) -> list[str]:
    items, _ = service.store.list("Queue")
    return sorted(item["metadata"]["name"] for item in items)


def _has_queue(service: ApiService, name: str) -> bool:
    try:
        service.store.get("Queue", name)
    except NotFound:
        return False
    return True


def _create(service: ApiService, name: str):
    return functools.partial(service.create, queue(name).manifest())


def test_a_groups_answers_reach_the_loop_in_one_hand_over(service):
    calls = [_create(service, f"q-{i}") for i in range(8)]

    async def scenario(loop: CountedLoop) -> list:
        before = loop.handed_over
        outcomes = await _behind_the_lock(service, calls)
        return [outcomes, loop.handed_over - before]

    (outcomes, handed_over), _ = _run(scenario)
    assert [o["metadata"]["name"] for o in outcomes] == [f"q-{i}" for i in range(8)]
    assert handed_over == 1  # the first write's group took the seven queued behind it
    assert [f"q-{i}" for i in range(8)] == [name for name in _queues(service) if name.startswith("q-")]


def test_each_caller_in_a_group_gets_its_own_refusal(service):
    calls = [_create(service, "q-a"), _create(service, "q-a"), _create(service, "q-b")]
    outcomes, _ = _run(lambda loop: _behind_the_lock(service, calls))
    assert outcomes[0]["metadata"]["name"] == "q-a" and outcomes[2]["metadata"]["name"] == "q-b"
    assert isinstance(outcomes[1], AlreadyExists)


def test_a_caller_that_gave_up_before_its_group_has_its_write_left_out(service):
    ran: list[str] = []

    def write(name: str):
        ran.append(name)
        return service.create(queue(name).manifest())

    calls = [functools.partial(write, name) for name in ("q-a", "q-b", "q-c")]
    outcomes, _ = _run(lambda loop: _behind_the_lock(service, calls, cancel={1}))
    assert outcomes[1] == "cancelled" and ran == ["q-a", "q-c"]
    assert outcomes[0]["metadata"]["name"] == "q-a" and outcomes[2]["metadata"]["name"] == "q-c"
    assert not _has_queue(service, "q-b")


def test_a_stop_iteration_reaches_the_caller_as_an_error(service):
    def odd() -> None:
        raise StopIteration("out of items")

    async def scenario(loop: CountedLoop):
        return await in_worker(WriteGroups(service), odd)

    with pytest.raises(RuntimeError, match="StopIteration: out of items"):
        _run(scenario)


def test_answers_for_a_loop_that_closed_do_not_stop_the_writer(service):
    writer = WriteGroups(service)
    service.lock.acquire()
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_queue_and_leave(writer, service))
    finally:
        loop.close()  # its caller is gone before the write is answered
        service.lock.release()
    assert writer.submit(lambda: 42).result(timeout=10) == 42
    deadline = time.monotonic() + 10
    while not _has_queue(service, "q-left") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _has_queue(service, "q-left") and writer.thread.is_alive()


async def _queue_and_leave(writer: WriteGroups, service: ApiService) -> None:
    writer.submit_awaited(_create(service, "q-left"))
    await asyncio.sleep(0)
