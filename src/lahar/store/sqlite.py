"""``SqliteStore``: the embedded default, one SQLite file, every acknowledged write on disk.

Why SQLite: Lahar must start with one command on a laptop and keep what it accepted across a
crash. SQLite in WAL mode with ``synchronous=FULL`` makes every committed transaction durable,
lets readers proceed while one writer commits, and needs no server. Each write is one
transaction that bumps the global resource version, stores the object and appends a watch
event; ``batch()`` groups many writes (a scheduling cycle's binds) into one transaction and one
disk sync.

Tables: ``objects(kind, key, namespace, labels, rv, body)``, ``events(rv, type, kind, key, body)``
(bounded: older events are compacted away, and a watch from before them gets ``StoreGone``),
and ``meta`` (schema version, current version, compacted-through version).

A file that is not a Lahar database, a corrupted file, a database written by a newer Lahar, or
a lock that outlasts the busy timeout gives a ``StoreError`` naming the file: never a reset.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from lahar.errors import AlreadyExists, Conflict, NotFound
from lahar.store.base import StoreError, StoreGone, WatchEvent, object_key, prepare_new

__all__ = ["SqliteStore", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1), schema_version INTEGER NOT NULL,
                                 version INTEGER NOT NULL, compacted INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS objects (kind TEXT NOT NULL, key TEXT NOT NULL, namespace TEXT, labels TEXT,
                                    rv INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (kind, key));
CREATE TABLE IF NOT EXISTS events (rv INTEGER PRIMARY KEY, type TEXT NOT NULL, kind TEXT NOT NULL,
                                   key TEXT NOT NULL, body TEXT NOT NULL);
"""


class SqliteStore:
    def __init__(self, path: str | Path, retention: int = 100_000, clock: Callable[[], float] = time.time, busy_timeout: float = 5.0) -> None:
        self.path = Path(path).expanduser()
        self.retention, self.clock = retention, clock
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._depth = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), timeout=busy_timeout, isolation_level=None, check_same_thread=False)
            self._setup()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot use this database: {exc} (it is left untouched; restore a backup or choose another --db)") from None

    def _setup(self) -> None:
        db = self._db
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "meta" not in tables:
            raise StoreError(f"{self.path}: this SQLite file is not a Lahar database (it has tables {', '.join(sorted(tables))})")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(_SCHEMA)
        row = db.execute("SELECT schema_version FROM meta WHERE id = 1").fetchone()
        if row is None:
            db.execute("INSERT INTO meta (id, schema_version, version, compacted) VALUES (1, ?, 0, 0)", (SCHEMA_VERSION,))
        elif row[0] > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: written by a newer Lahar (schema {row[0]}, this one knows {SCHEMA_VERSION}); upgrade Lahar")
        quick = db.execute("PRAGMA quick_check(1)").fetchone()[0]
        if quick != "ok":
            raise StoreError(f"{self.path}: the database is damaged ({quick})")

    # ----------------------------------------------------------------- transactions

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            outer = self._depth == 0
            if outer:
                try:
                    self._db.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as exc:
                    raise StoreError(f"{self.path}: cannot write: {exc}") from None
            self._depth += 1
            try:
                yield self._db
            except BaseException:
                self._depth -= 1
                if outer:
                    self._db.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outer:
                self._db.execute("COMMIT")
                self._cond.notify_all()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every write inside is one transaction: all of them reach the disk, or none."""
        with self._write():
            yield

    def _next_version(self, db: sqlite3.Connection) -> int:
        version = db.execute("SELECT version FROM meta WHERE id = 1").fetchone()[0] + 1
        db.execute("UPDATE meta SET version = ? WHERE id = 1", (version,))
        return version

    def _event(self, db: sqlite3.Connection, version: int, change: str, kind: str, key: str, body: str) -> None:
        db.execute("INSERT INTO events (rv, type, kind, key, body) VALUES (?, ?, ?, ?, ?)", (version, change, kind, key, body))
        if version % 1000 == 0:
            self._compact(db, version)

    def _compact(self, db: sqlite3.Connection, version: int) -> None:
        horizon = version - self.retention
        if horizon > 0:
            db.execute("DELETE FROM events WHERE rv <= ?", (horizon,))
            db.execute("UPDATE meta SET compacted = MAX(compacted, ?) WHERE id = 1", (horizon,))

    # ----------------------------------------------------------------- reads

    def current_version(self) -> int:
        with self._lock:
            return self._db.execute("SELECT version FROM meta WHERE id = 1").fetchone()[0]

    def get(self, kind: str, key: str) -> dict:
        with self._lock:
            row = self._db.execute("SELECT body FROM objects WHERE kind = ? AND key = ?", (kind, key)).fetchone()
        if row is None:
            raise NotFound(kind, key)
        return json.loads(row[0])

    def list(self, kind: str, namespace: str | None = None, label_selector: dict[str, str] | None = None) -> tuple[list[dict], int]:
        query, args = "SELECT body, labels FROM objects WHERE kind = ?", [kind]
        if namespace is not None:
            query += " AND namespace = ?"
            args.append(namespace)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY key", args).fetchall()
            version = self._db.execute("SELECT version FROM meta WHERE id = 1").fetchone()[0]
        items = []
        for body, labels in rows:
            if label_selector and not _match(json.loads(labels or "{}"), label_selector):
                continue
            items.append(json.loads(body))
        return items, version

    # ----------------------------------------------------------------- writes

    def create(self, obj: dict) -> dict:
        body = prepare_new(obj, self.clock)
        kind, key = object_key(body)
        with self._write() as db:
            if db.execute("SELECT 1 FROM objects WHERE kind = ? AND key = ?", (kind, key)).fetchone():
                raise AlreadyExists(kind, key)
            version = self._next_version(db)
            body["metadata"]["resourceVersion"] = str(version)
            text = json.dumps(body)
            db.execute(
                "INSERT INTO objects (kind, key, namespace, labels, rv, body) VALUES (?, ?, ?, ?, ?, ?)",
                (kind, key, body["metadata"].get("namespace"), json.dumps(body["metadata"].get("labels") or {}), version, text),
            )
            self._event(db, version, "ADDED", kind, key, text)
        return body

    def update(self, obj: dict) -> dict:
        kind, key = object_key(obj)
        with self._write() as db:
            row = db.execute("SELECT body FROM objects WHERE kind = ? AND key = ?", (kind, key)).fetchone()
            if row is None:
                raise NotFound(kind, key)
            stored = json.loads(row[0])["metadata"]
            wanted = (obj.get("metadata") or {}).get("resourceVersion")
            if wanted and str(wanted) != stored["resourceVersion"]:
                raise Conflict(f'{kind} "{key}": the object has been modified (resourceVersion {wanted} is stale, current is {stored["resourceVersion"]}); read it again and retry')
            body = json.loads(json.dumps(obj))
            meta = body["metadata"]
            meta["uid"], meta["creationTimestamp"] = stored.get("uid"), stored.get("creationTimestamp")
            if stored.get("namespace"):
                meta["namespace"] = stored["namespace"]
            version = self._next_version(db)
            meta["resourceVersion"] = str(version)
            text = json.dumps(body)
            db.execute(
                "UPDATE objects SET labels = ?, rv = ?, body = ? WHERE kind = ? AND key = ?",
                (json.dumps(meta.get("labels") or {}), version, text, kind, key),
            )
            self._event(db, version, "MODIFIED", kind, key, text)
        return body

    def delete(self, kind: str, key: str, resource_version: str | None = None) -> dict:
        with self._write() as db:
            row = db.execute("SELECT body FROM objects WHERE kind = ? AND key = ?", (kind, key)).fetchone()
            if row is None:
                raise NotFound(kind, key)
            body = json.loads(row[0])
            if resource_version and str(resource_version) != body["metadata"]["resourceVersion"]:
                raise Conflict(f'{kind} "{key}": stale resourceVersion {resource_version} on delete; read it again and retry')
            db.execute("DELETE FROM objects WHERE kind = ? AND key = ?", (kind, key))
            version = self._next_version(db)
            self._event(db, version, "DELETED", kind, key, row[0])
        return body

    # ----------------------------------------------------------------- watch

    def watch(self, since: int, kinds: set[str] | None = None, timeout: float = 0.0) -> list[WatchEvent]:
        """Changes after ``since``; waits up to ``timeout`` for one (also sees other processes' writes)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self._events_after(since, kinds)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0:
                return found
            with self._cond:
                self._cond.wait(min(remaining, 0.05))

    def _events_after(self, since: int, kinds: set[str] | None) -> list[WatchEvent]:
        with self._lock:
            compacted = self._db.execute("SELECT compacted FROM meta WHERE id = 1").fetchone()[0]
            if since < compacted:
                raise StoreGone(f"resourceVersion {since} is too old: history starts after {compacted}; list again, then watch")
            rows = self._db.execute("SELECT rv, type, kind, key, body FROM events WHERE rv > ? ORDER BY rv", (since,)).fetchall()
        return [WatchEvent(rv, change, kind, key, json.loads(body)) for rv, change, kind, key, body in rows if kinds is None or kind in kinds]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _match(labels: dict, selector: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())
