"""``SqlStore``: the store on SQLAlchemy Core, one implementation for SQLite and PostgreSQL.

Why Core and not an ORM: the store is kind-agnostic (JSON bodies under a key), so there are
no classes to map; Core gives dialect-neutral SQL and leaves transactions in our hands.
Dialect specifics (how to open the file, ``BEGIN IMMEDIATE``, integrity checks) live with the
engine factory and a subclass (``lahar.store.sqlite``, ``lahar.store.postgres``), which fill in
the hooks ``_begin_open``, ``_check_file`` and ``_begin_write``; everything here is portable.

Tables (schema version ``SCHEMA_VERSION``, kept in ``meta``; their columns and upgrades are in
``lahar.store.schema``):

- ``objects(kind, key, namespace, name, resource_version, body)``, primary key ``(kind, key)``;
- ``events(resource_version, type, kind, key, body)``: the watch history, the last
  ``retention`` changes (older ones are deleted in batches as writes go on);
- ``meta``: one row with ``schema_version``, ``resource_version`` (the global counter, the
  version of the newest write) and ``compacted_version`` (history is kept after it).

Each write is one transaction: write the object row (compared with what is stored in the same
statement where it can be: an insert that a taken key refuses, an update at the version read),
append the event, move the counter in ``meta`` on, commit. A transaction reads the counter once
(its own reads of the version and of the compaction horizon use that read too) and writes it
once, however many writes it holds (a batch's writes each cost two statements, a
write alone four); a refused write takes no version. Writers are serialised from the start of their
transaction: in this process by a lock, across processes by the database (``BEGIN IMMEDIATE``
on SQLite; on PostgreSQL the ``meta`` row is locked when a write transaction begins, see
``_begin_write``). ``batch()`` makes many writes one transaction;
a write refused inside it (NotFound, Conflict, AlreadyExists) leaves the batch usable, a write
that fails part-way undoes the whole batch, and an inner ``batch()`` is a savepoint. Reads run in
a transaction of their own, so ``list`` returns items and version from the same snapshot.

Watch wakes in two ways: writers in this process notify a condition variable after they commit,
and watchers also poll the events table every ``poll_interval`` seconds (``POLL_INTERVAL`` on
SQLite), which is how they see writes made by other processes on the same database. PostgreSQL
adds a third: a listener woken by ``NOTIFY`` signals the same condition variable. Whatever wakes
a watcher, it reads the events table after its version: a wake-up carries no data.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from operator import itemgetter
from typing import Any, ContextManager

from sqlalchemy import (
    Connection,
    Engine,
    bindparam,
    delete,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.exc import DBAPIError

from lahar.errors import Conflict, LaharError, NotFound
from lahar.store.base import (
    DEFAULT_RETENTION,
    ChangeType,
    Keys,
    StoreError,
    WatchEvent,
    check_version,
    compaction_horizon,
    draw_again,
    from_json,
    gone,
    labels_match,
    name_draws,
    new_object,
    object_key,
    replacement,
    stored_namespace,
    to_json,
)
from lahar.store.driver import DriverStatements
from lahar.store.schema import EVENTS, META, OBJECTS, SCHEMA, SCHEMA_VERSION, migrate

__all__ = ["POLL_INTERVAL", "SCHEMA", "SCHEMA_VERSION", "WRITE_OPTION", "SqlStore"]

POLL_INTERVAL = 0.02
WRITE_OPTION = "lahar_write"  # execution option: this connection's transaction will write

# Statements are built once: SQLAlchemy then compiles each once per dialect, and a call costs
# little more than the driver's own execute.
_THE_OBJECT = (OBJECTS.c.kind == bindparam("k_kind")) & (OBJECTS.c.key == bindparam("k_key"))
_GET_BODY = select(OBJECTS.c.body).where(_THE_OBJECT)
_GET_VERSION = select(OBJECTS.c.resource_version).where(_THE_OBJECT)
_LIST = select(OBJECTS.c.key, OBJECTS.c.body).where(OBJECTS.c.kind == bindparam("k_kind"))
_LIST_IN_NAMESPACE = _LIST.where(OBJECTS.c.namespace == bindparam("k_namespace"))
# A new object's row, unless its key is taken (then no row changes: rowcount 0); the same
# words in SQLite (3.24 on) and PostgreSQL
_INSERT_NEW_OBJECT = text(
    "INSERT INTO objects (kind, key, namespace, name, resource_version, body) "
    "VALUES (:kind, :key, :namespace, :name, :resource_version, :body) "
    "ON CONFLICT (kind, key) DO NOTHING"
)
_REPLACE_OBJECT = (
    update(OBJECTS)
    .where(_THE_OBJECT)
    .values(resource_version=bindparam("new_version"), body=bindparam("new_body"))
)
# The same, only over the version the writer read (compare and swap: rowcount 0 otherwise)
_REPLACE_OBJECT_AT = _REPLACE_OBJECT.where(OBJECTS.c.resource_version == bindparam("k_version"))
_DELETE_OBJECT = delete(OBJECTS).where(_THE_OBJECT)
_CURRENT = select(META.c.resource_version)
_COMPACTED = select(META.c.compacted_version)
_META = select(META.c.resource_version, META.c.compacted_version)
_SET_META = (
    update(META)
    .where(META.c.id == 1)
    .values(resource_version=bindparam("version"), compacted_version=bindparam("compacted"))
)
_INSERT_EVENT = insert(EVENTS)
_COMPACT_EVENTS = delete(EVENTS).where(EVENTS.c.resource_version <= bindparam("horizon"))
_EVENTS_AFTER = (
    select(EVENTS)
    .where(EVENTS.c.resource_version > bindparam("since"))
    .order_by(EVENTS.c.resource_version)
)


# A write transaction's ``[version, compacted, version read]`` (``SqlStore._meta``)
_Meta = list[int]

# ``delete_many`` reads the bodies of at most this many keys a statement; a shorter list is
# padded to a power of two (its last key again), so that few statements are ever compiled
_KEYS_A_STATEMENT = 256


@functools.lru_cache(maxsize=16)
def _bodies_of_keys(count: int):
    """Rows ``(key, body)`` of kind ``k_kind`` among keys ``key0`` ... ``key{count-1}``."""
    return select(OBJECTS.c.key, OBJECTS.c.body).where(
        (OBJECTS.c.kind == bindparam("k_kind"))
        & OBJECTS.c.key.in_([bindparam(f"key{i}") for i in range(count)])
    )


def _padded(keys: list[str]) -> dict[str, str]:
    """``key0`` ... for ``_bodies_of_keys``: the keys, then the last again up to a power of two."""
    size = 1 << (len(keys) - 1).bit_length()
    return {f"key{i}": keys[min(i, len(keys) - 1)] for i in range(size)}


@functools.lru_cache(maxsize=16)
def _events_of_kinds_after(count: int):
    """Changes of ``count`` kinds after ``since``: parameters ``kind0`` ... ``kind{count-1}``
    (one statement per count, so that each compiles once)."""
    return _EVENTS_AFTER.where(EVENTS.c.kind.in_([bindparam(f"kind{i}") for i in range(count)]))


class SqlStore:
    """The store over a SQLAlchemy ``Engine``; ``where`` names the database in error messages.

    Opening creates the schema in an empty database, upgrades an older one, and refuses (with
    ``StoreError``) a database that is not Lahar's or was written by a newer Lahar.
    """

    # Execution options of a connection whose transaction will write (dialects may add some).
    WRITE_OPTIONS: dict = {WRITE_OPTION: True}
    # Whether write transactions keep one connection of their own between them (they are
    # serialised in the process anyway): no pool checkout, reset and check-in per write. Only
    # where a connection cannot be dropped by a server (SQLite); elsewhere the pool checks
    # each connection it hands out.
    KEEP_WRITE_CONNECTION = False
    # A commit costs a disk sync (or a round trip): the server's writer commits write requests
    # that queue up together in one transaction (``lahar.server.write_groups``).
    COMMIT_SYNCS = True
    poll_interval = POLL_INTERVAL

    def __init__(
        self,
        engine: Engine,
        *,
        where: str,
        retention: int = DEFAULT_RETENTION,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 5.0,
    ) -> None:
        self.engine, self.where = engine, where
        self.retention, self.clock, self.busy_timeout = max(1, retention), clock, busy_timeout
        self._writer = (
            threading.RLock()
        )  # one writer per process; other processes wait in the database
        self._local = threading.local()  # .conn: this thread's open write transaction (in a batch)
        self._kept: Connection | None = None  # the kept write connection (under self._writer)
        self._changed = threading.Condition()
        self._generation = 0  # bumped after every local commit
        self._closed = False
        self._driver_error = engine.dialect.loaded_dbapi.Error
        self._driver = DriverStatements(engine.dialect)
        try:
            self._open()
        except BaseException:
            engine.dispose()
            raise

    # ----------------------------------------------------------------- opening

    def _open(self) -> None:
        with self._errors("open the database"), self._connect(write=True) as conn, conn.begin():
            self._begin_open(conn)
            self._check_file(conn)
            found = self._schema_version(conn)
            if found is None:
                SCHEMA.create_all(conn)
                conn.execute(
                    insert(META).values(
                        id=1, schema_version=SCHEMA_VERSION, resource_version=0, compacted_version=0
                    )
                )
            elif found > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.where}: the database was written by a newer Lahar "
                    f"(schema version {found}; "
                    f"this Lahar knows up to {SCHEMA_VERSION}); upgrade Lahar to use it"
                )
            elif found < SCHEMA_VERSION:
                migrate(conn, found, SCHEMA_VERSION, self.where)

    def _begin_open(self, conn: Connection) -> None:
        """Dialect hook: serialise openers (several servers starting on one empty database)."""

    def _check_file(self, conn: Connection) -> None:
        """Dialect hook: refuse a damaged database before touching it. Nothing to do in general."""

    def _begin_write(self, conn: Connection) -> None:
        """Dialect hook, first statement of every write transaction: take the database's write
        lock if ``BEGIN`` did not (SQLite's ``BEGIN IMMEDIATE`` does; nothing to do then)."""

    def _schema_version(self, conn: Connection) -> int | None:
        """The database's schema version, None if it is empty. Refuses anybody else's database."""
        tables = set(inspect(conn).get_table_names())
        if not tables:
            return None
        foreign = StoreError(
            f"{self.where}: this is not a Lahar database "
            f"(it holds the tables {', '.join(sorted(tables))}); "
            "it was left untouched: choose another database"
        )
        if "meta" not in tables:
            raise foreign
        try:
            found = conn.execute(
                select(META.c.schema_version).where(META.c.id == 1)
            ).scalar_one_or_none()
        except DBAPIError:
            raise foreign from None
        if not isinstance(found, int):
            raise foreign
        return found

    # ----------------------------------------------------------------- transactions

    def _connect(self, write: bool = False) -> Connection:
        if self._closed:
            raise StoreError(f"{self.where}: the store is closed")
        conn = self.engine.connect()
        if write:
            conn.execution_options(**self.WRITE_OPTIONS)
        return conn

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """Database failures become one ``StoreError`` that names the database and the cause."""
        try:
            yield
        except (DBAPIError, self._driver_error) as exc:
            raise self._failure(doing, exc) from exc

    def _failure(self, doing: str, exc: BaseException) -> StoreError:
        """The ``StoreError`` for a database failure while ``doing``: the database and the cause."""
        return StoreError(f"{self.where}: cannot {doing}: {_cause(exc, self.busy_timeout)}")

    def _reading(self) -> ContextManager[Connection]:
        """A consistent snapshot; in this thread's batch, the batch (which sees its own writes),
        taken through ``_HeldRead``: a request reads its admission view and the store's version
        inside its write group's batch, and two generator context managers per read cost more
        than the driver's work."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            return _HeldRead(self, held)
        return self._new_read()

    @contextmanager
    def _new_read(self) -> Iterator[Connection]:
        with self._errors("read"), self._connect() as conn, conn.begin():
            yield conn

    def _writing(self) -> ContextManager[Connection]:
        """This thread's write transaction: a new one, or its open batch's.

        A write inside a batch takes no savepoint of its own: a refused write (NotFound,
        Conflict, AlreadyExists) is refused by a read, or by the row's own statement changing
        no row, before anything changed, so it leaves nothing to undo. A write that fails
        part-way (a database error, or any error once it has begun changing rows) dooms its
        batch instead: the batch is undone when it ends, never committed with half a write in
        it. Inside a batch (every write of a tick or of a group of requests) that is a plain
        object, ``_HeldWrite``: two generator context managers per write cost more than the
        rest of its Python.
        """
        held = getattr(self._local, "conn", None)
        if held is not None:
            return _HeldWrite(self, held)
        return self._new_write()

    @contextmanager
    def _new_write(self) -> Iterator[Connection]:
        """A write transaction of its own (no batch is open in this thread)."""
        if not self._writer.acquire(timeout=self.busy_timeout):
            raise StoreError(
                f"{self.where}: cannot write: another writer in this process "
                f"held the database for over {self.busy_timeout:g} s"
            )
        try:
            with self._errors("write"), self._write_connection() as conn, conn.begin():
                self._begin_write(conn)
                self._local.conn, self._local.doomed, self._local.meta = conn, False, None
                try:
                    yield conn
                    if self._local.doomed:
                        raise StoreError(f"{self.where}: a write failed part-way, so the whole batch was undone")
                    self._save_meta(conn)
                finally:
                    self._local.conn = self._local.meta = None
        finally:
            self._writer.release()
        self._signal()

    @contextmanager
    def _write_connection(self) -> Iterator[Connection]:
        """A connection for one write transaction (the caller holds ``self._writer``): the kept
        one where the dialect keeps one, dropped after any failure that is not Lahar's own
        refusal (a refusal leaves it as good as new once its transaction is rolled back)."""
        if not self.KEEP_WRITE_CONNECTION:
            with self._connect(write=True) as conn:
                yield conn
            return
        if self._kept is None or self._closed:
            self._drop_kept()
            self._kept = self._connect(write=True)  # raises once the store is closed
        try:
            yield self._kept
        except LaharError:
            raise
        except BaseException:
            self._drop_kept()
            raise

    def _drop_kept(self) -> None:
        kept, self._kept = self._kept, None
        if kept is not None:
            try:
                kept.close()
            except Exception:  # noqa: BLE001 - a broken connection is discarded by the pool
                pass

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every write inside is one transaction, one disk sync: all of them are kept, or none.

        Re-entrant: an inner batch is a savepoint, undone alone if it raises. Other threads'
        writes wait for it; other threads' reads see the state before it until it commits.
        """
        held = getattr(self._local, "conn", None)
        if held is None:
            with self._writing():
                yield
            return
        doomed, meta = self._local.doomed, self._local.meta
        saved = None if meta is None else meta.copy()
        plain = self._driver.plain
        with self._errors("write"):
            plain(held, "SAVEPOINT lahar_batch")
            try:
                yield
            except BaseException:
                try:
                    plain(held, "ROLLBACK TO SAVEPOINT lahar_batch")
                except BaseException:
                    self._local.doomed = True  # the inner writes stand: the batch must not commit
                    raise
                self._local.doomed = doomed  # what failed inside is undone
                self._local.meta = saved  # and so are its versions
                plain(held, "RELEASE SAVEPOINT lahar_batch")
                raise
            plain(held, "RELEASE SAVEPOINT lahar_batch")

    # ----------------------------------------------------------------- the counter

    def _meta(self, conn: Connection) -> _Meta:
        """This transaction's counter, compaction horizon and counter as read,
        ``[version, compacted, version read]``: read from ``meta`` at its first read or write, kept
        here until it commits (``_save_meta``); an undone inner batch puts back its copy."""
        meta = self._local.meta
        if meta is None:
            version, compacted = self._driver.one(conn, _META, {})
            meta = self._local.meta = [int(version), int(compacted), int(version)]
        return meta

    def _save_meta(self, conn: Connection) -> None:
        """Write the counter back once, before the transaction commits, if a write moved it."""
        meta = self._local.meta
        if meta is not None and meta[0] != meta[2]:
            self._driver.run(conn, _SET_META, {"version": meta[0], "compacted": meta[1]})

    def _held_meta(self) -> _Meta | None:
        """The counter of this thread's open write transaction (None outside one): what its own
        reads must see, as ``meta`` holds the value from before the transaction until it commits.
        Read from ``meta`` at the transaction's first need (``_meta``), a read's or a write's, and
        kept: the transaction holds the database's write lock from its start (see the module's
        docstring), so the row cannot move meanwhile. A write request reads the version and the
        compaction horizon (its admission view's watch) before its write: one statement, not three."""
        held = getattr(self._local, "conn", None)
        if held is None:
            return None
        with _HeldRead(self, held) as conn:
            return self._meta(conn)

    def _signal(self) -> None:
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    # ----------------------------------------------------------------- reads

    def current_version(self) -> int:
        held = self._held_meta()
        if held is not None:
            return held[0]
        with self._reading() as conn:  # the driver's cursor: asked before every watch of a request
            (version,) = self._driver.one(conn, _CURRENT, {})
        return int(version)

    def get(self, kind: str, key: str) -> dict:
        with self._reading() as conn:  # the driver's cursor: a request's token is read on every call
            return self._stored(conn, kind, key)

    def list(
        self, kind: str, namespace: str | None = None, label_selector: dict[str, str] | None = None
    ) -> tuple[list[dict], int]:
        """Objects of ``kind`` sorted by key, and the version they are current at."""
        query, params = _LIST, {"k_kind": kind}
        if namespace is not None:
            query, params = _LIST_IN_NAMESPACE, {**params, "k_namespace": namespace}
        with self._reading() as conn:  # the driver's cursor: a list may be of 100,000 objects
            rows = self._driver.all(conn, query, params)
            held = self._held_meta()
            (version,) = self._driver.one(conn, _CURRENT, {}) if held is None else held[:1]
        rows.sort(key=itemgetter(0))  # here, not in SQL: collations differ between databases
        items = [from_json(body) for _, body in rows]
        return [obj for obj in items if labels_match(obj, label_selector)], int(version)

    def watch(
        self, since: int, kinds: set[str] | None = None, timeout: float = 0.0
    ) -> list[WatchEvent]:
        """Changes after ``since`` in order; waits up to ``timeout`` seconds for the first one.

        Inside a batch of the same thread only ``timeout=0`` makes sense (the batch holds the lock).
        """
        deadline = time.monotonic() + timeout
        while True:
            seen = self._generation
            found = self._changes_after(since, kinds)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0:
                return found
            with self._changed:
                if self._generation == seen:
                    self._changed.wait(min(remaining, self.poll_interval))

    def _changes_after(self, since: int, kinds: set[str] | None) -> list[WatchEvent]:
        params: dict = {"since": since}
        if kinds is None:
            query = _EVENTS_AFTER
        else:
            query = _events_of_kinds_after(len(kinds))
            params.update((f"kind{i}", kind) for i, kind in enumerate(sorted(kinds)))
        with self._reading() as conn:  # the driver's cursor: a watch runs on every request
            held = self._held_meta()
            (compacted,) = self._driver.one(conn, _COMPACTED, {}) if held is None else held[1:2]
            if since < compacted:
                raise gone(since, compacted)
            rows = self._driver.all(conn, query, params)
        return [
            WatchEvent(version, change, kind, key, from_json(body))
            for version, change, kind, key, body in rows
        ]

    # ----------------------------------------------------------------- writes

    def create(self, obj: dict, owned: bool = False) -> dict:
        draws = name_draws(obj)  # a drawn name found taken is drawn again
        body = new_object(obj, self.clock, owned)
        kind, key = object_key(body)
        with self._writing() as conn:
            while not self._write(conn, "ADDED", kind, key, body):
                draws, kind, key = draw_again(body, draws)
        return body

    def update(self, obj: dict, owned: bool = False) -> dict:
        kind, key = object_key(obj)
        wanted = (obj.get("metadata") or {}).get("resourceVersion")
        with self._writing() as conn:
            if owned and wanted not in (None, ""):  # the caller vouches for the rest: see Store
                if not self._write(conn, "MODIFIED", kind, key, obj, at=_as_version(wanted)):
                    check_version(kind, key, wanted, self._stored_version(conn, kind, key), "update")
                    raise Conflict(  # not met: check_version reads what the update compared with
                        f'cannot update {kind} "{key}" at resourceVersion {wanted}; read it again'
                    )
                return obj
            stored = self._stored(conn, kind, key)
            check_version(kind, key, wanted, stored, "update")
            body = replacement(obj, stored)
            self._write(conn, "MODIFIED", kind, key, body)
        return body

    def delete(self, kind: str, key: str, resource_version: str | None = None) -> dict:
        with self._writing() as conn:
            body = self._stored(conn, kind, key)
            check_version(kind, key, resource_version, body, "delete")
            self._write(conn, "DELETED", kind, key, body)
        return body

    def delete_many(self, kind: str, keys: Iterable[str]) -> Keys:
        """Every key's object, as ``delete`` without a version would, key by key in the order
        given (see ``Store.delete_many``); the statements run once for many keys, as the
        driver's ``executemany``: the event log drops hundreds of events a second on a busy
        server."""
        wanted = list(dict.fromkeys(keys))
        deleted: Keys = []
        if not wanted:
            return deleted
        with self._writing() as conn:
            for start in range(0, len(wanted), _KEYS_A_STATEMENT):
                deleted += self._delete_chunk(conn, kind, wanted[start : start + _KEYS_A_STATEMENT])
        return deleted

    def _delete_chunk(self, conn: Connection, kind: str, keys: Keys) -> Keys:
        """Delete those of ``keys`` that have an object: their rows, then their changes, each
        stamped with its own version. A failure dooms the batch, as in ``_write``."""
        padded = _padded(keys)
        found = dict(self._driver.all(conn, _bodies_of_keys(len(padded)), {"k_kind": kind, **padded}))
        meta = self._meta(conn)
        version, gone_keys, changes = meta[0], [], []
        for key in keys:
            doc = found.get(key)
            if doc is None:
                continue
            body = from_json(doc)
            version += 1
            body["metadata"]["resourceVersion"] = str(version)
            gone_keys.append(key)
            changes.append({"resource_version": version, "type": "DELETED", "kind": kind, "key": key, "body": to_json(body)})
        if not gone_keys:
            return []
        try:
            self._driver.each(conn, _DELETE_OBJECT, [{"k_kind": kind, "k_key": key} for key in gone_keys])
            self._driver.each(conn, _INSERT_EVENT, changes)
            self._advance(conn, meta, version)
        except BaseException:
            self._doom(conn)
            raise
        return gone_keys

    def _doom(self, conn: Connection) -> None:
        """A write failed once its statements began: rows may be half written, so the batch
        ``conn`` belongs to must not commit."""
        if getattr(self._local, "conn", None) is conn:
            self._local.doomed = True

    def _advance(self, conn: Connection, meta: _Meta, version: int) -> None:
        """The transaction's counter is now ``version``; the history older than the retention
        is dropped when a batch of it is due."""
        meta[0] = version
        horizon = compaction_horizon(meta[0], meta[1], self.retention)
        if horizon is not None:
            conn.execute(_COMPACT_EVENTS, {"horizon": horizon})
            meta[1] = horizon

    def _stored_version(self, conn: Connection, kind: str, key: str) -> dict:
        """The stored object's metadata as far as ``check_version`` reads it (no body is read)."""
        row = self._driver.one(conn, _GET_VERSION, {"k_kind": kind, "k_key": key})
        if row is None:
            raise NotFound(kind, key)
        return {"metadata": {"resourceVersion": str(row[0])}}

    def _stored(self, conn: Connection, kind: str, key: str) -> dict:
        row = self._driver.one(conn, _GET_BODY, {"k_kind": kind, "k_key": key})
        if row is None:
            raise NotFound(kind, key)
        return from_json(row[0])

    def _write(
        self, conn: Connection, change: ChangeType, kind: str, key: str, body: dict, at: int | None = None
    ) -> bool:
        """Stamp the next version on ``body``, write the row and the event, compact. False, with
        nothing changed and ``body`` as it was, when the row's statement changed nothing: a
        create whose key is taken, an update ``at`` a version the row no longer has. A write
        that fails part-way (any error once the row's statement ran) dooms its batch."""
        meta = self._meta(conn)
        version = meta[0] + 1
        stamped = body["metadata"]
        before = stamped.get("resourceVersion")
        stamped["resourceVersion"] = str(version)
        try:
            doc = to_json(body)
        except BaseException:  # not JSON data (BadRequest), or too deep to write
            _restore_version(stamped, before)
            raise
        try:
            if not self._write_row(conn, change, kind, key, body, doc, version, at):
                _restore_version(stamped, before)
                return False
            self._driver.run(
                conn,
                _INSERT_EVENT,
                {"resource_version": version, "type": change, "kind": kind, "key": key, "body": doc},
            )
            self._advance(conn, meta, version)
        except BaseException:
            self._doom(conn)
            raise
        return True

    def _write_row(
        self, conn: Connection, change: ChangeType, kind: str, key: str, body: dict, doc: str, version: int, at: int | None
    ) -> bool:
        """The object's row: False when the statement changed nothing (see ``_write``)."""
        driver = self._driver
        if change == "ADDED":
            row = {"kind": kind, "key": key, "namespace": stored_namespace(body), "name": body["metadata"]["name"]}
            return driver.count(conn, _INSERT_NEW_OBJECT, {**row, "resource_version": version, "body": doc}) == 1
        if change == "DELETED":
            driver.run(conn, _DELETE_OBJECT, {"k_kind": kind, "k_key": key})
            return True
        params = {"k_kind": kind, "k_key": key, "new_version": version, "new_body": doc}
        if at is None:
            driver.run(conn, _REPLACE_OBJECT, params)
            return True
        return driver.count(conn, _REPLACE_OBJECT_AT, {**params, "k_version": at}) == 1

    def close(self) -> None:
        """Release the database (idempotent). Later calls raise ``StoreError``."""
        self._closed = True
        if self._writer.acquire(timeout=self.busy_timeout):  # not under a writer's feet
            try:
                self._drop_kept()
            finally:
                self._writer.release()
        self.engine.dispose()


class _HeldRead:
    """A read inside this thread's open batch (``SqlStore._reading``): its connection; a
    database failure becomes a ``StoreError`` (as ``_errors`` words it). A read changes nothing,
    so unlike a write it does not doom the batch."""

    __slots__ = ("store", "conn")

    def __init__(self, store: SqlStore, conn: Connection) -> None:
        self.store, self.conn = store, conn

    def __enter__(self) -> Connection:
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, trace: Any) -> None:
        if exc is not None and isinstance(exc, (DBAPIError, self.store._driver_error)):
            raise self.store._failure("read", exc) from exc


class _HeldWrite(_HeldRead):
    """A write inside this thread's open batch (``SqlStore._writing``): its connection; a
    database failure becomes a ``StoreError`` (as ``_errors`` words it), and any ``StoreError``
    dooms the batch."""

    __slots__ = ()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, trace: Any) -> None:
        if exc is None:
            return
        store = self.store
        if isinstance(exc, (DBAPIError, store._driver_error)):
            store._local.doomed = True
            raise store._failure("write", exc) from exc
        if isinstance(exc, StoreError):
            store._local.doomed = True


def _as_version(wanted: object) -> int:
    """A resource version as the counter writes it (``str(n)``) as that number; -1, which no
    row has, for anything else (as ``check_version`` compares the texts)."""
    if isinstance(wanted, int) and not isinstance(wanted, bool):
        return wanted if 0 <= wanted < 2**63 else -1
    text = str(wanted)
    if text.isascii() and text.isdigit() and len(text) < 19 and text == str(int(text)):
        return int(text)
    return -1


def _restore_version(metadata: dict, before: str | None) -> None:
    """Give a refused write's object back its own ``resourceVersion`` (or none)."""
    if before is None:
        metadata.pop("resourceVersion", None)
    else:
        metadata["resourceVersion"] = before


def _cause(exc: BaseException, busy_timeout: float) -> str:
    detail = str(getattr(exc, "orig", None) or exc).strip()
    if "lock timeout" in detail:
        return (
            f"another writer held the database for over {busy_timeout:g} s ({detail}); "
            "is a client holding a transaction open?"
        )
    if "locked" in detail or "busy" in detail:
        return (
            f"the database is locked by another process (waited {busy_timeout:g} s): "
            f"{detail}; is another Lahar using it?"
        )
    if "not a database" in detail or "malformed" in detail or "corrupt" in detail:
        return (
            f"the file is damaged or is not a database ({detail}); it was left untouched: "
            "restore a backup or choose another database"
        )
    return detail
