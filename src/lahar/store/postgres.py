"""``PostgresStore``: the store on a PostgreSQL database, shared by several Lahar servers.

Why PostgreSQL: one SQLite file serves one machine; several servers behind a load balancer
need a database they can all reach. The tables, writes, history and migrations are
``SqlStore``'s, exactly as on SQLite; this module holds only what is PostgreSQL's own:

- the driver is psycopg 3 (``postgresql://`` and ``postgres://`` URLs are served with it);
- every write transaction starts by locking the one ``meta`` row (``SELECT ... FOR UPDATE``), so
  writers from every server are serialised as SQLite's ``BEGIN IMMEDIATE`` serialises them: the
  counter, the compare-and-swap check and the write are one step, and versions commit in order;
- writes run at ``READ COMMITTED`` (after the lock each statement sees every earlier commit);
  reads run at ``REPEATABLE READ``, so ``list`` returns items and version from one snapshot;
- a writer waits ``busy_timeout`` seconds for the lock (``lock_timeout``), then fails clearly;
- opening takes a transaction-scoped advisory lock, so servers starting together on an empty
  database create (or upgrade) the schema once;
- each write transaction sends ``NOTIFY lahar_store`` (delivered at commit, never on rollback);
  one listener connection per process wakes this process's watchers, who then read the events
  table after their version. Notifications carry nothing; a lost one costs at most
  ``poll_interval`` seconds, the slow poll every watcher keeps as a safety net.

Errors name the database by its URL with the password left out.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from lahar.store.base import DEFAULT_RETENTION, StoreError
from lahar.store.sql import WRITE_OPTION, SqlStore

__all__ = ["CHANNEL", "PostgresStore", "is_postgres_url", "public_url"]

log = logging.getLogger("lahar.store")

CHANNEL = "lahar_store"
SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
_OPEN_LOCK = 0x4C414852  # pg_advisory_xact_lock key while opening ("LAHR")
_LOCK_META = text(
    f"SELECT pg_notify('{CHANNEL}', ''), resource_version FROM meta WHERE id = 1 FOR UPDATE"
)
_HOLDS_LOCK = text(
    "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.pid = :pid "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND l.classid = :k1 AND l.objid = :k2 AND l.objsubid = 2 "
    "AND a.backend_start IS NOT DISTINCT FROM CAST(:started AS timestamptz))"
)


def is_postgres_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SCHEMES if "://" in url else False


def public_url(url: str | URL) -> str:
    """The URL as errors and logs may show it: no password, the user's own scheme."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return "the PostgreSQL URL (unreadable)"
    return parsed._replace(password=None).render_as_string(hide_password=False)


def _engine_url(url: str) -> URL:
    scheme = url.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise StoreError(
            f'unsupported PostgreSQL URL scheme "{scheme}://": use postgresql://user@host/db '
            "(Lahar connects with psycopg 3)"
        )
    try:
        parsed = make_url("postgresql+psycopg://" + url.split("://", 1)[1])
    except ArgumentError as exc:
        raise StoreError(f"{public_url(url)}: not a database URL: {exc}") from None
    if not parsed.database:
        raise StoreError(
            f"{public_url(url)}: the URL names no database; "
            "write postgresql://user@host[:port]/database"
        )
    return parsed


class PostgresStore(SqlStore):
    """``SqlStore`` on the PostgreSQL database at ``url`` (``postgresql://user:pw@host/db``).

    The schema is created in an empty database and upgraded in an older one; a database that
    holds other tables is refused. ``busy_timeout`` bounds the wait for another writer, and the
    wait for a connection.
    """

    WRITE_OPTIONS = {WRITE_OPTION: True, "isolation_level": "READ COMMITTED"}
    poll_interval = 1.0  # the safety net; NOTIFY wakes watchers at once

    def __init__(
        self,
        url: str,
        retention: int = DEFAULT_RETENTION,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 10.0,
        pool_size: int = 8,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = _engine_url(url)
        self._listener: threading.Thread | None = None
        self.listening = threading.Event()  # set while NOTIFY wakes this process's watchers
        self._wake_r, self._wake_w = os.pipe()
        try:
            engine = postgres_engine(self.url, busy_timeout, pool_size, connect_timeout)
            super().__init__(
                engine,
                where=public_url(url),
                retention=retention,
                clock=clock,
                busy_timeout=busy_timeout,
            )
        except BaseException:
            self._close_pipe()
            raise
        self._listener = threading.Thread(target=self._listen, name="lahar-store-listen", daemon=True)
        self._listener.start()

    # ----------------------------------------------------------------- hooks

    def _begin_open(self, conn: Connection) -> None:
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _OPEN_LOCK})

    def _begin_write(self, conn: Connection) -> None:
        conn.execute(_LOCK_META)

    # ----------------------------------------------------------------- connections of our own

    def dedicated_connection(self) -> Any:
        """A psycopg connection outside the pool, in autocommit mode, for a long-lived session
        (LISTEN, leadership locks). The caller closes it."""
        if self._closed:
            raise StoreError(f"{self.where}: the store is closed")
        with self._errors("connect"):
            raw = self.engine.raw_connection()
            conn = raw.driver_connection
            raw.detach()
            conn.rollback()
            conn.autocommit = True
            return conn

    def session_holds_lock(self, key: tuple[int, int], pid: int, started: Any) -> bool:
        """Whether the session ``pid`` (started at ``started``) holds the advisory lock ``key``
        now; inside a batch, seen from the batch's transaction (after it locked ``meta``)."""
        with self._reading() as conn:
            return bool(
                conn.execute(
                    _HOLDS_LOCK, {"pid": pid, "started": started, "k1": key[0], "k2": key[1]}
                ).scalar()
            )

    # ----------------------------------------------------------------- notifications

    def _listen(self) -> None:
        """Wake this process's watchers whenever another transaction on the database commits."""
        failures = 0
        while not self._closed:
            conn = None
            try:
                conn = self.dedicated_connection()
                conn.add_notify_handler(lambda _notice: self._signal())
                conn.execute(f"LISTEN {CHANNEL}")
                self.listening.set()
                if failures:
                    log.info("%s: listening for changes again", self.where)
                failures = 0
                self._signal()  # whatever was written while nobody listened
                while not self._closed:
                    ready, _, _ = select.select([conn.fileno(), self._wake_r], [], [], 5.0)
                    if self._wake_r in ready or self._closed:
                        break
                    conn.execute("SELECT 1")  # reads the pending notifications (and checks)
            except Exception as exc:  # noqa: BLE001 - the listener must outlive a lost server
                if self._closed:
                    break
                failures += 1
                if failures == 1:
                    log.warning(
                        "%s: lost the change listener (%s); watchers poll every %g s until it "
                        "is back", self.where, str(exc).strip(), self.poll_interval,
                    )
                self._wait(min(5.0, 0.2 * failures))
            finally:
                self.listening.clear()
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001
                        pass

    def _wait(self, seconds: float) -> None:
        select.select([self._wake_r], [], [], seconds)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        if self._listener is not None and self._listener is not threading.current_thread():
            self._listener.join(5.0)
        super().close()
        self._close_pipe()

    def _close_pipe(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass


def postgres_engine(url: URL, busy_timeout: float, pool_size: int, connect_timeout: float) -> Engine:
    """An engine on psycopg 3: reads at ``REPEATABLE READ``, a lock timeout, TCP keepalives,
    connections checked before use (a restarted database server is reconnected to)."""
    if importlib.util.find_spec("psycopg") is None:
        raise StoreError(
            f"{public_url(url)}: PostgreSQL needs the psycopg package: pip install 'psycopg[binary]'"
        )
    args: dict[str, Any] = {
        "connect_timeout": max(1, round(connect_timeout)),
        "application_name": "lahar",
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
        "options": f"-c lock_timeout={max(1, int(busy_timeout * 1000))}",
    }
    for name in list(args):
        if name in url.query:
            del args[name]  # the URL's own settings win
    return create_engine(
        url,
        connect_args=args,
        isolation_level="REPEATABLE READ",
        pool_size=pool_size,
        max_overflow=16,
        pool_timeout=max(busy_timeout, 1.0),
        pool_pre_ping=True,
    )
