"""The write routes' worker commits the writes that queued up behind one another together, in
one transaction, and still answers each write as if it had run alone: its own value or its own
refusal, nothing answered before it is on disk, and nothing kept of a group whose commit failed."""

from __future__ import annotations

import functools
import gc
import threading
import time
from contextlib import contextmanager

import pytest

from builders import job, queue
from lahar.errors import AlreadyExists, Conflict, Invalid
from lahar.server.service import EVENT_KIND, ApiService
from lahar.server.write_groups import WriteGroups
from lahar.store import open_store
from lahar.store.base import StoreError
from lahar.store.sqlite import SqliteStore


class CommitRefused(SqliteStore):
    """A SQLite store whose next outermost transaction fails as it ends, before its commit, as a
    disk that refuses the write would make it fail: SQLite undoes the whole transaction."""

    refuse_next = False

    def __init__(self, path) -> None:
        super().__init__(path)
        self.depth = 0

    @contextmanager
    def batch(self):
        self.depth += 1
        try:
            with super().batch():
                yield
                if self.depth == 1 and self.refuse_next:
                    self.refuse_next = False
                    raise StoreError("disk I/O error")
        finally:
            self.depth -= 1


@pytest.fixture
def service(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'lahar.db'}")
    yield ApiService(store)
    store.close()


def _queued(service: ApiService, writer: WriteGroups, calls: list) -> list:
    """Submit ``calls`` while the service's lock is held (as a tick of the control loop holds
    it), then let them run; their futures, done."""
    with service.lock:
        futures = [writer.submit(call) for call in calls]
        time.sleep(0.05)  # the writer thread takes the first and waits for the lock
    for done in futures:
        done.exception(timeout=10)
    return futures


def _create(service: ApiService, document: dict):
    return functools.partial(service.create, document)


def test_writes_queued_behind_the_lock_commit_as_one_group_in_their_order(service, tmp_path):
    writer = WriteGroups(service)
    futures = _queued(service, writer, [_create(service, queue(f"q-{n}").manifest()) for n in range(5)])
    versions = [int(done.result()["metadata"]["resourceVersion"]) for done in futures]
    assert (writer.groups, writer.writes) == (1, 5)
    assert versions == sorted(versions) and len(set(versions)) == 5  # in the order they came
    service.store.close()
    reopened = open_store(f"sqlite:///{tmp_path / 'lahar.db'}")  # every answered write is on disk
    assert {f"q-{n}" for n in range(5)} <= {q["metadata"]["name"] for q in reopened.list("Queue")[0]}
    reopened.close()


def test_a_refused_write_is_answered_alone_and_the_writes_around_it_are_kept(service):
    writer = WriteGroups(service)
    stale = queue("default").manifest()
    stale["metadata"]["resourceVersion"] = "1"  # older than the stored default queue
    calls = [
        _create(service, queue("q-a").manifest()),
        _create(service, queue("q-a").manifest()),  # the name the write before it took
        _create(service, queue("q-b").manifest()),
        functools.partial(service.update, stale),
        _create(service, job("j-1").queue("q-b").tasks(1, cpu=1).manifest()),  # sees q-b
    ]
    futures = _queued(service, writer, calls)
    assert writer.groups == 1
    assert futures[0].result()["metadata"]["name"] == "q-a"
    assert isinstance(futures[1].exception(), AlreadyExists)
    assert futures[2].result()["metadata"]["name"] == "q-b"
    assert isinstance(futures[3].exception(), Conflict)
    assert futures[4].result()["metadata"]["name"] == "j-1"
    audited = sorted(e["involvedObject"]["name"] for e in service.store.list(EVENT_KIND)[0] if e.get("type") == "Audit")
    assert audited == ["default/j-1", "q-a", "q-b"]  # a refused write leaves no audit record


def test_a_failed_commit_keeps_nothing_of_the_group_and_admission_forgets_it(tmp_path):
    store = CommitRefused(tmp_path / "lahar.db")
    service = ApiService(store)
    writer = WriteGroups(service)
    store.refuse_next = True
    futures = _queued(
        service,
        writer,
        [_create(service, queue("q-new").manifest()), _create(service, job("j-1").queue("q-new").tasks(1, cpu=1).manifest())],
    )
    assert [type(done.exception()) for done in futures] == [StoreError, StoreError]
    assert "disk I/O error" in str(futures[1].exception())
    assert [q["metadata"]["name"] for q in store.list("Queue")[0] if q["metadata"]["name"] == "q-new"] == []
    with pytest.raises(Invalid, match="queue q-new does not exist"):  # admission does not read the undone queue
        writer.submit(_create(service, job("j-2").queue("q-new").tasks(1, cpu=1).manifest())).result(timeout=10)
    store.close()


def _create_then_fail(service: ApiService) -> None:
    with service.lock, service.store.batch():  # one write that fails part-way: undone whole
        service.create(queue("q-gone").manifest())
        service.view()  # admission's mirror reads the queue inside the transaction
        raise RuntimeError("the write fails after it wrote")


@pytest.mark.parametrize("alone", [True, False], ids=["alone", "in-a-group"])
def test_a_write_undone_after_admission_read_it_is_forgotten_by_admission(service, alone):
    writer = WriteGroups(service)
    failing = functools.partial(_create_then_fail, service)
    later = _create(service, job("j-1").queue("q-gone").tasks(1, cpu=1).manifest())
    if alone:
        failed = writer.submit(failing)
        failed.exception(timeout=10)
        answered = writer.submit(later)
        answered.exception(timeout=10)
    else:
        failed, answered = _queued(service, writer, [failing, later])
    assert isinstance(failed.exception(), RuntimeError)
    assert isinstance(answered.exception(), Invalid) and "queue q-gone does not exist" in str(answered.exception())
    assert not service.exists("Queue", "q-gone")


def test_a_write_cancelled_before_its_group_runs_is_not_run(service):
    writer = WriteGroups(service)
    with service.lock:
        kept = writer.submit(_create(service, queue("q-kept").manifest()))
        dropped = writer.submit(_create(service, queue("q-dropped").manifest()))
        assert dropped.cancel()
    kept.result(timeout=10)
    assert service.exists("Queue", "q-kept") and not service.exists("Queue", "q-dropped")


def test_a_group_holds_at_most_its_limit(service):
    writer = WriteGroups(service, limit=2)
    _queued(service, writer, [_create(service, queue(f"q-{n}").manifest()) for n in range(5)])
    assert (writer.groups, writer.writes) == (3, 5)
    with pytest.raises(ValueError, match="limit: must be at least 1"):
        WriteGroups(service, limit=0)


def test_the_writer_thread_ends_once_the_writer_is_gone(service):
    writer = WriteGroups(service)
    assert writer.submit(lambda: 42).result(timeout=10) == 42
    thread = writer.thread
    del writer
    gc.collect()
    thread.join(10)
    assert not thread.is_alive()


def test_a_store_that_cannot_be_used_is_answered_and_the_writer_goes_on(service):
    writer = WriteGroups(service)
    service.store.close()  # as a database gone away: the write and the look at the store both fail
    failed = writer.submit(_create(service, queue("q-x").manifest()))
    assert isinstance(failed.exception(timeout=10), StoreError)
    assert isinstance(writer.submit(lambda: 42).exception(timeout=10), StoreError)  # answered, not left waiting
    assert writer.thread.is_alive()


def test_an_exception_that_is_not_an_error_is_that_writes_answer_only(service):
    writer = WriteGroups(service)

    def leave() -> None:
        raise SystemExit(3)

    futures = _queued(service, writer, [_create(service, queue("q-a").manifest()), leave, _create(service, queue("q-b").manifest())])
    assert [type(f.exception()) for f in futures] == [type(None), SystemExit, type(None)]
    assert service.exists("Queue", "q-a") and service.exists("Queue", "q-b")
    assert writer.submit(leave).exception(timeout=10).code == 3 and writer.thread.is_alive()


def test_on_the_memory_store_each_write_runs_alone(tmp_path):
    service = ApiService(open_store("memory://"))  # no disk sync to share
    writer = WriteGroups(service)
    futures = _queued(service, writer, [_create(service, queue(f"q-{n}").manifest()) for n in range(3)] + [_create(service, queue("q-0").manifest())])
    assert (writer.groups, writer.writes) == (4, 4)
    assert [type(f.exception()) for f in futures] == [type(None)] * 3 + [AlreadyExists]


def test_a_group_whose_writes_were_all_cancelled_is_not_run(service):
    sizes: list[int] = []
    writer = WriteGroups(service, on_group=sizes.append)
    with service.lock:
        dropped = writer.submit(_create(service, queue("q-dropped").manifest()))
        time.sleep(0.05)  # taken by the writer thread, which waits for the lock
        assert dropped.cancel()
    assert writer.submit(lambda: 42).result(timeout=10) == 42
    assert sizes == [1] and not service.exists("Queue", "q-dropped")


def test_the_server_counts_its_write_groups_in_its_metrics(sqlite_server):
    client = sqlite_server.client
    for n in range(3):
        assert client.post("/apis/scheduling.volcano.sh/v1beta1/queues", json=queue(f"q-{n}").manifest()).status_code == 201
    text = client.get("/metrics").text
    assert "lahar_write_groups_total 3.0" in text and "lahar_grouped_writes_total 3.0" in text


def test_each_group_reports_how_long_it_held_the_lock(service):
    """``on_held``: the seconds from taking the service's lock to letting it go, once per group
    run (the commit and its disk sync included)."""
    held: list[float] = []
    writer = WriteGroups(service, on_held=held.append)

    def slow() -> int:
        time.sleep(0.05)
        return 1

    started = time.perf_counter()
    assert writer.submit(slow).result(timeout=10) == 1
    elapsed = time.perf_counter() - started
    assert len(held) == 1 and 0.05 <= held[0] <= elapsed
    assert writer.submit(_create(service, queue("q-a").manifest())).result(timeout=10)["metadata"]["name"] == "q-a"
    assert len(held) == 2 and held[1] > 0


def test_a_counter_that_fails_leaves_no_write_unanswered(service):
    def broken(writes: int) -> None:
        raise RuntimeError("metrics went away")

    writer = WriteGroups(service, on_group=broken, on_held=broken)
    assert writer.submit(_create(service, queue("q-a").manifest())).result(timeout=10)["metadata"]["name"] == "q-a"
    assert writer.submit(lambda: 42).result(timeout=10) == 42 and writer.groups == 2


def test_a_reader_syncing_admission_meanwhile_cannot_hide_an_undone_write(service):
    """A watch stream or a non-admin list brings admission's mirror up to date too. Were it to do
    so outside the lock while a write reads the mirror and is then undone, it could set the
    mirror's version back below what the mirror read, and the check after the undone write would
    keep the write's queue. The reader is held inside its read of the store for as long as the
    failing write runs, when it can get there."""
    store = service.store
    reader_in, write_read = threading.Event(), threading.Event()
    real_watch = store.watch

    def watch(since, kinds=None, timeout=0.0):
        found = real_watch(since, kinds, timeout)
        if threading.current_thread().name == "reader":
            reader_in.set()
            write_read.wait(0.5)
        return found

    store.watch = watch

    def failing() -> None:
        with service.lock, service.store.batch():
            reader_in.wait(0.5)
            service.create(queue("q-gone").manifest())
            service.view()  # the mirror reads the queue inside the transaction
            write_read.set()
            raise RuntimeError("the write fails after it wrote")

    reader = threading.Thread(target=service.view, name="reader")
    writer = WriteGroups(service)
    reader.start()
    assert isinstance(writer.submit(failing).exception(timeout=10), RuntimeError)
    reader.join(10)
    store.watch = real_watch
    later = writer.submit(_create(service, job("j-1").queue("q-gone").tasks(1, cpu=1).manifest()))
    assert isinstance(later.exception(timeout=10), Invalid)
