"""Faults a real server must survive, or refuse loudly: kill -9 under load, damaged and locked
database files.

- The server is killed with SIGKILL in the middle of the load of ``test_load`` and restarted on
  the same SQLite file while the clients keep going: nothing acknowledged is lost, nothing
  deleted comes back, and the invariants (no over-committed node, no pod bound twice, queue
  allocations equal to running pods) hold across the restart.
- A database file that is garbage, truncated, partly overwritten or emptied, and a database
  another process holds locked, stop ``lahar server`` at start with a message that names the
  file and says what to do; the file is left exactly as it was (never reset).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loadgen import Load, ServerProcess, check_acknowledged, check_allocations_settle, check_nodes, free_port, seed_cluster

from lahar.store import SqliteStore

CLIENTS, SECONDS = 40, 10.0


def test_kill_minus_nine_under_load_then_restart_loses_nothing(tmp_path):
    server = ServerProcess(tmp_path / "lahar.db", tmp_path / "home", free_port())
    server.start()
    kills = []

    def crash(load: Load) -> None:
        server.kill9()
        kills.append(load.ledger.sent)
        server.start()  # same file, same port; clients reconnect by themselves

    try:
        seed_cluster(server)
        load = Load(server, clients=CLIENTS, seconds=SECONDS, seed=11)
        load.run(during=crash)
        assert kills and server.starts == 2
        assert not load.ledger.errors, load.ledger.errors[:10]
        assert not load.violations, load.violations[:10]
        with server.client() as c:
            counts = check_acknowledged(c, load.ledger)
            check_nodes(c)
            check_allocations_settle(c)
            load.follow(1)
            assert not load.check_final(c.get("/api/v1/pods").json()["items"]) and not load.violations
        unanswered, refused = load.ledger.requests["unanswered"], load.ledger.requests["refused"]
        in_doubt = len(load.ledger.maybe)
        print(f"\nfaults: kill -9 once under {CLIENTS} clients; {load.ledger.sent} requests, {refused} refused and {unanswered} unanswered while down, "
              f"{in_doubt} writes in doubt; {len(load.ledger.jobs)} jobs acknowledged, {len(load.ledger.deleted_jobs)} deleted; "
              f"stored {counts}; lost: none")
        assert load.ledger.requests["POST Job 201"] >= 30
    finally:
        server.stop()


# --------------------------------------------------------------------- damaged and locked files


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A real Lahar database with a few hundred objects, checkpointed into the main file."""
    path = tmp_path_factory.mktemp("pristine") / "lahar.db"
    store = SqliteStore(path)
    with store.batch():
        for i in range(300):
            store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"pad": "x" * 60}}, "status": {"allocatable": {"cpu": "8"}}})
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()  # the last connection: the log is folded into the file and removed
    assert path.stat().st_size > 16 * 4096 and not path.with_name("lahar.db-wal").exists()
    return path


def lahar_database(pristine: Path, where: Path) -> Path:
    shutil.copyfile(pristine, where)
    return where


def garbage(path: Path) -> None:
    path.write_bytes(os.urandom(64 * 1024))


def truncated_to_half(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)


def truncated_to_one_page(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(4096)


def overwritten_in_the_middle(path: Path) -> None:
    with path.open("r+b") as f:
        f.seek(4 * 4096)
        f.write(os.urandom(4 * 4096))


def emptied(path: Path) -> None:
    path.write_bytes(b"")


DAMAGE = [garbage, truncated_to_half, truncated_to_one_page, overwritten_in_the_middle, emptied]
EXPECTED = {
    garbage: "damaged or is not a database",
    truncated_to_half: "damaged",
    truncated_to_one_page: "damaged",
    overwritten_in_the_middle: "damaged",
    emptied: "the file is empty (0 bytes)",
}


def start_server(db: Path, home: Path, timeout: float = 45) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "lahar.cli.main", "server", "--db", str(db), "--port", str(free_port())]
    return subprocess.run(command, env={**os.environ, "LAHAR_HOME": str(home)}, capture_output=True, text=True, timeout=timeout)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__ for d in DAMAGE])
def test_a_damaged_database_stops_the_server_with_a_clear_error(tmp_path, pristine, damage):
    db = lahar_database(pristine, tmp_path / "lahar.db")
    damage(db)
    before = digest(db)
    result = start_server(db, tmp_path / "home")
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.startswith(f"error: {db}: "), result.stderr  # names the file first
    assert EXPECTED[damage] in result.stderr and "restore a backup" in result.stderr
    assert "Traceback" not in result.stderr and "listening" not in result.stderr
    assert digest(db) == before, "the damaged file was changed"
    assert not (tmp_path / "home" / "token").exists(), "a token was made for a database that was refused"


def test_a_locked_database_stops_the_server_with_a_clear_error(tmp_path, pristine):
    """Another process (a sqlite3 shell, a second server, a backup) holds an exclusive lock."""
    db = lahar_database(pristine, tmp_path / "lahar.db")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.read()", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        result = start_server(db, tmp_path / "home")
        waited = time.monotonic() - started
    finally:
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.startswith(f"error: {db}: cannot open the database: the database is locked by another process"), result.stderr
    assert "stop the process that holds it" in result.stderr and "Traceback" not in result.stderr
    assert waited < 40
    with sqlite3.connect(db) as conn:  # untouched: every object is still there
        assert conn.execute("SELECT count(*) FROM objects WHERE kind = 'Node'").fetchone()[0] == 300


def test_a_second_server_on_the_same_sqlite_file_is_refused(tmp_path):
    """Two control loops on one file could bind a task twice: the second server does not start."""
    first = ServerProcess(tmp_path / "lahar.db", tmp_path / "home", free_port(), auth=False)
    first.start()
    try:
        result = start_server(tmp_path / "lahar.db", tmp_path / "home2")
        assert result.returncode == 1, result.stderr[-2000:]
        assert f"another lahar server (pid {first.process.pid}) is using this database" in result.stderr
        assert "run several servers on PostgreSQL" in result.stderr and "Traceback" not in result.stderr
    finally:
        first.kill9()
    again = ServerProcess(tmp_path / "lahar.db", tmp_path / "home", free_port(), auth=False)
    again.start()  # the kernel let go of the lease when the first one died
    again.stop()
