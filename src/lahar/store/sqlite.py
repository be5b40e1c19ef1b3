"""``SqliteStore``: the embedded default, one SQLite file, every acknowledged write on disk.

Why SQLite: Lahar must start with one command on a laptop and keep what it accepted across a
crash, with no database server to run. This module holds only what is SQLite's own; the tables,
writes and watch are ``SqlStore``'s:

- WAL journal: readers never wait for the writer, and other processes can read and watch;
- ``synchronous=FULL``: a commit returns after the WAL is synced, so an acknowledged write
  survives a crash or a power cut;
- ``busy_timeout``: a writer waits for another process's transaction instead of failing;
- ``BEGIN IMMEDIATE`` for writes: the write lock is taken at the start, so two processes never
  both read the counter and then fight over the upgrade to a write lock;
- an integrity check at open (``PRAGMA quick_check``): a damaged file is refused, never reset;
  so is an existing empty file (a database truncated to nothing), which SQLite would take as new.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import URL, Connection, Engine, create_engine, event

from lahar.store.base import DEFAULT_RETENTION, StoreError
from lahar.store.sql import WRITE_OPTION, SqlStore

__all__ = ["SqliteStore", "sqlite_engine"]


class SqliteStore(SqlStore):
    """``SqlStore`` on the SQLite file at ``path`` (its directory is created if missing)."""

    KEEP_WRITE_CONNECTION = True

    def __init__(
        self,
        path: str | Path,
        retention: int = DEFAULT_RETENTION,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 5.0,
    ) -> None:
        self.path = Path(path).expanduser()
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a directory; give the path of a database file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"{self.path}: cannot create the directory for the database: {exc}"
            ) from exc
        _refuse_empty_file(self.path)
        engine = sqlite_engine(self.path, busy_timeout)
        try:
            super().__init__(
                engine,
                where=str(self.path),
                retention=retention,
                clock=clock,
                busy_timeout=busy_timeout,
            )
        except StoreError as exc:
            if "locked" not in str(exc.__cause__ or ""):
                raise
            raise StoreError(
                f"{exc.message}; stop the process that holds it (another lahar server, a sqlite3 "
                "shell, a backup) or wait for it to finish, then start again"
            ) from exc

    def _check_file(self, conn: Connection) -> None:
        verdict = conn.exec_driver_sql("PRAGMA quick_check(1)").scalar()
        if verdict != "ok":
            raise StoreError(
                f"{self.where}: the database is damaged ({verdict}); "
                "it was left untouched: restore a backup"
            )


def _refuse_empty_file(path: Path) -> None:
    """An existing file of 0 bytes is no database: SQLite would silently start a new one in it,
    and a Lahar database truncated to nothing would come back empty. Refuse it instead."""
    wal = path.with_name(path.name + "-wal")
    if path.is_file() and path.stat().st_size == 0 and not (wal.is_file() and wal.stat().st_size):
        raise StoreError(
            f"{path}: the file is empty (0 bytes): it holds no Lahar database; if it held one, "
            "it was truncated: restore a backup. To start a new database, remove the empty file "
            "or give another --db"
        )


def sqlite_engine(path: Path, busy_timeout: float) -> Engine:
    """An engine whose connections use WAL, ``synchronous=FULL`` and a busy timeout.

    SQLAlchemy emits ``BEGIN`` itself (the ``sqlite3`` module's own transaction handling is
    switched off): ``BEGIN IMMEDIATE`` on connections marked with ``WRITE_OPTION``.
    """
    engine = create_engine(
        URL.create("sqlite", database=str(path)),
        connect_args={"timeout": busy_timeout, "check_same_thread": False},
        pool_size=4,
        max_overflow=16,
        pool_timeout=max(busy_timeout, 1.0),
    )
    event.listen(engine, "connect", lambda dbapi, record: _configure(dbapi, path, busy_timeout))
    event.listen(engine, "begin", _begin)
    return engine


def _configure(dbapi_connection, path: Path, busy_timeout: float) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        mode = cursor.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            raise StoreError(
                f"{path}: SQLite cannot use a write-ahead log here (journal mode {mode}); "
                "put the database on a local disk"
            )
        cursor.execute("PRAGMA synchronous = FULL")
    finally:
        cursor.close()


def _begin(conn: Connection) -> None:
    """On the driver's connection: through ``exec_driver_sql`` a ``BEGIN`` cost as much as a
    write's statements together (every read and write transaction takes one)."""
    statement = "BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION) else "BEGIN"
    conn.connection.dbapi_connection.execute(statement).close()  # type: ignore[union-attr]
