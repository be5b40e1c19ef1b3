"""A database failure in the middle of a write inside a batch, on a real SQLite file: a trigger
refuses the change-log row of one object, after its own row was written (a write half done).

The write answers a ``StoreError`` that names the database and the cause (never the driver's
own exception); the batch is then undone whole when it ends, the writes before the failure
too; an inner batch (a savepoint: every write request in a group takes one) is undone alone,
and the outer batch goes on and commits; the store takes writes afterwards."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lahar.errors import NotFound
from lahar.store import SqliteStore, StoreError

NOW = 1_800_000_000.0


def queue(name: str) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": {"weight": 1}}


@pytest.fixture
def store(tmp_path: Path):
    path = tmp_path / "lahar.db"
    s = SqliteStore(path, clock=lambda: NOW)
    with sqlite3.connect(path) as con:  # another connection, as an administrator would
        con.execute("CREATE TRIGGER refuse_bad BEFORE INSERT ON events WHEN NEW.key = 'bad' BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END")
    yield s
    s.close()


def names(store: SqliteStore) -> set[str]:
    return {item["metadata"]["name"] for item in store.list("Queue")[0]}


def test_a_write_that_fails_part_way_is_a_store_error_and_undoes_its_batch(store, tmp_path):
    before = names(store)
    with pytest.raises(StoreError, match="failed part-way"):
        with store.batch():
            store.create(queue("good"))
            with pytest.raises(StoreError, match="refused by a test trigger") as failed:
                store.create(queue("bad"))
            assert str(tmp_path / "lahar.db") in str(failed.value)
            assert isinstance(failed.value.__cause__, sqlite3.Error)
    assert names(store) == before  # the good write went with the batch
    for name in ("good", "bad"):
        with pytest.raises(NotFound):
            store.get("Queue", name)
    store.create(queue("later"))  # the store goes on
    assert names(store) == before | {"later"}


def test_a_failure_inside_an_inner_batch_is_undone_alone(store):
    before = names(store)
    version = store.current_version()
    with store.batch():
        store.create(queue("first"))
        with pytest.raises(StoreError, match="refused by a test trigger"):
            with store.batch():
                store.create(queue("inner"))
                store.create(queue("bad"))  # its own row is written, then the change log refuses
        store.create(queue("last"))
    assert names(store) == before | {"first", "last"}  # nothing of the inner batch, not even its object rows
    with pytest.raises(NotFound):
        store.get("Queue", "bad")
    changes = store.watch(version, {"Queue"}, timeout=0.0)
    assert [event.object["metadata"]["name"] for event in changes] == ["first", "last"]
    assert int(store.get("Queue", "last")["metadata"]["resourceVersion"]) == store.current_version()


def test_a_failure_outside_any_batch_is_a_store_error_and_keeps_nothing(store):
    before = names(store)
    with pytest.raises(StoreError, match="refused by a test trigger"):
        store.create(queue("bad"))
    assert names(store) == before
    store.create(queue("good"))
    assert names(store) == before | {"good"}


def test_a_read_that_fails_inside_a_batch_is_a_store_error_and_leaves_the_batch_to_commit(store, tmp_path):
    """A read inside a batch (a request reads its admission view and the store's version in its
    write group's batch) that the database refuses answers a ``StoreError`` naming the database,
    the driver's error as its cause; a read changes nothing, so the batch's writes still commit."""
    with store.batch():
        store.create(queue("good"))
        conn = store._local.conn  # the batch's own connection: the table goes away for this read only
        conn.exec_driver_sql("ALTER TABLE objects RENAME TO objects_away")
        with pytest.raises(StoreError, match="no such table") as failed:
            store.get("Queue", "good")
        assert str(tmp_path / "lahar.db") in str(failed.value)
        assert isinstance(failed.value.__cause__, sqlite3.Error)
        conn.exec_driver_sql("ALTER TABLE objects_away RENAME TO objects")
        assert store.get("Queue", "good")["metadata"]["name"] == "good"
    assert "good" in names(store)
