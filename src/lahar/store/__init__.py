"""Persistence: one narrow store protocol, and the backends behind it (see docs/store.md).

Why a package: the API server, the control loop and the CLI depend on ``Store`` only, and pick
a backend once with ``open_store(url)``:

- ``memory://``: ``MemoryStore``, nothing on disk (tests, demos);
- a file path or ``sqlite:///path``: ``SqliteStore``, the embedded default (a ``SqlStore``);
- ``postgresql://user:password@host:port/database``: ``PostgresStore`` (psycopg 3), one database
  shared by several servers (also ``postgres://``).

The default database is ``~/.lahar/lahar.db``, or ``$LAHAR_HOME/lahar.db`` when set.
"""

from __future__ import annotations

import os
from pathlib import Path

from lahar.store.base import DEFAULT_RETENTION, Store, StoreError, StoreGone, WatchEvent, object_key
from lahar.store.memory import MemoryStore
from lahar.store.postgres import PostgresStore, is_postgres_url
from lahar.store.sql import SCHEMA_VERSION, SqlStore
from lahar.store.sqlite import SqliteStore

__all__ = [
    "DEFAULT_RETENTION",
    "SCHEMA_VERSION",
    "MemoryStore",
    "PostgresStore",
    "SqlStore",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreGone",
    "WatchEvent",
    "default_db_path",
    "lahar_home",
    "object_key",
    "open_store",
]


def lahar_home() -> Path:
    """Where Lahar keeps its files: ``$LAHAR_HOME``, else ``~/.lahar``."""
    return Path(os.environ.get("LAHAR_HOME") or Path.home() / ".lahar").expanduser()


def default_db_path() -> Path:
    return lahar_home() / "lahar.db"


def open_store(url: str | Path | None = None) -> Store:
    """The store named by ``url``; the default is the SQLite file at ``default_db_path()``.

    ``sqlite:///relative/path`` and ``sqlite:////absolute/path`` follow SQLAlchemy's spelling.
    Raises ``StoreError`` for a URL it cannot serve, or a database it cannot use.
    """
    url = str(url or default_db_path())
    if url.startswith("memory://"):
        return MemoryStore()
    if is_postgres_url(url) or url.lower().startswith("postgresql+"):
        return PostgresStore(url)
    if url.startswith("sqlite:///"):
        return SqliteStore(url[len("sqlite:///") :])
    if "://" in url:
        raise StoreError(
            f'unsupported database URL "{url.split("://", 1)[0]}://...": use a file path, '
            "sqlite:///path, postgresql://user@host/database or memory://"
        )
    return SqliteStore(url)
