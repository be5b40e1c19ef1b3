"""The SQL store's tables (schema version ``SCHEMA_VERSION``) and the upgrades from older ones.

``SqlStore`` (``lahar.store.sql``) describes what each table holds and how writes use them;
here are their columns, and ``migrate``, which upgrades a database written by an older Lahar
inside the transaction that opens it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Connection,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    insert,
    text,
    update,
)

from lahar.store.base import StoreError

__all__ = ["SCHEMA", "SCHEMA_VERSION", "META", "OBJECTS", "EVENTS", "migrate"]

SCHEMA_VERSION = 2

_VERSION = BigInteger().with_variant(Integer, "sqlite")  # INTEGER PRIMARY KEY is SQLite's rowid
SCHEMA = MetaData()
META = Table(
    "meta",
    SCHEMA,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("schema_version", Integer, nullable=False),
    Column("resource_version", _VERSION, nullable=False),
    Column("compacted_version", _VERSION, nullable=False),
    CheckConstraint("id = 1", name="meta_one_row"),
)
OBJECTS = Table(
    "objects",
    SCHEMA,
    Column("kind", String, nullable=False),
    Column("key", String, nullable=False),
    Column("namespace", String),
    Column("name", String, nullable=False),
    Column("resource_version", _VERSION, nullable=False),
    Column("body", Text, nullable=False),
    PrimaryKeyConstraint("kind", "key", name="objects_kind_key"),
)
EVENTS = Table(
    "events",
    SCHEMA,
    Column("resource_version", _VERSION, primary_key=True, autoincrement=False),
    Column("type", String, nullable=False),
    Column("kind", String, nullable=False),
    Column("key", String, nullable=False),
    Column("body", Text, nullable=False),
)


# --------------------------------------------------------------------------- schema upgrades


def migrate(conn: Connection, found: int, target: int, where: str) -> None:
    """Upgrade, inside the opening transaction, from schema ``found`` to ``target`` (the store's
    ``SCHEMA_VERSION``), one step of ``_UPGRADES`` per version."""
    for version in range(found, target):
        step = _UPGRADES.get(version)
        if step is None:
            raise StoreError(
                f"{where}: unknown schema version {found}; "
                f"this Lahar reads versions 1 to {target}"
            )
        step(conn)
    conn.execute(update(META).where(META.c.id == 1).values(schema_version=target))


def _from_v1(conn: Connection) -> None:
    """v1 (the first SQLite store): columns ``rv``, ``version``, ``compacted``, no ``name``."""
    for table in ("meta", "objects", "events"):
        conn.execute(text(f"ALTER TABLE {table} RENAME TO {table}_v1"))
    SCHEMA.create_all(conn)
    version, compacted = conn.execute(
        text("SELECT version, compacted FROM meta_v1 WHERE id = 1")
    ).one()
    conn.execute(
        insert(META).values(
            id=1, schema_version=2, resource_version=version, compacted_version=compacted
        )
    )
    rows = conn.execute(text("SELECT kind, key, namespace, rv, body FROM objects_v1")).all()
    if rows:
        conn.execute(
            insert(OBJECTS),
            [
                {
                    "kind": k,
                    "key": key,
                    "namespace": ns,
                    "name": json.loads(body)["metadata"]["name"],
                    "resource_version": rv,
                    "body": body,
                }
                for k, key, ns, rv, body in rows
            ],
        )
    conn.execute(
        text(
            "INSERT INTO events (resource_version, type, kind, key, body) "
            "SELECT rv, type, kind, key, body FROM events_v1"
        )
    )
    for table in ("meta", "objects", "events"):
        conn.execute(text(f"DROP TABLE {table}_v1"))


_UPGRADES: dict[int, Callable[[Connection], None]] = {1: _from_v1}
