"""What only a shared PostgreSQL database can do: several stores (servers) on one database,
NOTIFY wake-ups, concurrent first starts, the lock timeout, and clear connection errors.

The contract itself (CRUD, compare-and-swap, watch, batches) runs on PostgreSQL in
``test_contract.py``; these tests use the throwaway server of ``tests/pg.py``.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import psycopg
import pytest

from lahar.errors import Conflict
from lahar.store import SCHEMA_VERSION, PostgresStore, StoreError, open_store
from pg import PASSWORD, reset_database


def queue(name: str, weight: int = 1) -> dict:
    return {"kind": "Queue", "metadata": {"name": name}, "spec": {"weight": weight}}


def rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


@pytest.fixture
def url(pg_database) -> str:
    return reset_database(pg_database)


def test_reopen_keeps_objects_counter_history_and_schema_version(url):
    first = open_store(url)
    assert isinstance(first, PostgresStore)
    first.create(queue("a"))
    first.update(queue("a", weight=3))
    history = [(e.resource_version, e.type, e.key) for e in first.watch(0)]
    first.close()
    with pytest.raises(StoreError, match="closed"):
        first.get("Queue", "a")
    again = open_store(url.replace("postgresql://", "postgres://"))
    assert again.get("Queue", "a")["spec"]["weight"] == 3 and again.current_version() == 2
    assert [(e.resource_version, e.type, e.key) for e in again.watch(0)] == history
    assert rv(again.create(queue("b"))) == 3
    again.close()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT schema_version FROM meta").fetchone() == (SCHEMA_VERSION,)


def test_servers_starting_together_on_an_empty_database_create_one_schema(url):
    opened: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            opened.append(PostgresStore(url))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(opened) == 4
    opened[0].create(queue("a"))
    assert [rv(s.get("Queue", "a")) for s in opened] == [1, 1, 1, 1]
    for s in opened:
        s.close()


def test_two_servers_writing_at_once_lose_nothing_and_share_one_sequence(url):
    """Two stores are two servers: nothing in-process serialises them, only the database."""
    servers = [PostgresStore(url), PostgresStore(url)]
    servers[0].create(queue("counter", weight=0))
    start = servers[0].current_version()
    acknowledged: list[int] = []
    lock = threading.Lock()

    def client(store: PostgresStore, t: int) -> None:
        for i in range(25):
            mine = [rv(store.create({"kind": "Pod", "metadata": {"name": f"t{t}-{i}"}, "spec": {}}))]
            while True:
                current = store.get("Queue", "counter")
                current["spec"]["weight"] += 1
                try:
                    mine.append(rv(store.update(current)))
                    break
                except Conflict:
                    continue
            with lock:
                acknowledged.extend(mine)

    workers = [threading.Thread(target=client, args=(servers[t % 2], t)) for t in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert servers[1].get("Queue", "counter")["spec"]["weight"] == 6 * 25
    assert sorted(acknowledged) == list(range(start + 1, servers[0].current_version() + 1))
    for s in servers:
        assert [e.resource_version for e in s.watch(start)] == sorted(acknowledged)
        s.close()


def test_notify_wakes_a_watcher_on_another_server_at_once(url):
    watcher, writer = PostgresStore(url), PostgresStore(url)
    assert watcher.poll_interval >= 1.0  # so a fast wake-up below is NOTIFY's doing
    assert watcher.listening.wait(10.0)
    start = watcher.current_version()
    written: list[float] = []

    def write_later() -> None:
        time.sleep(0.2)
        writer.create(queue("late"))
        written.append(time.monotonic())

    thread = threading.Thread(target=write_later)
    thread.start()
    events = watcher.watch(start, timeout=10.0)
    woke = time.monotonic()
    thread.join()  # the watcher may wake before the writer notes the time
    assert [e.key for e in events] == ["late"]
    assert woke - written[0] < 0.5
    watcher.close()
    writer.close()


def test_a_watcher_whose_listener_is_cut_still_sees_every_change(url):
    watcher, writer = PostgresStore(url), PostgresStore(url)
    assert watcher.listening.wait(10.0)
    with psycopg.connect(url, autocommit=True) as admin:
        cut = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE query LIKE 'LISTEN%%' OR query = 'SELECT 1' AND application_name = 'lahar'"
        ).fetchall()
    assert cut
    start = watcher.current_version()
    for name in ("x", "y"):
        writer.create(queue(name))
    deadline = time.monotonic() + 5
    seen: list[str] = []
    while len(seen) < 2 and time.monotonic() < deadline:
        seen += [e.key for e in watcher.watch(start + len(seen), timeout=2.0)]
    assert seen == ["x", "y"]
    watcher.close()
    writer.close()


def test_a_writer_waits_for_another_then_says_why(url):
    store = PostgresStore(url, busy_timeout=0.3)
    store.create(queue("a"))
    with psycopg.connect(url) as holder:
        holder.execute("SELECT * FROM meta WHERE id = 1 FOR UPDATE")
        began = time.monotonic()
        with pytest.raises(StoreError, match=r"cannot write: another writer held the database for over 0\.3 s"):
            store.create(queue("b"))
        assert time.monotonic() - began >= 0.25
        assert [q["metadata"]["name"] for q in store.list("Queue")[0]] == ["a"]  # reads do not wait
        holder.rollback()
    assert rv(store.create(queue("b"))) == 2
    store.close()


def test_refuses_another_applications_database_and_a_newer_schema(url):
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE songs (title text)")
    with pytest.raises(StoreError, match=r"not a Lahar database.*songs") as refused:
        PostgresStore(url)
    assert PASSWORD not in refused.value.message
    reset_database(url)
    PostgresStore(url).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE meta SET schema_version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match=rf"newer Lahar.*schema version {SCHEMA_VERSION + 1}"):
        PostgresStore(url)


def test_wrong_password_and_missing_database_are_clear_errors(pg_cluster, url):
    bad = pg_cluster.url(url.rsplit("/", 1)[1], password="not-the-password")
    with pytest.raises(StoreError) as refused:
        open_store(bad)
    message = refused.value.message
    assert message.startswith(f"postgresql://lahar@127.0.0.1:{pg_cluster.port}/")
    assert "password authentication failed" in message and "not-the-password" not in message
    with pytest.raises(StoreError, match=r'/nowhere: cannot open the database.*"nowhere" does not exist'):
        open_store(pg_cluster.url("nowhere"))


def test_server_command_with_a_wrong_password_prints_one_clear_line(pg_cluster, url):
    bad = pg_cluster.url(url.rsplit("/", 1)[1], password="not-the-password")
    done = subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", "server", "--db", bad, "--no-auth"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode != 0
    assert done.stderr.startswith(f"error: postgresql://lahar@127.0.0.1:{pg_cluster.port}/")
    assert "password authentication failed" in done.stderr
    assert "Traceback" not in done.stderr and "not-the-password" not in done.stderr


def test_an_upgrade_runs_once_even_when_servers_start_together(url, monkeypatch):
    """A newer Lahar (schema 3 here, with one upgrade step) meets a schema 2 database."""
    from lahar.store import schema, sql

    PostgresStore(url).close()
    calls: list[int] = []

    def add_index(conn) -> None:
        calls.append(1)
        conn.exec_driver_sql("CREATE INDEX objects_by_namespace ON objects (kind, namespace)")

    monkeypatch.setattr(sql, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(schema._UPGRADES, SCHEMA_VERSION, add_index)
    opened: list[PostgresStore] = []
    threads = [threading.Thread(target=lambda: opened.append(PostgresStore(url))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opened) == 3 and calls == [1]
    for s in opened:
        s.close()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT schema_version FROM meta").fetchone() == (SCHEMA_VERSION + 1,)
        assert conn.execute("SELECT to_regclass('objects_by_namespace') IS NOT NULL").fetchone() == (True,)


def test_a_failed_upgrade_leaves_the_old_schema_untouched(url, monkeypatch):
    from lahar.store import schema, sql

    store = PostgresStore(url)
    store.create(queue("kept"))
    store.close()

    def broken(conn) -> None:
        conn.exec_driver_sql("ALTER TABLE objects ADD COLUMN labels text")
        conn.exec_driver_sql("ALTER TABLE no_such_table ADD COLUMN x text")

    monkeypatch.setattr(sql, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(schema._UPGRADES, SCHEMA_VERSION, broken)
    with pytest.raises(StoreError, match="cannot open the database.*no_such_table"):
        PostgresStore(url)
    monkeypatch.undo()
    again = PostgresStore(url)  # still schema 2, data and all, as the old Lahar left it
    assert again.get("Queue", "kept")["metadata"]["name"] == "kept"
    again.close()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT schema_version FROM meta").fetchone() == (SCHEMA_VERSION,)
        columns = {r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'objects'")}
        assert "labels" not in columns
