"""Leadership: several servers on one PostgreSQL database, one control loop among them.

Why: every server answers the API (any of them may sit behind a load balancer), but the queue
controller and the scheduler must run in exactly one place, or two of them would bind the same
pending task twice or fill a node twice. The leader is the server that holds a PostgreSQL
session-level advisory lock (``LOCK_KEY``) on a connection of its own:

- ``AdvisoryLeadership`` tries the lock every ``interval`` seconds while it does not hold it,
  and checks its connection on the same beat while it does. When the leader dies, its
  connection closes and PostgreSQL releases the lock at once (``kill -9`` included); a silent
  network loss is noticed by TCP keepalives within about 25 s. Another server takes it on its
  next try.
- ``LeaderLoop`` runs the control loop only while leadership is held. Each tick is fenced: its
  store transaction first locks the store (every writer waits for that lock), then checks in
  the database that *our* session still holds the advisory lock. A leader that lost the lock
  between two ticks therefore writes nothing, and a new leader's first tick begins after the
  old leader's last one committed.
- On every promotion the control loop is built afresh from the store, exactly as at a restart
  (``ControlLoop`` is written to resume from the store after ``kill -9``), so a follower keeps
  no cache that could be stale.

SQLite and memory stores have one server, which is always the leader: ``build_server`` uses
the plain ``ControlLoop`` for them and none of this runs.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable

from lahar.errors import LaharError
from lahar.store.base import StoreError

__all__ = ["LOCK_KEY", "AdvisoryLeadership", "LeaderLoop", "install_routes", "leadership_for"]

log = logging.getLogger("lahar.leader")

LOCK_KEY = (0x4C414852, 1)  # pg_try_advisory_lock(int4, int4): ("LAHR", the control loop)


class AdvisoryLeadership:
    """Holds (or waits for) the control loop's advisory lock on a dedicated connection.

    ``term`` grows by one each time the lock is taken: a loop built in an older term is stale.
    """

    def __init__(self, store: Any, interval: float = 0.5, key: tuple[int, int] = LOCK_KEY) -> None:
        self.store, self.interval, self.key = store, interval, key
        self.term = 0
        self.since: float | None = None  # time.time() when this term began
        self._leader = False
        self._lost = False  # confirm() found the lock gone: reconnect before trying again
        self._conn: Any = None
        self._session: tuple[int, Any] | None = None  # (backend pid, backend start) holding it
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()

    def is_leader(self) -> bool:
        return self._leader

    def start(self) -> None:
        self._attempt()  # a lone server leads from its first tick
        self._thread = threading.Thread(target=self._run, name="lahar-leadership", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Give leadership up (another server takes it on its next try)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        with self._guard:
            self._drop("stopping")

    def confirm(self) -> bool:
        """Inside the tick's store transaction: does our session still hold the lock?"""
        session = self._session
        if not self._leader or session is None:
            return False
        held = self.store.session_holds_lock(self.key, *session)
        if not held:  # the beat closes the connection; the caller holds the store's write lock
            self._leader, self._lost = False, True
            log.warning("leadership lost (the database no longer shows our lock)")
        return held

    # ----------------------------------------------------------------- the background beat

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._attempt()

    def _attempt(self) -> None:
        with self._guard:
            if self._stop.is_set():
                return
            if self._lost:
                self._lost = False
                self._drop("the database no longer shows our lock")
            try:
                if self._conn is None:
                    self._conn = self.store.dedicated_connection()
                if self._leader:
                    self._conn.execute("SELECT 1")  # still connected: still holding
                    return
                got = self._conn.execute("SELECT pg_try_advisory_lock(%s, %s)", self.key).fetchone()[0]
                if got:
                    pid, started = self._conn.execute(
                        "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
                    ).fetchone()
                    self._session = (pid, started)
                    self.term += 1
                    self.since = time.time()
                    self._leader = True
                    log.info("leadership taken (term %d): this server runs the control loop", self.term)
            except Exception as exc:  # noqa: BLE001 - a lost database must not kill the server
                self._drop(f"lost the database connection: {str(exc).strip() or type(exc).__name__}")

    def _drop(self, why: str) -> None:
        """Forget the lock and close its connection (which releases it, if it is still held)."""
        if self._leader:
            log.warning("leadership lost (%s): this server stops running the control loop", why)
        self._leader, self._session, self.since = False, None, None
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass


class LeaderLoop:
    """The control loop, ticking only while ``leadership`` is held; otherwise ``ControlLoop``'s
    face (``last``, ``world``, ``cycles``...) of the loop built in the latest term."""

    def __init__(self, make_loop: Callable[[], Any], leadership: AdvisoryLeadership) -> None:
        self._make = self._deferring(make_loop)
        self._inner = self._make()
        self._term = 0  # the term the inner loop was built in; 0: built as a follower
        self.leadership = leadership
        self.skipped = 0  # ticks a fence refused
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def leading(self) -> bool:
        return self.leadership.is_leader()

    def __getattr__(self, name: str) -> Any:  # period, last, world, usage, cycles, errors...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    def tick(self) -> Any:
        """One tick of the control loop if we lead (and still do, seen from its transaction)."""
        if not self.leadership.is_leader():
            return None
        term = self.leadership.term
        if term != self._term:
            self._inner = self._make()  # everything from the store, as at a restart
            self._term = term
        service = self._inner.service
        try:
            with self._inner.holding_lock(), service.store.batch():
                if not self.leadership.confirm():
                    self.skipped += 1
                    return None
                result = self._inner.tick()
        except BaseException:
            self._inner.reread_store()  # the fenced transaction was undone, the inner tick's part with it
            raise
        self._inner.report()  # its metrics, now that the fenced transaction committed
        return result

    @staticmethod
    def _deferring(make_loop: Callable[[], Any]) -> Callable[[], Any]:
        """``make_loop`` whose loops leave their reports to us (our commit is the tick's)."""

        def make() -> Any:
            loop = make_loop()
            loop.report_after_commit = False
            return loop

        return make

    def start(self) -> None:
        self.leadership.start()
        self._thread = threading.Thread(target=self._run, name="lahar-control-loop", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.leadership.is_leader():
            self._inner.stop(timeout)  # its own last writes (usage), while we still lead
        self.leadership.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.tick()
            except LaharError as exc:
                self._inner.errors += 1
                log.error("control loop: %s", exc.message)
            except Exception:  # noqa: BLE001 - the loop must survive one bad tick
                self._inner.errors += 1
                log.exception("control loop tick failed")
            wait = self._inner.period if self.leadership.is_leader() else self.leadership.interval
            self._stop.wait(max(0.0, wait - (time.monotonic() - started)))


def leadership_for(store: Any) -> AdvisoryLeadership | None:
    """Leadership machinery for a store several servers may share; None when one server owns it."""
    from lahar.store.postgres import PostgresStore

    return AdvisoryLeadership(store) if isinstance(store, PostgresStore) else None


def install_routes(app: Any, loop: Any) -> None:
    """``GET /lahar/v1/leader``: whether this server runs the control loop now."""
    leadership = getattr(loop, "leadership", None)

    @app.get("/lahar/v1/leader", tags=["Lahar"], summary="Whether this server runs the control loop (the leader)")
    def leader() -> dict:
        if leadership is None:
            return {"leader": loop is not None, "election": "none (single server)"}
        return {
            "leader": leadership.is_leader(),
            "election": "postgresql advisory lock",
            "term": leadership.term if leadership.is_leader() else None,
            "since": leadership.since,
        }


class FileLease:
    """One server per SQLite file: an exclusive ``flock`` on ``<database>.server.lock``, held for
    the life of the process (the kernel lets go when it dies, even by kill -9). A second server
    on the same file would run a second control loop: it is refused at start instead."""

    def __init__(self, database: Path) -> None:
        import fcntl
        import os

        self.path = Path(f"{database}.server.lock")
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(self._fd, 64, 0).decode(errors="replace").strip() or "another process"
            os.close(self._fd)
            raise StoreError(
                f"{database}: another lahar server ({holder}) is using this database; stop it first, "
                "or run several servers on PostgreSQL (docs/operations.md)"
            ) from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"pid {os.getpid()}".encode(), 0)

    def release(self) -> None:
        import os

        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def file_lease_for(store: Any) -> FileLease | None:
    """The lease a SQLite-backed server must hold; None for other stores."""
    from lahar.store.sqlite import SqliteStore

    return FileLease(store.path) if isinstance(store, SqliteStore) else None
