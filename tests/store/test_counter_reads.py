"""A write transaction reads the store's counter (the ``meta`` row) once, on a real SQLite file.

A write request reads inside its write group's transaction before it writes: the store's version
(``current_version``, before its admission view's watch), the compaction horizon (the watch
itself), then the counter again for its write. The database's write lock is held from the start
of the transaction, so the row cannot move meanwhile: it is read once and kept until the commit.
The statements are counted with SQLite's own trace callback on every connection the store opens.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from lahar.errors import AlreadyExists
from lahar.store import SqliteStore

NOW = 1_800_000_000.0


def queue(name: str) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": {"weight": 1}}


@pytest.fixture
def traced(tmp_path: Path):
    """A store on a fresh file, and the statements every connection it opens runs."""
    statements: list[str] = []

    def trace(dbapi_connection, _record) -> None:
        dbapi_connection.set_trace_callback(statements.append)

    event.listen(Engine, "connect", trace)
    try:
        store = SqliteStore(tmp_path / "lahar.db", clock=lambda: NOW)
        yield store, statements
        store.close()
    finally:
        event.remove(Engine, "connect", trace)


def counter_reads(statements: list[str]) -> int:
    return sum(1 for s in statements if s.lstrip().upper().startswith("SELECT") and "FROM META" in s.upper())


def test_a_request_in_a_write_group_reads_the_counter_once(traced):
    store, statements = traced
    before = store.current_version()
    statements.clear()
    with store.batch():  # a write group: every request reads, then writes
        for name in ("a", "b", "c"):
            seen = store.current_version()
            changes = store.watch(seen, {"Queue"}, timeout=0.0)
            assert changes == []  # the request's own view is up to date
            store.create(queue(name))
        inside = store.current_version()
    assert counter_reads(statements) == 1, [s for s in statements if "meta" in s.lower()]
    assert inside == before + 3 == store.current_version()
    assert [int(store.get("Queue", n)["metadata"]["resourceVersion"]) for n in "abc"] == [before + 1, before + 2, before + 3]
    assert [e.key for e in store.watch(before, {"Queue"})] == ["a", "b", "c"]


def test_the_counter_read_before_an_undone_inner_batch_is_still_right(traced):
    store, statements = traced
    before = store.current_version()
    with store.batch():
        with pytest.raises(AlreadyExists):
            with store.batch():  # a request whose write is refused: its savepoint is undone
                assert store.current_version() == before
                store.create(queue("x"))
                store.create(queue("x"))
        assert store.current_version() == before  # the undone write took no version
        store.create(queue("y"))
        assert store.current_version() == before + 1
    assert store.current_version() == before + 1
    assert [e.key for e in store.watch(before, {"Queue"})] == ["y"]


def test_reads_outside_a_transaction_read_the_row_each_time(traced):
    store, statements = traced
    statements.clear()
    first = store.current_version()
    store.create(queue("a"))  # a write alone: its own transaction
    assert store.current_version() == first + 1
    assert counter_reads(statements) == 3  # two reads of their own, one by the write
