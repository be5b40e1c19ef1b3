"""Persistence: one store protocol, backends for memory and SQLite (PostgreSQL in its own module).

``open_store(url)`` picks the backend: ``memory://``, a file path or ``sqlite:///path``, or
``postgresql://...``. The default database is ``~/.lahar/lahar.db`` (``$LAHAR_HOME/lahar.db``).
"""

from __future__ import annotations

import os
from pathlib import Path

from lahar.store.base import Store, StoreError, StoreGone, WatchEvent, object_key
from lahar.store.memory import MemoryStore
from lahar.store.sqlite import SqliteStore

__all__ = ["Store", "StoreError", "StoreGone", "WatchEvent", "MemoryStore", "SqliteStore", "open_store", "default_db_path", "lahar_home", "object_key"]


def lahar_home() -> Path:
    return Path(os.environ.get("LAHAR_HOME") or Path.home() / ".lahar")


def default_db_path() -> Path:
    return lahar_home() / "lahar.db"


def open_store(url: str | None = None):
    """The store named by ``url`` (default: the SQLite file in Lahar's home directory)."""
    url = url or str(default_db_path())
    if url.startswith("memory://"):
        return MemoryStore()
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        from lahar.store.postgres import PostgresStore

        return PostgresStore(url)
    if url.startswith("sqlite:///"):
        url = url[len("sqlite:///") :]
    elif "://" in url:
        raise StoreError(f'unsupported database URL "{url}": use a file path, sqlite:///path, memory:// or postgresql://...')
    return SqliteStore(url)
