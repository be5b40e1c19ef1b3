"""One contract, every backend: CRUD, compare-and-swap, resource versions, watch, durability."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from lahar.errors import AlreadyExists, Conflict, NotFound
from lahar.store import MemoryStore, SqliteStore, StoreError, StoreGone, open_store


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    s = MemoryStore(retention=50) if request.param == "memory" else SqliteStore(tmp_path / "s.db", retention=50)
    yield s
    s.close()


def queue(name: str, **labels) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name, "labels": labels}, "spec": {"weight": 1}}


def pod(name: str, ns: str = "default") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": {}}


def test_create_get_list(store):
    created = store.create(queue("b", team="x"))
    store.create(queue("a", team="y"))
    assert created["metadata"]["uid"] and created["metadata"]["creationTimestamp"].endswith("Z")
    assert store.get("Queue", "b")["metadata"]["labels"] == {"team": "x"}
    items, version = store.list("Queue")
    assert [q["metadata"]["name"] for q in items] == ["a", "b"] and version == store.current_version()
    assert [q["metadata"]["name"] for q in store.list("Queue", label_selector={"team": "x"})[0]] == ["b"]
    with pytest.raises(AlreadyExists):
        store.create(queue("a"))
    with pytest.raises(NotFound):
        store.get("Queue", "zzz")


def test_namespaces_and_generate_name(store):
    store.create(pod("p", "ns1"))
    store.create(pod("p", "ns2"))
    generated = store.create({"kind": "Command", "metadata": {"generateName": "q-open-"}, "action": "OpenQueue"})
    assert generated["metadata"]["name"].startswith("q-open-") and len(generated["metadata"]["name"]) == len("q-open-") + 5
    assert generated["metadata"]["namespace"] == "default"
    assert [p["metadata"]["namespace"] for p in store.list("Pod", "ns2")[0]] == ["ns2"]
    assert store.get("Pod", "ns1/p")["metadata"]["namespace"] == "ns1"


def test_versions_increase_across_kinds(store):
    versions = [int(store.create(queue(f"q{i}"))["metadata"]["resourceVersion"]) for i in range(3)]
    versions.append(int(store.create(pod("p"))["metadata"]["resourceVersion"]))
    assert versions == sorted(versions) and len(set(versions)) == 4


def test_compare_and_swap(store):
    first = store.create(queue("a"))
    first["spec"]["weight"] = 2
    second = store.update(first)
    assert second["spec"]["weight"] == 2 and second["metadata"]["uid"] == first["metadata"]["uid"]
    first["spec"]["weight"] = 3  # still carries the old version
    with pytest.raises(Conflict, match="stale"):
        store.update(first)
    unconditional = dict(second, spec={"weight": 4})
    unconditional["metadata"] = {k: v for k, v in second["metadata"].items() if k != "resourceVersion"}
    assert store.update(unconditional)["spec"]["weight"] == 4
    with pytest.raises(NotFound):
        store.update(queue("ghost"))


def test_delete_with_and_without_version(store):
    a = store.create(queue("a"))
    store.create(queue("b"))
    with pytest.raises(Conflict):
        store.delete("Queue", "a", resource_version="999999")
    assert store.delete("Queue", "a", a["metadata"]["resourceVersion"])["metadata"]["name"] == "a"
    store.delete("Queue", "b")
    with pytest.raises(NotFound):
        store.delete("Queue", "b")


def test_watch_returns_later_events_in_order(store):
    start = store.current_version()
    store.create(queue("a"))
    b = store.create(queue("b"))
    store.update(b)
    store.delete("Queue", "a")
    events = store.watch(start)
    assert [(e.type, e.key) for e in events] == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "a")]
    assert [e.resource_version for e in events] == sorted(e.resource_version for e in events)
    assert store.watch(events[1].resource_version, {"Queue"})[0].type == "MODIFIED"
    assert store.watch(start, {"Pod"}) == []


def test_watch_wakes_on_a_write_from_another_thread(store):
    start = store.current_version()
    timer = threading.Timer(0.2, lambda: store.create(queue("late")))
    timer.start()
    began = time.monotonic()
    events = store.watch(start, timeout=5.0)
    assert events and events[0].key == "late" and time.monotonic() - began < 3.0
    timer.join()


def test_gone_after_compaction(store):
    start = store.current_version()
    for i in range(1100):
        store.create(pod(f"p{i}"))
    with pytest.raises(StoreGone):
        store.watch(start)
    assert store.watch(store.current_version() - 5)


def test_concurrent_writers_lose_no_update(store):
    store.create(queue("counter"))

    def bump(times: int) -> None:
        for _ in range(times):
            while True:
                current = store.get("Queue", "counter")
                current["spec"]["weight"] += 1
                try:
                    store.update(current)
                    break
                except Conflict:
                    continue

    threads = [threading.Thread(target=bump, args=(25,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get("Queue", "counter")["spec"]["weight"] == 1 + 8 * 25


def test_batch_is_one_unit(store):
    with pytest.raises(RuntimeError):
        with store.batch():
            store.create(queue("in-batch"))
            raise RuntimeError("abort")
    if isinstance(store, SqliteStore):
        with pytest.raises(NotFound):
            store.get("Queue", "in-batch")
    with store.batch():
        store.create(queue("x"))
        store.create(queue("y"))
    assert store.get("Queue", "y")


def test_sqlite_reopen_keeps_everything(tmp_path):
    path = tmp_path / "keep.db"
    first = SqliteStore(path)
    first.create(queue("a"))
    version = first.current_version()
    first.close()
    again = SqliteStore(path)
    assert again.get("Queue", "a")["spec"]["weight"] == 1
    assert again.current_version() == version
    assert [e.key for e in again.watch(0)] == ["a"]
    assert int(again.create(queue("b"))["metadata"]["resourceVersion"]) == version + 1
    again.close()


def test_sqlite_another_process_sees_writes(tmp_path):
    path = tmp_path / "shared.db"
    mine = SqliteStore(path)
    start = mine.current_version()
    code = f"from lahar.store import SqliteStore; s = SqliteStore({str(path)!r}); s.create({queue('from-child')!r}); s.close()"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    events = mine.watch(start, timeout=2.0)
    assert [e.key for e in events] == ["from-child"]
    mine.close()


def test_sqlite_refuses_bad_files(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="junk.db"):
        SqliteStore(junk)
    import sqlite3

    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE songs (title TEXT)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a Lahar database"):
        SqliteStore(other)
    newer = tmp_path / "newer.db"
    SqliteStore(newer).close()
    con = sqlite3.connect(newer)
    con.execute("UPDATE meta SET schema_version = 99")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="newer Lahar"):
        SqliteStore(newer)
    assert junk.read_bytes().startswith(b"this is not")  # untouched


def test_open_store_urls(tmp_path, monkeypatch):
    assert isinstance(open_store("memory://"), MemoryStore)
    assert isinstance(open_store(str(tmp_path / "x.db")), SqliteStore)
    assert isinstance(open_store(f"sqlite:///{tmp_path}/y.db"), SqliteStore)
    with pytest.raises(StoreError, match="unsupported database URL"):
        open_store("redis://nope")
    monkeypatch.setenv("LAHAR_HOME", str(tmp_path / "home"))
    store = open_store()
    assert (tmp_path / "home" / "lahar.db").exists()
    store.close()
